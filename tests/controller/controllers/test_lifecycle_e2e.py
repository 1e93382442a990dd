"""Launch failures and liveness [LIFE-1, LAUNCH-6]: an insufficient-capacity launch deletes
the NodeClaim and the pods are provisioned from other offerings; a NodeClaim whose Node
never registers is deleted after 15 minutes, one never launched after 5."""

from __future__ import annotations

from ctl_harness import ZONE_A, ZONE_B, Harness, pending_pod
from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.cloudprovider.types import CloudProviderError
from joiner.kube.controllermanager import NODE_LIFECYCLE_DELAY
from joiner.testing import capacity_types, ec2nodeclass, nodepool


def _pool(name: str, capacity_type: str, weight: int) -> dict:
    return nodepool(name, requirements=[capacity_types(capacity_type)], weight=weight)


def test_insufficient_capacity_reprovisions_on_another_offering():
    h = Harness()
    h.install(ec2nodeclass(), _pool("spot", "spot", 100), _pool("ondemand", "on-demand", 10))
    h.cloud.no_capacity = {(t, ZONE_A, "spot") for t in ("small", "medium", "large")}
    h.create_unschedulable(pending_pod("p0", "1500m"))
    h.advance(1)

    # The spot pool's NodeClaim failed to launch and is gone.
    failed = [name for kind, name, reason in h.events() if reason == "LaunchFailed"]
    assert len(failed) == 1 and failed[0].startswith("spot-")
    assert [c.metadata["labels"][wk.NODEPOOL] for c in h.cloud.create_calls] == ["spot"]
    assert set(h.cloud.insufficient_capacity) == h.cloud.no_capacity
    assert h.nodeclaims() == []

    h.advance(1)  # the pod is pending again: a new batch picks the on-demand pool
    [claim] = h.nodeclaims()
    labels = claim["metadata"]["labels"]
    assert claim["metadata"]["name"].startswith("ondemand-")
    assert (labels[wk.INSTANCE_TYPE], labels[wk.CAPACITY_TYPE], labels[wk.ZONE]) == (
        "small",
        "on-demand",
        ZONE_B,
    )
    assert [reason for _, name, reason in h.events() if name == "p0"] == [
        "Nominated",
        "Nominated",
    ]


def test_insufficient_capacity_is_remembered_for_three_minutes():
    h = Harness()
    h.install(ec2nodeclass(), _pool("spot", "spot", 100), _pool("ondemand", "on-demand", 10))
    h.cloud.no_capacity = {(t, ZONE_A, "spot") for t in ("small", "medium", "large")}
    h.create_unschedulable(pending_pod("p0", "1500m"))
    h.advance(2)
    h.cloud.no_capacity = set()  # capacity is back, but the cache still says no
    h.create_unschedulable(pending_pod("p1", "1500m"))
    h.advance(2)
    pools = [c["metadata"]["labels"][wk.NODEPOOL] for c in h.nodeclaims()]
    assert pools == ["ondemand", "ondemand"]

    h.advance(180)
    h.create_unschedulable(pending_pod("p2", "1500m"))
    h.advance(2)
    assert h.nodeclaims()[-1]["metadata"]["labels"][wk.NODEPOOL] == "spot"


def _one_claim(h: Harness) -> dict:
    """The NodeClaim created for one pending 1-CPU pod, a second later."""
    h.create_unschedulable(pending_pod("p0", "1"))
    h.advance(1)
    [claim] = h.nodeclaims()
    return claim


def test_nodeclaim_whose_node_never_registers_is_deleted_and_replaced():
    h = Harness()
    h.default_setup()
    claim = _one_claim(h)
    name = claim["metadata"]["name"]
    provider_id = claim["status"]["providerID"]

    h.advance(900)  # 15 minutes after creation: not yet over the limit
    assert [c["metadata"]["name"] for c in h.nodeclaims()] == [name]
    h.advance(5)  # the next registration check is past it
    assert h.events("RegistrationTimeout") == [("NodeClaim", name, "RegistrationTimeout")]
    assert provider_id not in h.cloud.instances  # its instance was terminated
    h.advance(10)
    [replacement] = h.nodeclaims()
    assert replacement["metadata"]["name"] != name
    assert replacement["metadata"]["labels"][wk.INSTANCE_TYPE] == "small"


class _FailingCloud:
    """Wraps the fake cloud so every launch fails with a retryable error."""

    def __init__(self, h: Harness) -> None:
        self._launch = h.cloud.create
        h.cloud.create = self.create  # type: ignore[method-assign]
        self.calls = 0

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        self.calls += 1
        raise CloudProviderError("RequestLimitExceeded")


def test_nodeclaim_never_launched_is_deleted_after_five_minutes():
    h = Harness()
    h.default_setup()
    failing = _FailingCloud(h)
    claim = _one_claim(h)
    name = claim["metadata"]["name"]
    h.advance(299)
    assert [c["metadata"]["name"] for c in h.nodeclaims()] == [name]
    assert failing.calls == 60  # retried every 5s
    h.advance(10)
    assert h.events("LaunchTimeout") == [("NodeClaim", name, "LaunchTimeout")]
    assert name not in [c["metadata"]["name"] for c in h.nodeclaims()]


def test_registration_and_initialization_leave_the_watched_node_object_as_it_was():
    """The controller writes changed copies; the state's object changes only when the
    watch delivers the new version."""
    h = Harness()
    h.default_setup()
    claim = _one_claim(h)
    name = claim["metadata"]["name"]
    node_name = h.register_node(name)
    h.operator.pump()  # the state sees the Node; no reconcile has run yet
    watched = h.operator.state.nodes[node_name]
    h.operator.lifecycle.reconcile(name)
    assert wk.NODE_REGISTERED not in watched["metadata"]["labels"]
    assert h.kube.get("Node", node_name)["metadata"]["labels"][wk.NODE_REGISTERED] == "true"
    h.set_node_ready(node_name)
    h.clock.advance(NODE_LIFECYCLE_DELAY)
    h.kube.run_controllers()  # the not-ready taint goes
    h.operator.pump()
    watched = h.operator.state.nodes[node_name]
    h.operator.lifecycle.reconcile(name)
    assert wk.NODE_INITIALIZED not in watched["metadata"]["labels"]
    assert h.kube.get("Node", node_name)["metadata"]["labels"][wk.NODE_INITIALIZED] == "true"
