"""Pod requests: containers, init containers, sidecars, overhead [SCHED-5]."""

from __future__ import annotations

from joiner.scheduling.model import ClusterSnapshot
from joiner.scheduling.pods import host_port_conflict, host_ports, pod_requests
from sched_builders import layout, pod, run


def _containers(*cpus: str) -> list[dict]:
    return [{"name": f"c{i}", "resources": {"requests": {"cpu": c}}} for i, c in enumerate(cpus)]


def test_requests_are_the_sum_of_containers_plus_one_pod():
    p = {"metadata": {"name": "p"}, "spec": {"containers": _containers("250m", "500m")}}
    assert pod_requests(p, {}) == {"cpu": 750, "pods": 1000}


def test_the_largest_init_container_wins_when_it_exceeds_the_containers():
    spec = {"containers": _containers("500m"), "initContainers": _containers("2", "1")}
    assert pod_requests({"spec": spec}, {})["cpu"] == 2000


def test_sidecar_init_containers_add_to_the_running_containers():
    sidecar = {
        "name": "proxy",
        "restartPolicy": "Always",
        "resources": {"requests": {"cpu": "100m"}},
    }
    spec = {"containers": _containers("500m"), "initContainers": [sidecar, *_containers("550m")]}
    # running: 500m + 100m sidecar; init peak: 550m + the 100m sidecar started before it
    assert pod_requests({"spec": spec}, {})["cpu"] == 650


def test_limits_stand_in_for_missing_requests():
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}
    assert pod_requests({"spec": spec}, {}) == {"cpu": 1000, "memory": 2**30 * 1000, "pods": 1000}


def test_pod_overhead_and_runtime_class_overhead_are_added():
    spec = {"containers": _containers("1"), "overhead": {"cpu": "250m"}}
    assert pod_requests({"spec": spec}, {})["cpu"] == 1250
    spec = {"containers": _containers("1"), "runtimeClassName": "kata"}
    assert pod_requests({"spec": spec}, {"kata": {"cpu": 500}})["cpu"] == 1500


def test_runtime_class_overhead_decides_the_instance_type():
    snapshot = ClusterSnapshot(runtime_classes={"kata": {"cpu": 500}})
    plan = run([pod("vm", cpu="1750m", runtimeClassName="kata")], snapshot=snapshot)
    assert layout(plan) == [("medium", ["vm"])]


def test_host_ports_and_conflicts():
    a = pod("a", ports=[{"containerPort": 80, "hostPort": 8080}])
    b = pod("b", ports=[{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"}])
    c = pod("c", ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}])
    assert host_ports(a) == {("0.0.0.0", "TCP", 8080)}
    assert host_port_conflict(host_ports(b), host_ports(a)) == ("10.0.0.1", "TCP", 8080)
    assert host_port_conflict(host_ports(c), host_ports(a)) is None
    d = pod("d", ports=[{"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.2"}])
    assert host_port_conflict(host_ports(d), host_ports(b)) is None


def test_host_network_makes_container_ports_host_ports():
    p = pod("dns", ports=[{"containerPort": 53, "protocol": "UDP"}], hostNetwork=True)
    assert host_ports(p) == {("0.0.0.0", "UDP", 53)}
    assert host_ports(pod("plain", ports=[{"containerPort": 53}])) == frozenset()
    plan = run([p, pod("dns2", ports=[{"containerPort": 53, "protocol": "UDP"}], hostNetwork=True)])
    assert layout(plan) == [("small", ["dns"]), ("small", ["dns2"])]
