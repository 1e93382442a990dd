"""What the pods on a node occupy there, remembered across solves by pod identity."""

from __future__ import annotations

import copy

from joiner.scheduling.model import VolumeCatalog
from joiner.scheduling.occupancy import occupancy
from sched_builders import pod

NO_VOLUMES = VolumeCatalog()
ANTI_AFFINITY_TERM = {
    "labelSelector": {"matchLabels": {"app": "db"}},
    "topologyKey": "kubernetes.io/hostname",
}


def _daemon_pod(name: str, namespace: str, daemonset: str) -> dict:
    daemon = pod(name, cpu="50m", memory="", namespace=namespace)
    daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": daemonset}]
    return daemon


def test_sums_requests_and_collects_ports_daemonsets_and_anti_affinity() -> None:
    web = pod("web", cpu="500m", memory="1Gi", ports=[{"containerPort": 80, "hostPort": 8080}])
    db = pod("db", cpu="1", memory="", affinity={"podAntiAffinity": {}})
    db["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [
        ANTI_AFFINITY_TERM
    ]
    daemon = _daemon_pod("agent-x1", "kube-system", "agent")
    taken = occupancy([web, db, daemon], {}, NO_VOLUMES)
    assert taken.requests == {"cpu": 1550, "memory": 2**30 * 1000, "pods": 3000}
    assert taken.ports == frozenset({("0.0.0.0", "TCP", 8080)})
    assert taken.daemonsets == frozenset({"kube-system/agent"})
    assert taken.anti_affinity == (("default", ANTI_AFFINITY_TERM),)
    assert dict(taken.volumes) == {}


def test_the_same_pod_objects_give_the_remembered_occupancy() -> None:
    pods = [pod("a", cpu="1"), pod("b", cpu="2")]
    first = occupancy(pods, {}, NO_VOLUMES)
    assert occupancy(list(pods), {}, NO_VOLUMES) is first


def test_the_same_pod_list_gives_the_remembered_occupancy_whatever_its_slot() -> None:
    pods = (pod("a", cpu="1"), pod("b", cpu="2"))
    first = occupancy(pods, {}, NO_VOLUMES, slot=("solver", "n1"))
    assert occupancy(pods, {}, NO_VOLUMES, slot=("disruption", "n1")) is first
    assert occupancy(pods, {}, NO_VOLUMES).requests["cpu"] == 3000


def test_a_changed_pod_is_a_new_object_and_is_counted_afresh() -> None:
    pods = [pod("a", cpu="1"), pod("b", cpu="2")]
    assert occupancy(pods, {}, NO_VOLUMES).requests["cpu"] == 3000
    resized = copy.deepcopy(pods[1])
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    assert occupancy([pods[0], resized], {}, NO_VOLUMES).requests["cpu"] == 5000


def test_pods_with_a_runtime_class_follow_the_classes_given_each_time() -> None:
    pods = [pod("kata", cpu="1", runtimeClassName="kata")]
    assert occupancy(pods, {"kata": {"cpu": 100}}, NO_VOLUMES).requests["cpu"] == 1100
    assert occupancy(pods, {"kata": {"cpu": 300}}, NO_VOLUMES).requests["cpu"] == 1300


def test_pods_with_claims_follow_the_volume_catalog_given_each_time() -> None:
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    pods = [pod("db", volumes=volume)]
    bound = VolumeCatalog(
        claims={"default/data": {"spec": {"volumeName": "pv-1"}}},
        volumes={"pv-1": {"spec": {"csi": {"driver": "ebs.csi.aws.com"}}}},
    )
    assert dict(occupancy(pods, {}, NO_VOLUMES).volumes) == {}  # claim not known yet
    assert dict(occupancy(pods, {}, bound).volumes) == {
        "ebs.csi.aws.com": frozenset({"default/data"})
    }
