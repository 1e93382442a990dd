"""The drift method [DISR-6] as a pure function, against upstream's
``Drift.ComputeCommand``: candidates in the order they drifted, empty ones left to
emptiness, a pool without budget skipped, an unplaceable candidate passed over."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.controllers.disruption import methods
from joiner.controllers.disruption.candidates import Candidate
from joiner.scheduling.model import POOL_LIMITS, NodeClaimPlan, Plan, Unplaceable
from joiner.state.node import StateNode

POOL = NodePool.from_dict(
    {"metadata": {"name": "p"}, "spec": {"template": {"spec": {"nodeClassRef": {"name": "d"}}}}}
)


def drifted(name: str, created: str, drifted_at: str, pods: int = 1) -> Candidate:
    """A candidate whose NodeClaim was created and turned ``Drifted`` at these times."""
    claim = NodeClaim.from_dict(
        {
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeClassRef": {"name": "d"}},
            "status": {
                "conditions": [
                    {"type": "Drifted", "status": "True", "lastTransitionTime": drifted_at}
                ]
            },
        }
    )
    node = StateNode(nodeclaim=claim, node={"metadata": {"name": name}, "spec": {}})
    return Candidate(
        node=node,
        pool=POOL,
        instance_type="small",
        capacity_type="on-demand",
        zone="a",
        price=0.1,
        pods=[{"metadata": {"name": f"{name}-{i}", "namespace": "default"}} for i in range(pods)],
    )


REPLACEMENT = NodeClaimPlan(
    nodepool="p",
    hostname="h",
    requirements=[],
    instance_types=["small"],
    requests={},
    daemonset_overhead={},
    taints=[],
    startup_taints=[],
    labels={},
    pods=[],
    price=0.1,
)


def replace_each(candidates: Sequence[Candidate]) -> Plan:
    return Plan(nodeclaims=[REPLACEMENT])


def budget(n: int) -> Callable[[str, str], int]:
    return lambda pool, reason: n


def test_the_node_that_drifted_first_goes_first_whatever_its_age():
    old = drifted("old", "2026-01-01T00:00:00Z", drifted_at="2026-01-01T01:00:05Z")
    young = drifted("young", "2026-01-01T00:30:00Z", drifted_at="2026-01-01T01:00:00Z")
    verdict = methods.drift([old, young], budget(1), replace_each)
    assert verdict.command is not None
    assert [c.name for c in verdict.command.candidates] == ["young"]


def test_nodes_that_drifted_together_go_oldest_nodeclaim_first():
    young = drifted("a-young", "2026-01-01T00:30:00Z", drifted_at="2026-01-01T01:00:00Z")
    old = drifted("b-old", "2026-01-01T00:00:00Z", drifted_at="2026-01-01T01:00:00Z")
    verdict = methods.drift([young, old], budget(1), replace_each)
    assert [c.name for c in verdict.command.candidates] == ["b-old"]


def test_an_empty_drifted_node_is_left_to_emptiness():
    empty = drifted("empty", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", pods=0)
    busy = drifted("busy", "2026-01-01T00:30:00Z", "2026-01-01T01:00:05Z")
    verdict = methods.drift([empty, busy], budget(1), replace_each)
    assert [c.name for c in verdict.command.candidates] == ["busy"]
    assert verdict.command.reason == "Drifted" and len(verdict.command.replacements) == 1
    assert methods.drift([empty], budget(1), replace_each).command is None


def test_a_pool_without_drift_budget_is_skipped_and_says_so():
    node = drifted("n", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z")
    verdict = methods.drift([node], budget(0), replace_each)
    assert verdict.command is None
    assert verdict.skipped == {"n": "budget 0 for Drifted"}


def test_a_node_whose_pods_cannot_move_does_not_hold_up_the_next():
    stuck = drifted("stuck", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z")
    free = drifted("free", "2026-01-01T00:30:00Z", "2026-01-01T01:00:05Z")

    def simulate(candidates: Sequence[Candidate]) -> Plan:
        if candidates[0].name == "stuck":
            why = Unplaceable("default/stuck-0", POOL_LIMITS, "over the pool's limits")
            return Plan(unplaceable={"default/stuck-0": why})
        return replace_each(candidates)

    verdict = methods.drift([stuck, free], budget(1), simulate)
    assert [c.name for c in verdict.command.candidates] == ["free"]
    assert "stuck" in verdict.skipped
