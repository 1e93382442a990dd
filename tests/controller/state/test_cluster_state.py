"""ClusterState: watch events in, joined StateNodes, provisionable pods, nominations and
the scheduler's snapshot out [SCHED-1, SCHED-3, SCHED-11]."""

from __future__ import annotations

from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.clock import FakeClock
from joiner.state.cluster import WATCHED_KINDS, ClusterState, is_provisionable

UNSCHEDULABLE = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]


def pod(name: str, node: str | None = None, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node:
        spec["nodeName"] = node
    status = {"phase": "Running" if node else "Pending"}
    if not node:
        status["conditions"] = UNSCHEDULABLE
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": spec,
        "status": status,
    }


def nodeclaim(name: str, provider_id: str | None = None, **status: Any) -> dict[str, Any]:
    claim = testing.nodeclaim(
        name,
        requirements=[
            testing.requirement(wk.NODEPOOL, "In", ["default"]),
            testing.requirement(wk.INSTANCE_TYPE, "In", ["m5.large"]),
        ],
        requests={"cpu": "1500m", "pods": "2"},
        nodeclass="d",
        status=dict(status),
    )
    if provider_id:
        claim["status"]["providerID"] = provider_id
    return claim


def node(name: str, provider_id: str | None = None, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {wk.HOSTNAME: name}},
        "spec": {"providerID": provider_id} if provider_id else {},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(0)


@pytest.fixture
def state(clock: FakeClock) -> ClusterState:
    return ClusterState(clock)


def test_provisionable_pods_follow_spec_3_1() -> None:
    daemon = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "1"}]
    nominated = pod("preempting")
    nominated["status"]["nominatedNodeName"] = "node-a"
    finished = pod("done")
    finished["status"]["phase"] = "Succeeded"
    scheduled_false_other = pod("gated")
    scheduled_false_other["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    cases = {
        "pending": pod("pending"),
        "bound": pod("bound", node="node-a"),
        "daemon": pod("daemon", ownerReferences=daemon),
        "mirror": pod("mirror", annotations={"kubernetes.io/config.mirror": "x"}),
        "deleting": pod("deleting", deletionTimestamp="2026-01-01T00:00:00Z"),
        "preempting": nominated,
        "done": finished,
        "gated": scheduled_false_other,
    }
    assert [name for name, p in cases.items() if is_provisionable(p)] == ["pending"]


def test_provisionable_pods_come_in_the_order_the_state_holds_pods(state: ClusterState) -> None:
    """Only unbound pods are looked at, in the order a scan of every pod would find them
    (the solver's order): binding or deleting takes a pod out, re-creating puts it last."""
    for name in ("a", "b", "c", "d"):
        state.apply("ADDED", pod(name))
    state.apply("ADDED", pod("bound", node="n1"))
    state.apply("MODIFIED", pod("b", node="n1"))  # bound
    state.apply("MODIFIED", pod("c", labels={"x": "y"}))  # still pending, keeps its place
    state.apply("DELETED", pod("a"))
    state.apply("ADDED", pod("a"))  # re-created: last
    names = [p["metadata"]["name"] for p in state.provisionable_pods()]
    assert names == ["c", "d", "a"]
    assert names == [p["metadata"]["name"] for p in state.pods.values() if is_provisionable(p)]


def test_synced_only_after_every_kind_is_listed(state: ClusterState) -> None:
    for kind in WATCHED_KINDS[:-1]:
        state.mark_listed(kind)
    assert not state.synced
    state.mark_listed(WATCHED_KINDS[-1])
    assert state.synced


def test_pods_are_indexed_by_node_and_move_with_updates(state: ClusterState) -> None:
    state.apply("ADDED", pod("a", node="n1"))
    state.apply("ADDED", pod("b", node="n1"))
    state.apply("ADDED", pod("c"))
    assert [p["metadata"]["name"] for p in state.pods_on("n1")] == ["a", "b"]
    assert [p["metadata"]["name"] for p in state.provisionable_pods()] == ["c"]
    done = pod("a", node="n1")
    done["status"]["phase"] = "Succeeded"
    state.apply("MODIFIED", done)  # terminal pods free their node
    state.apply("MODIFIED", pod("c", node="n2"))
    state.apply("DELETED", pod("b", node="n1"))
    assert state.pods_on("n1") == []
    assert [p["metadata"]["name"] for p in state.pods_on("n2")] == ["c"]
    assert state.provisionable_pods() == []


