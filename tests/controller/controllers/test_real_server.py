"""The controller tolerates what a real kube-apiserver v1.36 does that an API server
written for it might not: the not-ready taint admission puts on every new Node,
pods marked for deletion (MODIFIED) before they go (DELETED), and the defaults the
server gives pods and NodePools. Each on the envtest tier's real server."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.conditions import TRUE, is_true, set_condition
from joiner.api.crds import render_crds
from joiner.api.nodepool import NodePool
from joiner.clock import FakeClock, RealClock
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.cloudprovider.types import Offering
from joiner.controllers.context import ControllerContext
from joiner.controllers.lifecycle import POLL, NodeClaimLifecycle
from joiner.controllers.runtime import DONE
from joiner.events import EventRecorder
from joiner.kube.http import HttpKube
from joiner.kube.memory import MemoryKube
from joiner.metrics import Metrics
from joiner.scheduling.solver import solve
from joiner.state.cluster import ClusterState
from joiner.state.feed import ThreadedFeed
from joiner.testing.envtest import ControlPlane
from joiner.testing.polling import wait_for

PROVIDER_ID = "aws:///us-east-1a/i-0123456789abcdef0"
NOT_READY = "node.kubernetes.io/not-ready"


@pytest.fixture(scope="module")
def bare_plane(envtest_assets: Path) -> Iterator[ControlPlane]:
    """A control plane of the module's own without kube-controller-manager: nothing takes
    the not-ready taint off a Node but the test (on a cluster the node lifecycle
    controller does, a moment after the Node is Ready)."""
    workdir = Path(tempfile.mkdtemp(prefix="joiner-bare-plane-"))
    plane = ControlPlane(envtest_assets, workdir).start()
    try:
        plane.install_crds(render_crds())
        yield plane
    finally:
        plane.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _registered_claim(kube: HttpKube, name: str) -> dict[str, Any]:
    created = kube.create(
        testing.nodeclaim(name, labels={wk.INSTANCE_TYPE: "m5.large", wk.NODEPOOL: "default"})
    )
    created["status"] = {
        "providerID": PROVIDER_ID,
        "nodeName": name,
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
        "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
        "conditions": [],
    }
    for condition in (nc.LAUNCHED, nc.REGISTERED):
        set_condition(created["status"]["conditions"], condition, TRUE, RealClock().now())
    return kube.update_status(created)


def _ready_node(kube: HttpKube, claim: dict[str, Any]) -> dict[str, Any]:
    node = testing.kubelet_node(claim, claim["metadata"]["name"])
    node["spec"]["taints"] = []  # registered: the controller took the unregistered one off
    set_condition(node["status"]["conditions"], "Ready", TRUE, RealClock().now())
    return kube.create(node)


def test_initialization_waits_for_the_node_lifecycle_controller_to_untaint_a_ready_node(
    bare_plane: ControlPlane,
) -> None:
    """A Ready Node still tainted not-ready takes no pods: the NodeClaim is not
    initialized until the taint is gone (before, it was, and the scheduler saw a node
    its pods could not use)."""
    kube = bare_plane.admin_kube()
    clock = RealClock()
    state = ClusterState(clock)
    claim = _registered_claim(kube, "init-claim")
    node = _ready_node(kube, claim)
    assert {"key": NOT_READY, "effect": "NoSchedule"} in node["spec"]["taints"]  # admission
    state.apply("ADDED", claim)
    state.apply("ADDED", node)
    context = ControllerContext(
        kube, state, FakeCloudProvider([]), clock, EventRecorder(kube, clock), Metrics()
    )
    lifecycle = NodeClaimLifecycle(context)
    assert lifecycle.reconcile("init-claim").requeue_after == POLL
    assert not is_true(kube.get("NodeClaim", "init-claim")["status"]["conditions"], "Initialized")
    node["spec"]["taints"] = []  # as the node lifecycle controller does once it is Ready
    state.apply("MODIFIED", kube.update(node))
    assert lifecycle.reconcile("init-claim") == DONE
    assert is_true(kube.get("NodeClaim", "init-claim")["status"]["conditions"], "Initialized")
    assert kube.get("Node", "init-claim")["metadata"]["labels"][wk.NODE_INITIALIZED] == "true"
    kube.close()


def test_the_cluster_state_follows_a_pod_marked_then_deleted(
    control_plane: ControlPlane, namespace: str
) -> None:
    """kube-apiserver marks every pod it deletes (MODIFIED, with a deletionTimestamp)
    before it goes (DELETED): the pod is never provisionable once marked, and gone after."""
    kube = control_plane.admin_kube()
    state = ClusterState(RealClock())
    seen: list[tuple[str, bool]] = []

    def handle(kind: str, event_type: str, pod: dict[str, Any]) -> None:
        if pod["metadata"]["namespace"] == namespace:
            state.apply(event_type, pod)
            deleting = bool(pod["metadata"].get("deletionTimestamp"))
            seen.append((event_type, deleting))
            assert not (deleting and pod in state.provisionable_pods())

    feed = ThreadedFeed(kube, ["Pod"], handle, lambda kind: None)
    feed.start()
    try:
        kube.create(testing.pod("web", cpu="100m", namespace=namespace))
        wait_for(lambda: feed.pump() >= 0 and seen == [("ADDED", False)], "the pod", 10.0)
        kube.delete("Pod", "web", namespace)
        wait_for(lambda: feed.pump() >= 0 and len(seen) == 3, "the deletion", 10.0)
    finally:
        feed.stop()
        kube.close()
    assert seen == [("ADDED", False), ("MODIFIED", True), ("DELETED", True)]
    assert [p for p in state.pods.values() if p["metadata"]["namespace"] == namespace] == []


def _catalogue() -> list[Any]:
    zone = "us-east-1a"
    return [
        new_instance_type(
            f"c-{cpu}x",
            cpu=str(cpu),
            memory=f"{2 * cpu}Gi",
            pods=20,
            offerings=[Offering(zone, "on-demand", 0.05 * cpu)],
        )
        for cpu in (2, 4, 8)
    ]


def test_scheduling_decides_the_same_on_a_pod_as_the_real_server_stored_it(
    control_plane: ControlPlane, namespace: str
) -> None:
    """Requests defaulted from limits, the not-ready and unreachable tolerations,
    priority, the scheduler name and the rest of the defaults change no decision."""
    kube = control_plane.admin_kube()
    written = testing.pod("web", namespace=namespace)
    written["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "3", "memory": "2Gi"}}
    stored = kube.create(written)
    kube.close()
    assert stored["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "3",
        "memory": "2Gi",
    }
    assert len(stored["spec"]["tolerations"]) == 2
    pools = [
        NodePool.from_dict(testing.nodepool(requirements=[testing.capacity_types("on-demand")]))
    ]

    def decided(pod: dict[str, Any]) -> list[tuple[str, list[str], dict[str, int]]]:
        plan = solve([pod], pools, {"default": _catalogue()})
        return [(c.nodepool, c.instance_types, c.requests) for c in plan.nodeclaims]

    assert decided(stored) == decided(written) != []


def test_a_nodepool_has_the_same_drift_hash_on_the_real_and_the_in_memory_server(
    control_plane: ControlPlane, namespace: str
) -> None:
    """Both servers default a NodePool alike, so what the simulator calls drifted is what
    a cluster would; a write that leaves the template alone changes no hash."""
    control_plane.install_crds(render_crds())
    manifest = testing.nodepool(
        f"pool-{namespace}"[:63], requirements=[testing.capacity_types("spot")]
    )
    kube = control_plane.admin_kube()
    try:
        real = kube.create(manifest)
        real["spec"]["weight"] = 10
        reweighted = kube.update(real)
    finally:
        kube.delete("NodePool", manifest["metadata"]["name"])
        kube.close()
    memory = MemoryKube(FakeClock()).create(manifest)
    expected = NodePool.from_dict(memory).template_hash()
    assert NodePool.from_dict(real).template_hash() == expected
    assert NodePool.from_dict(reweighted).template_hash() == expected
    assert real["spec"]["template"] == memory["spec"]["template"]
