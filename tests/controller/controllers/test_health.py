"""The node health controller [REPAIR]: which condition counts and when, the 20% guard's
rounding, and, on the envtest tier's real kube-apiserver, the writes of a repair (the
termination timestamp, the DisruptionReason, the deletion) and of a blocked one (the
NodeRepairBlocked events on the Node, the NodeClaim and the NodePool)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.conditions import FALSE, TRUE, get_condition, set_condition
from joiner.api.crds import render_crds
from joiner.clock import FakeClock, RealClock, from_rfc3339, to_rfc3339
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.cloudprovider.repairpolicies import EKS_REPAIR_POLICIES
from joiner.controllers.context import ControllerContext
from joiner.controllers.health import (
    BLOCKED_REQUEUE,
    NodeHealth,
    unhealthy_allowance,
    unhealthy_condition,
)
from joiner.events import EventRecorder
from joiner.kube.api import NotFound
from joiner.kube.http import HttpKube
from joiner.metrics import Metrics
from joiner.state.cluster import ClusterState
from joiner.testing.envtest import ControlPlane

UH = "Unhealthy"  # the NodePool condition while repair is blocked, and its reason
HOLD = "joiner.test/hold"  # keeps a deleted NodeClaim readable until the test lets it go


def _node(conditions: dict[str, tuple[str, float]]) -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"name": "n"}, "status": {"conditions": []}}
    for type_, (status, since) in conditions.items():
        set_condition(node["status"]["conditions"], type_, status, since)
    return node


def test_the_condition_whose_toleration_ends_first_is_the_one_that_counts() -> None:
    node = _node({"Ready": (FALSE, 0.0), "AcceleratedHardwareReady": (FALSE, 600.0)})
    found = unhealthy_condition(node, EKS_REPAIR_POLICIES)
    assert found is not None
    assert (found.condition, found.repair_at) == ("AcceleratedHardwareReady", 1200.0)


def test_healthy_conditions_and_conditions_no_policy_names_do_not_count() -> None:
    node = _node({"Ready": (TRUE, 0.0), "KernelReady": (TRUE, 0.0), "DiskPressure": (TRUE, 0.0)})
    assert unhealthy_condition(node, EKS_REPAIR_POLICIES) is None


@pytest.mark.parametrize(
    ("nodes", "allowed"), [(1, 1), (3, 1), (5, 1), (6, 2), (10, 2), (11, 3), (100, 20)]
)
def test_a_fifth_of_the_pool_rounded_up_may_be_unhealthy(nodes: int, allowed: int) -> None:
    assert unhealthy_allowance(nodes) == allowed


# --- on the real API server ------------------------------------------------------------


class Pool:
    """A NodePool of its own (cluster-scoped names are unique per test) whose NodeClaims
    and Nodes the test creates, and the health controller over a cluster state fed by
    hand, on a virtual clock set to now."""

    def __init__(self, kube: HttpKube) -> None:
        self.kube = kube
        self.name = f"repair-{uuid.uuid4().hex[:8]}"
        self.clock = FakeClock(RealClock().now())
        self.state = ClusterState(self.clock)
        self.metrics = Metrics()
        self.created: list[tuple[str, str]] = []
        self.state.apply("ADDED", self._create(testing.nodepool(self.name)))
        context = ControllerContext(
            kube,
            self.state,
            FakeCloudProvider([], self.clock),
            self.clock,
            EventRecorder(kube, self.clock),
            self.metrics,
        )
        self.health = NodeHealth(context)

    def _create(self, obj: dict[str, Any]) -> dict[str, Any]:
        created = self.kube.create(obj)
        self.created.append((obj["kind"], obj["metadata"]["name"]))
        return created

    def node(self, index: int, ready: str, since_minutes: float) -> str:
        """A launched NodeClaim and its Node whose Ready took ``ready`` that long ago."""
        name = f"{self.name}-{index}"
        manifest = testing.nodeclaim(name, nodepool=self.name)
        manifest["metadata"]["finalizers"] = [HOLD]
        claim = self._create(manifest)
        claim["status"] = {
            "providerID": f"aws:///us-east-1a/i-{self.name[7:]}{index:04d}",
            "nodeName": name,
            "imageID": "ami-0123456789abcdef0",
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
        }
        claim = self.kube.update_status(claim)
        node = testing.kubelet_node(claim, name)
        node["spec"]["taints"] = []
        since = self.clock.now() - since_minutes * 60
        set_condition(node["status"]["conditions"], "Ready", ready, since)
        node = self._create(node)
        node["status"] = {**node.get("status", {}), "conditions": []}
        set_condition(node["status"]["conditions"], "Ready", ready, since)
        node = self.kube.update_status(node)
        self.state.apply("ADDED", claim)
        self.state.apply("ADDED", node)
        return name

    def claim(self, name: str) -> dict[str, Any]:
        return self.kube.get("NodeClaim", name)

    def events(self, reason: str) -> set[tuple[str, str, str]]:
        names = {name for _, name in self.created}
        return {
            (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["message"])
            for e in self.kube.list("Event", namespace="default").items
            if e["reason"] == reason and e["involvedObject"]["name"] in names
        }

    def remove(self) -> None:
        for kind, name in reversed(self.created):
            try:
                obj = self.kube.get(kind, name)
            except NotFound:
                continue
            if obj["metadata"].get("finalizers"):
                obj["metadata"]["finalizers"] = []
                self.kube.update(obj)
            with contextlib.suppress(NotFound):
                self.kube.delete(kind, name)


@pytest.fixture
def pool(control_plane: ControlPlane) -> Iterator[Pool]:
    control_plane.install_crds(render_crds())
    kube = control_plane.admin_kube()
    created = Pool(kube)
    try:
        yield created
    finally:
        created.remove()
        kube.close()


def test_a_node_unhealthy_past_its_toleration_is_stamped_and_deleted(pool: Pool) -> None:
    healthy = [pool.node(i, TRUE, 60) for i in range(4)]
    sick = pool.node(9, FALSE, 31)

    assert pool.health.reconcile(sick).requeue_after is None

    claim = pool.claim(sick)
    stamp = claim["metadata"]["annotations"][wk.NODECLAIM_TERMINATION_TIMESTAMP]
    assert from_rfc3339(stamp) == pytest.approx(pool.clock.now(), abs=1)
    assert claim["metadata"]["deletionTimestamp"]
    reason = get_condition(claim["status"]["conditions"], nc.DISRUPTION_REASON)
    assert reason is not None and reason["reason"] == "Unhealthy"
    assert pool.events("DisruptionTerminating") == {
        ("NodeClaim", sick, "Disrupting NodeClaim: Unhealthy (Ready=False for longer than 30m)")
    }
    for name in healthy:
        assert not pool.claim(name)["metadata"].get("deletionTimestamp")
    sample = pool.metrics.nodeclaims_unhealthy_disrupted.labels(
        "Ready", pool.name, "", "ami-0123456789abcdef0"
    )
    assert sample._value.get() == 1


def test_a_node_within_its_toleration_is_looked_at_again_when_it_ends(pool: Pool) -> None:
    sick = pool.node(0, "Unknown", 29)
    result = pool.health.reconcile(sick)
    assert result.requeue_after == pytest.approx(60, abs=1)
    assert not pool.claim(sick)["metadata"].get("deletionTimestamp")


def test_more_than_a_fifth_of_the_pool_unhealthy_blocks_the_repair(pool: Pool) -> None:
    for i in range(3):
        pool.node(i, TRUE, 60)
    sick = [pool.node(7, FALSE, 31), pool.node(8, FALSE, 1)]  # 2 of 5: one is allowed

    assert pool.health.reconcile(sick[0]).requeue_after == BLOCKED_REQUEUE

    assert not pool.claim(sick[0])["metadata"].get("deletionTimestamp")
    message = f'more than 20% of nodes in nodepool "{pool.name}" are unhealthy'
    assert pool.events("NodeRepairBlocked") == {
        ("Node", sick[0], message),
        ("NodeClaim", sick[0], message),
        ("NodePool", pool.name, message),
    }
    assert pool.metrics.node_repair_blocked.labels(pool.name, "nodepool")._value.get() == 1
    unhealthy = get_condition(pool.kube.get("NodePool", pool.name)["status"]["conditions"], UH)
    assert unhealthy is not None
    assert (unhealthy["status"], unhealthy["reason"], unhealthy["message"]) == (TRUE, UH, message)


def test_the_pool_condition_goes_once_the_pool_is_back_under_a_fifth(pool: Pool) -> None:
    for i in range(3):
        pool.node(i, TRUE, 60)
    sick = [pool.node(7, FALSE, 31), pool.node(8, FALSE, 1)]
    pool.health.reconcile(sick[0])
    pool.state.apply("MODIFIED", pool.kube.get("NodePool", pool.name))  # the watch's copy
    recovered = pool.kube.get("Node", sick[1])
    set_condition(recovered["status"]["conditions"], "Ready", TRUE, pool.clock.now())
    pool.state.apply("MODIFIED", pool.kube.update_status(recovered))

    assert pool.health.reconcile(sick[1]).requeue_after is None  # healthy now: 1 of 5 left

    conditions = pool.kube.get("NodePool", pool.name)["status"].get("conditions") or []
    assert get_condition(conditions, UH) is None
    assert not pool.claim(sick[0])["metadata"].get("deletionTimestamp")  # not until a look


def test_a_nodeclaim_already_being_deleted_is_only_stamped(pool: Pool) -> None:
    """Something else deletes the claim of an unhealthy node (drift, a user): the stamp
    keeps its drain from holding the node."""
    sick = pool.node(0, FALSE, 45)
    pool.kube.delete("NodeClaim", sick)
    pool.state.apply("MODIFIED", pool.claim(sick))

    assert pool.health.reconcile(sick).requeue_after is None

    claim = pool.claim(sick)
    assert claim["metadata"]["annotations"][wk.NODECLAIM_TERMINATION_TIMESTAMP] == to_rfc3339(
        pool.clock.now()
    )
    assert get_condition(claim["status"].get("conditions"), nc.DISRUPTION_REASON) is None