def test_a_nodes_bound_pods_stay_one_object_until_one_of_them_changes(
    state: ClusterState,
) -> None:
    """Callers remember what they work out from a node's pods by the tuple's identity."""
    state.apply("ADDED", pod("a", node="n1"))
    state.apply("ADDED", pod("b", node="n2"))
    n1, n2 = state.bound_pods("n1"), state.bound_pods("n2")
    assert [p["metadata"]["name"] for p in n1] == ["a"]
    state.apply("MODIFIED", pod("b", node="n2", labels={"x": "y"}))
    state.apply("ADDED", pod("c"))  # pending: on no node
    assert state.bound_pods("n1") is n1
    changed = state.bound_pods("n2")
    assert changed is not n2
    assert changed[0]["metadata"]["labels"] == {"x": "y"}
    state.apply("MODIFIED", pod("c", node="n1"))
    assert [p["metadata"]["name"] for p in state.bound_pods("n1")] == ["a", "c"]
    state.apply("DELETED", pod("a", node="n1"))
    assert [p["metadata"]["name"] for p in state.bound_pods("n1")] == ["c"]
    assert state.pods_on("n1") == list(state.bound_pods("n1"))


def test_nominations_are_counted_and_say_when_they_run_out(
    state: ClusterState, clock: FakeClock
) -> None:
    """Nominations are not watch events: views that depend on them key on the count."""
    state.apply("ADDED", pod("a"))
    before = (state.generation, state.nominations)
    assert state.nominated_until("claim-1") == 0.0
    state.nominate("default/a", "claim-1")
    assert (state.generation, state.nominations) == (before[0], before[1] + 1)
    assert state.nominated_until("claim-1") == clock.now() + 20


def test_nominations_last_twenty_seconds_and_end_on_binding(
    state: ClusterState, clock: FakeClock
) -> None:
    state.apply("ADDED", pod("a"))
    state.nominate("default/a", "claim-1")
    clock.advance(19.9)
    assert state.nomination("default/a") == "claim-1"
    assert state.recently_nominated("claim-1")
    clock.advance(0.1)
    assert state.nomination("default/a") is None
    assert not state.recently_nominated("claim-1")

    state.nominate("default/a", "claim-2")
    state.apply("MODIFIED", pod("a", node="node-2"))
    assert state.nomination("default/a") is None


def test_state_nodes_join_nodeclaims_and_nodes_by_provider_id(state: ClusterState) -> None:
    state.apply("ADDED", nodeclaim("claim-1", "aws:///a/i-1"))
    state.apply("ADDED", nodeclaim("claim-2"))  # not launched
    state.apply("ADDED", node("ip-1", "aws:///a/i-1"))
    state.apply("ADDED", node("static"))  # unmanaged
    joined = {sn.name: sn for sn in state.state_nodes()}
    assert sorted(joined) == ["claim-2", "ip-1", "static"]
    assert joined["ip-1"].nodeclaim is not None and joined["ip-1"].nodeclaim.name == "claim-1"
    assert joined["ip-1"].registered and not joined["claim-2"].registered
    assert not joined["static"].managed and joined["static"].initialized  # Ready
    assert [sn.name for sn in state.managed_nodes()] == ["ip-1", "claim-2"]


def test_lookups_by_provider_id_follow_launches_changes_and_deletions(
    state: ClusterState,
) -> None:
    state.apply("ADDED", nodeclaim("claim-1"))  # not launched yet
    assert state.nodeclaim_by_provider_id("aws:///a/i-1") is None
    assert state.nodeclaim_by_provider_id(None) is None
    state.apply("MODIFIED", nodeclaim("claim-1", "aws:///a/i-1"))
    state.apply("ADDED", node("ip-1", "aws:///a/i-1"))
    found = state.nodeclaim_by_provider_id("aws:///a/i-1")
    assert found is not None and found.status.provider_id == "aws:///a/i-1"
    assert found is state.nodeclaims["claim-1"]  # the state's current object
    assert state.node_by_provider_id("aws:///a/i-1") is state.nodes["ip-1"]

    state.apply("MODIFIED", node("ip-1", "aws:///a/i-2"))  # a new providerID replaces the old
    assert state.node_by_provider_id("aws:///a/i-1") is None
    assert state.node_by_provider_id("aws:///a/i-2") is state.nodes["ip-1"]
    state.apply("DELETED", node("ip-1", "aws:///a/i-2"))
    state.apply("DELETED", nodeclaim("claim-1", "aws:///a/i-1"))
    assert state.node_by_provider_id("aws:///a/i-2") is None
    assert state.nodeclaim_by_provider_id("aws:///a/i-1") is None


