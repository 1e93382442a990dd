"""``expect`` steps checked against snapshots: every key of the vocabulary."""

from __future__ import annotations

from joiner.sim.result import NodeClaimRecord, PendingPod, Snapshot
from joiner.sim.scenario import CountCheck, ExpectStep, evaluate_expect
from sim_builders import node, static_node

EXACTLY = CountCheck("==", 1)


def snapshot() -> Snapshot:
    """One static node and two managed ones (one spot not ready), one pod pending."""
    return Snapshot(
        time=100.0,
        cost_per_hour=0.3,
        nodes=[
            static_node(),
            node("a", nodepool="general"),
            node("b", nodepool="gpu", ready=False, capacity_type="on-demand", zone="us-east-1b"),
        ],
        pending_pods=[PendingPod("default/big", "nodepool gpu: limits exceeded (cpu)")],
    )


def test_all_hold():
    step = ExpectStep(
        index=4,
        pending_pods=EXACTLY,
        pods_running=CountCheck("==", 5),
        nodes={
            "total": CountCheck("==", 3),
            "managed": CountCheck(">=", 2),
            "unmanaged": EXACTLY,
            "ready": CountCheck("<", 3),
        },
        nodes_by_pool={"general": EXACTLY, "gpu": EXACTLY, "absent": CountCheck("==", 0)},
        nodes_by_instance_type={"c5.xlarge": CountCheck("==", 2), "m5.large": EXACTLY},
        nodes_by_zone={"us-east-1a": CountCheck("==", 2), "us-east-1b": EXACTLY},
        nodes_by_capacity_type={"spot": EXACTLY, "on-demand": CountCheck("==", 2)},
        cost_per_hour_at_most=0.3,
        pending_reason="LIMITS",
    )
    assert evaluate_expect(step, snapshot()) == []


def test_each_failure_names_the_step_the_key_and_both_values():
    step = ExpectStep(
        index=4,
        name="after scale-up",
        pending_pods=CountCheck("==", 0),
        pods_running=CountCheck(">", 5),
        nodes={"managed": CountCheck("<=", 1)},
        nodes_by_pool={"gpu": CountCheck("==", 2)},
        cost_per_hour_at_most=0.25,
        pending_reason="taint",
    )
    where = "spec.steps[4] (after scale-up)"
    assert evaluate_expect(step, snapshot()) == [
        f"{where}: pendingPods: expected 0, got 1",
        f"{where}: podsRunning: expected >5, got 5",
        f"{where}: nodes.managed: expected <=1, got 2",
        f"{where}: nodesByPool.gpu: expected 2, got 1",
        f"{where}: costPerHourAtMost: expected at most 0.25, got 0.3000",
        f"{where}: pendingReason: default/big is pending for 'nodepool gpu: limits exceeded "
        "(cpu)', which does not mention 'taint'",
    ]


def test_pending_reason_failures_are_grouped_by_reason():
    snap = snapshot()
    snap.pending_pods = [
        PendingPod("default/a", "taint dedicated"),
        PendingPod("default/b", "taint dedicated"),
        PendingPod("default/c", "no instance type has room"),
        PendingPod("default/d", "limits on cpu"),
    ]
    assert evaluate_expect(ExpectStep(index=1, pending_reason="limit"), snap) == [
        "spec.steps[1]: pendingReason: 2 pods are (default/a, ...) pending for 'taint "
        "dedicated', which does not mention 'limit'",
        "spec.steps[1]: pendingReason: default/c is pending for 'no instance type has room', "
        "which does not mention 'limit'",
    ]


def test_pending_reason_needs_pending_pods():
    step = ExpectStep(index=0, pending_reason="limits")
    empty = Snapshot(time=0.0, cost_per_hour=0.0)
    assert evaluate_expect(step, empty) == [
        "spec.steps[0]: pendingReason: expected pending pods, got none"
    ]


def test_static_nodes_do_not_count_in_any_pool():
    step = ExpectStep(index=0, nodes_by_pool={"general": EXACTLY})
    unpooled = Snapshot(time=0.0, cost_per_hour=0.0, nodes=[static_node()])
    unpooled.nodes[0].nodepool = "general"
    assert evaluate_expect(step, unpooled) == [
        "spec.steps[0]: nodesByPool.general: expected 1, got 0"
    ]


def test_nodeclaims_count_those_existing_at_the_snapshot_time():
    claims = [
        NodeClaimRecord(name="old", nodepool="p", created_at=0.0, deleted_at=50.0),
        NodeClaimRecord(name="live", nodepool="p", created_at=10.0),
        NodeClaimRecord(name="deleting-later", nodepool="p", created_at=20.0, deleted_at=150.0),
        NodeClaimRecord(name="future", nodepool="p", created_at=120.0),
    ]
    assert (
        evaluate_expect(ExpectStep(index=0, nodeclaims=CountCheck("==", 2)), snapshot(), claims)
        == []
    )
    assert evaluate_expect(
        ExpectStep(index=0, nodeclaims=CountCheck("==", 0)), snapshot(), claims
    ) == ["spec.steps[0]: nodeclaims: expected 0, got 2"]


def test_count_check_operators():
    assert [CountCheck(op, 2).holds(2) for op in ("==", ">=", "<=", ">", "<")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert [str(CountCheck(op, 2)) for op in ("==", ">=", "<")] == ["2", ">=2", "<2"]
