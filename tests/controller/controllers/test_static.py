"""The static capacity controller [STATIC] against the memory API and the fake cloud:
the template NodeClaim, the room limits.nodes leaves, and the order scale-down takes
NodeClaims in (unlaunched ones by deprovisioning priority first)."""

from __future__ import annotations

from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.controllers.context import ControllerContext
from joiner.controllers.static import (
    DEPROVISIONING_PRIORITY,
    StaticCapacity,
    active_claims,
    deprovisioning_priority,
    node_room,
    template_plan,
)
from joiner.events import EventRecorder
from joiner.kube.memory import MemoryKube
from joiner.metrics import Metrics
from joiner.state.cluster import WATCHED_KINDS, ClusterState

TYPES = [
    new_instance_type("big", cpu="8", memory="32Gi"),
    new_instance_type("small", cpu="2", memory="8Gi"),
    new_instance_type("arm", cpu="2", memory="8Gi", arch="arm64"),
]


def _pool(replicas: int, limits: dict[str, str] | None = None, **more: Any) -> dict[str, Any]:
    return testing.nodepool("fixed", limits=limits, replicas=replicas, **more)


def _world(replicas: int, **more: Any) -> tuple[MemoryKube, ClusterState, StaticCapacity]:
    clock = FakeClock(0)
    kube = MemoryKube(clock)
    state = ClusterState(clock)
    for kind in WATCHED_KINDS:
        state.mark_listed(kind)
    state.apply("ADDED", kube.create(_pool(replicas, **more)))
    cloud = FakeCloudProvider(TYPES, clock)
    ctx = ControllerContext(kube, state, cloud, clock, EventRecorder(kube, clock), Metrics())
    return kube, state, StaticCapacity(ctx, lambda pool: True)


def test_the_template_nodeclaim_offers_every_allowed_type_cheapest_first() -> None:
    pool = NodePool.from_dict(
        _pool(1, requirements=[testing.requirement(wk.ARCH, "In", ["amd64"])])
    )
    plan = template_plan(pool, TYPES)
    assert plan is not None
    assert plan.instance_types == ["small", "big"]
    assert plan.pods == [] and plan.requests == {}
    assert {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["small", "big"]} in (
        plan.requirements
    )


def test_no_allowed_type_gives_no_template_nodeclaim() -> None:
    pool = NodePool.from_dict(
        _pool(1, requirements=[testing.requirement(wk.ARCH, "In", ["s390x"])])
    )
    assert template_plan(pool, TYPES) is None


@pytest.mark.parametrize(
    ("limits", "existing", "room"),
    [(None, 40, 2**31), ({"nodes": "5"}, 3, 2), ({"nodes": "5"}, 7, 0), ({"nodes": "-1"}, 0, 0)],
)
def test_limits_nodes_counts_every_existing_nodeclaim(
    limits: dict[str, str] | None, existing: int, room: int
) -> None:
    assert node_room(NodePool.from_dict(_pool(3, limits=limits)), existing) == room


@pytest.mark.parametrize(("value", "priority"), [("7", 7), ("-2", -2), ("high", 0), (None, 0)])
def test_deprovisioning_priority_reads_an_integer_or_counts_as_zero(
    value: str | None, priority: int
) -> None:
    claim = testing.nodeclaim("c")
    if value is not None:
        claim["metadata"]["annotations"] = {DEPROVISIONING_PRIORITY: value}
    assert deprovisioning_priority(NodeClaim.from_dict(claim)) == priority


def test_scaling_up_creates_template_nodeclaims_owned_by_the_pool() -> None:
    kube, _, static = _world(3, limits={"nodes": "2"})
    static.reconcile("fixed")
    claims = kube.list("NodeClaim").items
    assert len(claims) == 2  # limits.nodes
    uid = kube.get("NodePool", "fixed")["metadata"]["uid"]
    for claim in claims:
        assert claim["metadata"]["labels"][wk.NODEPOOL] == "fixed"
        assert claim["metadata"]["ownerReferences"][0]["uid"] == uid


def test_scaling_down_takes_unlaunched_nodeclaims_by_priority_first() -> None:
    kube, state, static = _world(1)
    for name, priority in (("low", "1"), ("high", "9"), ("none", None)):
        claim = testing.nodeclaim(name, nodepool="fixed")
        if priority is not None:
            claim["metadata"]["annotations"] = {DEPROVISIONING_PRIORITY: priority}
        state.apply("ADDED", kube.create(claim))

    static.reconcile("fixed")

    kept = [c["metadata"]["name"] for c in kube.list("NodeClaim").items]
    assert kept == ["none"]


def test_a_second_look_before_the_watch_brings_the_new_nodeclaims_creates_none() -> None:
    """Woken by an older event, the controller must not count its creations as missing."""
    kube, _, static = _world(3)
    static.reconcile("fixed")
    static.reconcile("fixed")  # the state has not seen the three yet
    assert len(kube.list("NodeClaim").items) == 3


def test_a_node_being_replaced_counts_until_its_replacement_is_there() -> None:
    claims = [NodeClaim.from_dict(testing.nodeclaim(n, nodepool="fixed")) for n in "ab"]
    marked = {"a"}
    assert [c.name for c in active_claims(claims, marked)] == ["a", "b"]
    replacement = testing.nodeclaim("c", nodepool="fixed")
    replacement["metadata"]["annotations"] = {wk.REPLACES_ANNOTATION: "a"}
    claims.append(NodeClaim.from_dict(replacement))
    assert [c.name for c in active_claims(claims, marked)] == ["b", "c"]