def test_two_nodes_of_one_provider_id_answer_the_first(state: ClusterState) -> None:
    """Should two Nodes claim one instance, the lookup answers as a scan in order would."""
    state.apply("ADDED", node("ip-b", "aws:///a/i-1"))
    state.apply("ADDED", node("ip-a", "aws:///a/i-1"))
    assert state.node_by_provider_id("aws:///a/i-1") is state.nodes["ip-b"]
    state.apply("DELETED", node("ip-b", "aws:///a/i-1"))
    assert state.node_by_provider_id("aws:///a/i-1") is state.nodes["ip-a"]


def test_apply_tells_which_nodes_a_pod_came_to_or_left(state: ClusterState) -> None:
    assert state.apply("ADDED", pod("a")) == frozenset()  # pending
    assert state.apply("MODIFIED", pod("a", node="node-1")) == {"node-1"}  # bound
    relabelled = pod("a", node="node-1", labels={"app": "web"})
    assert state.apply("MODIFIED", relabelled) == frozenset()
    finished = pod("a", node="node-1")
    finished["status"]["phase"] = "Succeeded"
    assert state.apply("MODIFIED", finished) == {"node-1"}  # done: it no longer occupies it
    assert state.apply("DELETED", finished) == frozenset()
    assert state.apply("ADDED", node("node-1")) == frozenset()


def test_pod_events_leave_the_joined_view_as_it_was(state: ClusterState) -> None:
    """The join of NodeClaims and Nodes is rebuilt when one of them changes, not on the
    pod events that come thousands a second."""
    state.apply("ADDED", nodeclaim("claim-1", "aws:///a/i-1"))
    state.apply("ADDED", node("ip-1", "aws:///a/i-1"))
    [joined] = state.state_nodes()
    state.apply("ADDED", pod("a", node="ip-1"))
    state.apply("MODIFIED", pod("a", node="ip-1", labels={"app": "web"}))
    assert state.state_nodes()[0] is joined
    state.apply("MODIFIED", node("ip-1", "aws:///a/i-1", ready=False))
    [rejoined] = state.state_nodes()
    assert rejoined is not joined and not rejoined.initialized


def test_unlaunched_nodeclaim_holds_room_for_its_pods(state: ClusterState) -> None:
    """Before launch a NodeClaim has no allocatable yet; it counts with its requests, so a
    batch running meanwhile does not open another NodeClaim for the same pods."""
    state.apply("ADDED", nodeclaim("claim-1"))
    [sn] = state.state_nodes()
    assert sn.allocatable == {"cpu": 1500, "pods": 2000}
    state.apply(
        "MODIFIED",
        nodeclaim("claim-1", "aws:///a/i-1", allocatable={"cpu": "1930m", "pods": "29"}),
    )
    [sn] = state.state_nodes()
    assert sn.allocatable == {"cpu": 1930, "pods": 29000}


def test_snapshot_leaves_out_deleting_marked_and_excluded_nodes(state: ClusterState) -> None:
    for name in ("keep", "deleting", "marked", "excluded"):
        claim = nodeclaim(name, f"aws:///a/{name}")
        if name == "deleting":
            claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        state.apply("ADDED", claim)
    state.marked_for_deletion.add("marked")
    state.apply("ADDED", pod("p", node="keep"))
    snapshot = state.snapshot(exclude=["excluded"])
    assert [n.name for n in snapshot.nodes] == ["keep"]
    assert [p["metadata"]["name"] for p in snapshot.nodes[0].pods] == ["p"]
    state.apply("DELETED", nodeclaim("marked"))
    assert "marked" not in state.marked_for_deletion


