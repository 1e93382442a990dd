"""The emulated kube-scheduler: a pod that does not fit is tried again only once its
backoff is over and something it depends on changed, its condition is rewritten only
when the message changes, and in a simulation every pending pod is written a bounded
number of times however many nodes join."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from joiner.clock import FakeClock
from joiner.controllers.runtime import DONE
from joiner.kube.memory import MemoryKube
from joiner.sim import kubescheduler
from joiner.sim.engine import Simulation
from joiner.sim.kubescheduler import KubeScheduler
from joiner.sim.podindex import PodIndex
from joiner.sim.scenario import load_scenario
from sim_builders import BASE_SCENARIO, to_text


class Cluster:
    """A memory API server, the scheduler, and the watch that feeds it (as the world's)."""

    def __init__(self) -> None:
        self.clock = FakeClock(0.0)
        self.kube = MemoryKube(self.clock)
        self.pods = PodIndex()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.scheduler = KubeScheduler(
            self.kube, self.clock, self.pods, lambda: [self.nodes[n] for n in sorted(self.nodes)]
        )
        self.node_watch = self.kube.watch("Node")
        self.pod_watch = self.kube.watch("Pod")
        self.woken: list[bool] = []  # what each event said about running a pass

    def pump(self) -> None:
        for event in self.node_watch.drain():
            name = event.object["metadata"]["name"]
            if event.type == "DELETED":
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = event.object
            self.woken.append(self.scheduler.on_node(event.type, event.object))
        for event in self.pod_watch.drain():
            self.pods.apply(event.type, event.object)
            self.woken.append(self.scheduler.on_pod(event.type, event.object))

    def run(self) -> float | None:
        """One pass; the delay it asks to be woken after (None: only by events)."""
        self.pump()
        result = self.scheduler.reconcile(kubescheduler.KEY)
        self.pump()
        return result.requeue_after

    def join(self, node: dict[str, Any]) -> None:
        """Create a Node and take off the not-ready taint the API server puts on it, as
        the node lifecycle controller does once the Node is Ready."""
        created = self.kube.create(node)
        created["spec"]["taints"] = [
            t for t in created["spec"]["taints"] if t["key"] != "node.kubernetes.io/not-ready"
        ]
        self.kube.update(created)

    def pod(self, name: str) -> dict[str, Any]:
        return self.kube.get("Pod", name, "default")

    def message(self, name: str) -> str:
        conditions = self.pod(name)["status"]["conditions"]
        return next(c["message"] for c in conditions if c["type"] == "PodScheduled")

    def version(self, name: str) -> str:
        return self.pod(name)["metadata"]["resourceVersion"]


def _pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec},
        "status": {"phase": "Pending"},
    }


def _node(name: str, cpu: str, zone: str = "zone-a") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


def test_a_pod_that_does_not_fit_is_not_tried_again_while_nothing_changes(cluster: Cluster):
    cluster.join(_node("n1", "1"))
    cluster.kube.create(_pod("big", "4"))
    assert cluster.run() is None
    assert cluster.message("big").startswith("0/1 nodes are available")
    version = cluster.version("big")
    cluster.clock.advance(600)
    assert cluster.run() is None
    assert cluster.version("big") == version


def test_after_a_node_joins_a_pod_is_tried_again_when_its_backoff_ends(cluster: Cluster):
    cluster.kube.create(_pod("big", "4"))
    cluster.run()  # first attempt at t=0: backoff 1 s
    assert cluster.message("big") == "no nodepool can launch nodes"
    cluster.clock.advance(0.5)
    cluster.join(_node("n1", "1"))
    version = cluster.version("big")
    assert cluster.run() == 0.5  # woken by the node, retried at the end of the backoff
    assert cluster.version("big") == version
    cluster.clock.advance(0.5)
    assert cluster.run() is None  # second attempt at t=1: backoff 2 s
    assert cluster.message("big").startswith("0/1 nodes are available")
    cluster.join(_node("n2", "2"))
    assert cluster.run() == 2.0
    cluster.clock.advance(2.0)
    cluster.join(_node("n3", "8"))
    cluster.run()
    assert cluster.pod("big")["spec"]["nodeName"] == "n3"


