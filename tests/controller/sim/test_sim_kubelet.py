"""The simulator's kubelet when another writer gets in first, as on a real API server
(where it also runs: joiner.testing.kubelets)."""

from __future__ import annotations

from typing import Any

from joiner.api.conditions import is_true
from joiner.clock import FakeClock
from joiner.controllers.runtime import Result
from joiner.kube.memory import MemoryKube
from joiner.sim.kubelet import Kubelet


class NodeLifecycleFirst(MemoryKube):
    """A store where, once, another controller updates the Node between the kubelet's
    read and its status write (the node lifecycle controller tainting it, say)."""

    interleaved = False

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "Node" and not self.interleaved:
            self.interleaved = True
            node = self.get("Node", obj["metadata"]["name"])
            node["metadata"].setdefault("labels", {})["touched"] = "true"
            self.update(node)
        return super().update_status(obj)


def test_a_conflicting_write_is_read_again_and_redone() -> None:
    clock = FakeClock(0.0)
    kube = NodeLifecycleFirst(clock)
    kubelet = Kubelet(kube, clock, lambda _: True, 0.0, 0.0, "us-east-1", lambda *_: None)
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        }
    )
    assert kubelet.reconcile("ready/n1") == Result(requeue_after=0.0)
    assert not is_true(kube.get("Node", "n1")["status"]["conditions"], "Ready")
    assert kubelet.reconcile("ready/n1") == Result()
    node = kube.get("Node", "n1")
    assert is_true(node["status"]["conditions"], "Ready")
    assert node["metadata"]["labels"] == {"touched": "true"}  # the other write stands