def test_a_snapshot_node_stays_one_object_until_its_node_or_pods_change(
    state: ClusterState,
) -> None:
    """Solvers remember per-node facts by the identity of what the snapshot gives them:
    another pod's change (a new state generation) hands the other nodes out unchanged."""
    for name in ("n1", "n2"):
        state.apply("ADDED", nodeclaim(name, f"aws:///a/{name}"))
        state.apply("ADDED", node(name, f"aws:///a/{name}"))
    state.apply("ADDED", pod("a", node="n1"))
    state.apply("ADDED", pod("b", node="n2"))
    first = {n.name: n for n in state.snapshot().nodes}
    state.apply("MODIFIED", pod("b", node="n2", labels={"x": "y"}))
    second = {n.name: n for n in state.snapshot().nodes}
    assert second["n1"] is first["n1"]
    assert second["n2"] is not first["n2"]
    assert second["n2"].pods[0]["metadata"]["labels"] == {"x": "y"}
    state.apply("MODIFIED", node("n1", "aws:///a/n1", ready=False))
    third = {n.name: n for n in state.snapshot().nodes}
    assert third["n1"] is not first["n1"]
    assert [p["metadata"]["name"] for p in third["n1"].pods] == ["a"]


def test_a_node_is_leaving_when_deleted_or_marked_by_either_name(state: ClusterState) -> None:
    """Being deleted (its NodeClaim or its Node), or marked for deletion by the NodeClaim's
    name or the Node's: the one test every disruption view uses."""
    for name in ("stays", "claim-deleting", "node-deleting", "claim-marked", "node-marked"):
        claim = nodeclaim(name, f"aws:///a/{name}")
        joined = node(f"node-{name}", f"aws:///a/{name}")
        if name == "claim-deleting":
            claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        if name == "node-deleting":
            joined["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        state.apply("ADDED", claim)
        state.apply("ADDED", joined)
    state.marked_for_deletion.update({"claim-marked", "node-node-marked"})
    leaving = {sn.nodeclaim.name for sn in state.state_nodes() if state.leaving(sn)}
    assert leaving == {"claim-deleting", "node-deleting", "claim-marked", "node-marked"}


def test_leaving_pods_are_the_reschedulable_pods_of_the_nodes_going_away(
    state: ClusterState,
) -> None:
    """What the provisioner and the disruption simulations both place: not a pod of a
    node that stays, not one already evicted (terminating); a node marked after the
    list was first read counts at once (marks are no watch event)."""
    for name in ("stays", "deleting", "marked"):
        claim = nodeclaim(name, f"aws:///a/{name}")
        if name == "deleting":
            claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        state.apply("ADDED", claim)
        state.apply("ADDED", node(f"node-{name}", f"aws:///a/{name}"))
        state.apply("ADDED", pod(f"on-{name}", node=f"node-{name}"))
    state.apply(
        "ADDED", pod("evicted", node="node-deleting", deletionTimestamp="2026-01-01T00:00:00Z")
    )

    def names() -> list[str]:
        return [p["metadata"]["name"] for p in state.leaving_pods()]

    assert names() == ["on-deleting"]
    state.marked_for_deletion.add("marked")
    assert sorted(names()) == ["on-deleting", "on-marked"]


def test_nodepool_usage_counts_capacity_and_nodes(state: ClusterState) -> None:
    state.apply("ADDED", nodeclaim("c1", "aws:///a/1", capacity={"cpu": "2", "memory": "4Gi"}))
    state.apply("ADDED", nodeclaim("c2", "aws:///a/2", capacity={"cpu": "4", "memory": "8Gi"}))
    usage = state.nodepool_usage("default")
    assert usage == {"cpu": 6000, "memory": 12 * 2**30 * 1000, "nodes": 2000}
    assert state.nodepool_usage("other") == {"nodes": 0}


def test_unwatched_kinds_are_ignored(state: ClusterState) -> None:
    generation = state.generation
    state.apply("ADDED", {"kind": "ConfigMap", "metadata": {"name": "x"}})
    assert state.generation == generation


@pytest.mark.parametrize(("batch_max", "window"), [(10.0, 20.0), (30.0, 60.0), (2.0, 10.0)])
def test_a_nomination_holds_twice_the_longest_batch_and_at_least_ten_seconds(
    clock: FakeClock, batch_max: float, window: float
) -> None:
    """As upstream's nominationWindow: the pods' next batch still sees the node taken."""
    state = ClusterState(clock, batch_max=batch_max)
    state.apply("ADDED", pod("a"))
    state.nominate("default/a", "claim-1")
    clock.advance(window - 0.1)
    assert state.recently_nominated("claim-1")
    clock.advance(0.1)
    assert not state.recently_nominated("claim-1")