def test_backoff_doubles_up_to_ten_seconds(cluster: Cluster):
    cluster.kube.create(_pod("big", "4"))
    delays = []
    for index in range(6):
        cluster.run()
        cluster.join(_node(f"n{index}", "1"))
        delay = cluster.run()
        delays.append(delay)
        cluster.clock.advance(delay or 0.0)
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_an_unchanged_message_is_not_rewritten(cluster: Cluster):
    cluster.join(_node("n1", "1"))
    cluster.kube.create(_pod("big", "4"))
    cluster.run()
    version = cluster.version("big")
    node = cluster.kube.get("Node", "n1")
    node["status"]["allocatable"]["cpu"] = "2"  # still too small: the same message
    cluster.kube.update_status(node)
    cluster.clock.advance(1.0)
    cluster.run()
    assert cluster.version("big") == version


def test_node_updates_wake_it_only_when_they_change_what_it_reads(cluster: Cluster):
    cluster.join(_node("n1", "1"))
    cluster.kube.create(_pod("big", "4"))
    cluster.run()
    node = cluster.kube.get("Node", "n1")
    node["metadata"]["annotations"] = {"note": "nothing a pod cares about"}
    node = cluster.kube.update(node)
    cluster.woken.clear()
    cluster.pump()
    assert cluster.woken == [False]
    node["spec"]["taints"] = [{"key": "dedicated", "effect": "NoSchedule"}]
    cluster.kube.update(node)
    cluster.pump()
    assert cluster.woken == [False, True]


def test_pods_with_affinity_are_tried_again_when_a_pod_is_bound(cluster: Cluster):
    cluster.join(_node("n1", "8"))
    near_db = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    cluster.kube.create(_pod("web", "1", affinity=near_db))
    cluster.kube.create(_pod("big", "16"))  # fits nowhere, needs no other pod
    cluster.run()
    assert "nodeName" not in cluster.pod("web")["spec"]
    cluster.clock.advance(1.0)
    cluster.kube.create(_pod("db", "1", nodeName="n1"))
    cluster.woken.clear()
    cluster.pump()
    assert cluster.woken == [True]  # for web; big alone would not have been woken
    cluster.run()
    assert cluster.pod("web")["spec"]["nodeName"] == "n1"
    cluster.kube.create(_pod("cache", "1", nodeName="n1"))
    cluster.woken.clear()
    cluster.pump()
    assert cluster.woken == [False]  # only big waits, and a bound pod gives it no room


def test_room_freed_on_a_node_wakes_it(cluster: Cluster):
    cluster.join(_node("n1", "4"))
    cluster.kube.create(_pod("first", "3", nodeName="n1"))
    cluster.kube.create(_pod("second", "3"))
    cluster.run()
    assert "nodeName" not in cluster.pod("second")["spec"]
    cluster.clock.advance(1.0)
    cluster.kube.delete("Pod", "first", "default", grace_period_seconds=0)
    cluster.woken.clear()
    cluster.pump()
    assert cluster.woken == [False, True]  # terminating (still holds its room), then gone
    cluster.run()
    assert cluster.pod("second")["spec"]["nodeName"] == "n1"


def test_pending_pods_are_written_a_bounded_number_of_times_as_nodes_join():
    """300 pods on nodes that take 3 each: about 100 nodes join at the same instant.
    Each pod is marked Unschedulable when nothing runs yet, again when the nodes have
    registered (still not Ready), and set Running once: three writes, not one per node
    that joined (before: about 40,000 writes, one per pending pod and node)."""
    replicas = 300
    doc = copy.deepcopy(BASE_SCENARIO)
    spec = doc["spec"]
    spec["objects"][2]["spec"]["replicas"] = 0
    spec["steps"] = [
        {"scale": {"kind": "Deployment", "name": "app", "replicas": replicas}},
        {"settle": "10m"},
        {"expect": {"pendingPods": 0, "podsRunning": replicas}},
    ]
    simulation = Simulation(load_scenario(to_text(doc)))
    writes = 0
    update_status = simulation.kube.update_status

    def counting(obj: dict[str, Any]) -> dict[str, Any]:
        nonlocal writes
        writes += obj["kind"] == "Pod"
        return update_status(obj)

    simulation.kube.update_status = counting  # type: ignore[method-assign]
    result = simulation.run()
    assert result.failures == []
    assert len(result.final.nodes) == 100
    assert writes == 3 * replicas
    assert simulation.world.scheduler.reconcile(kubescheduler.KEY) == DONE
