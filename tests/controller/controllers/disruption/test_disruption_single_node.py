"""Single-node consolidation [DISR-7] over every candidate, and the checks that spare it
simulations, end to end on the simulator."""

from __future__ import annotations

from disruption_world import (
    deployment,
    disruptions,
    instance_type,
    live_types,
    nodepool,
    od,
    scale,
    simulate,
    types_pool,
)
from joiner import testing
from joiner.api import labels as wk
from joiner.sim.engine import Simulation

BIG = instance_type("big", "4", "8Gi", od(0.20))
LESSER = instance_type("lesser", "3200m", "8Gi", od(0.10))
FIRST_TO_DISRUPT = {wk.POD_DELETION_COST: "-1000000000"}  # eviction cost 1 - 7.45


def blocked(result) -> dict[str, str]:
    """NodeClaim -> the last DisruptionBlocked message it got."""
    return {e.name: e.message for e in result.events if e.reason == "DisruptionBlocked"}


def test_budget_1_the_first_candidate_cannot_consolidate_the_second_is_replaced():
    """Two big nodes, so the 10% budget allows one disruption. The cheaper-to-disrupt one
    holds a 3.8-CPU pod that only a big node fits; the other's 3-CPU pod fits a lesser
    node at half the price. Single-node consolidation goes past the first candidate (only
    multi-node is limited to a budget-sized prefix) and replaces the second."""
    result = simulate(
        [BIG, LESSER],
        [
            types_pool("big"),
            deployment("stuck", 1, "3800m", annotations=FIRST_TO_DISRUPT),
            deployment("mover", 1, "3"),
        ],
        [
            {"settle": "5m"},
            {"expect": {"nodesByInstanceType": {"big": 2}}},
            {"apply": [types_pool("big", "lesser")]},
            {"advance": "10m"},
        ],
    )
    assert result.failures == []
    assert live_types(result) == ["big", "lesser"]
    ((_, message),) = disruptions(result)
    assert message.startswith("Underutilized: replace ")
    assert message.endswith("with 1 node(s) (lesser)")
    (stuck,) = [n for n in result.final.nodes if n.instance_type == "big"]
    assert [p.split("-")[0] for p in stuck.pods] == ["default/stuck"]
    assert set(blocked(result).values()) == {"replacement not cheaper"}


def test_an_empty_node_is_left_to_emptiness_and_its_budget():
    """A budget of 0 for Empty keeps an empty node: consolidation for Underutilized does
    not take empty nodes (Karpenter filters them out), so that budget is not bypassed."""
    pool = nodepool(
        disruption={
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "30s",
            "budgets": [{"nodes": "0", "reasons": ["Empty"]}],
        }
    )
    result = simulate(
        [BIG],
        [pool, deployment("app", 1, "3")],
        [
            {"settle": "5m"},
            {"expect": {"nodes": {"managed": 1}}},
            scale("app", 0),
            {"advance": "10m"},
        ],
    )
    assert result.failures == []
    assert live_types(result) == ["big"]
    assert disruptions(result) == []
    assert set(blocked(result).values()) == {"budget 0 for Empty"}


def count_solves(simulation: Simulation, solves: list[int]) -> None:
    """Records the cluster state's generation at each of the disruption controller's
    rescheduling simulations into ``solves``."""
    disruption = simulation.operator.disruption
    solve_without = disruption._solve_without

    def counted(candidates):
        solves.append(disruption.state.generation)
        return solve_without(candidates)

    disruption._solve_without = counted


def test_a_full_node_that_no_cheaper_type_could_hold_is_judged_without_simulating():
    """A big node whose 3.8-CPU pod has no room elsewhere, and only lesser (3.2-CPU) nodes
    are cheaper: no simulation can find a command, so none is run, pass after pass."""
    solves: list[int] = []
    result = simulate(
        [BIG, LESSER],
        [types_pool("big"), deployment("stuck", 1, "3800m")],
        [{"settle": "5m"}, {"apply": [types_pool("big", "lesser")]}, {"advance": "10m"}],
        prepare=lambda simulation: count_solves(simulation, solves),
    )
    assert result.failures == []
    assert live_types(result) == ["big"]
    assert solves == []
    assert set(blocked(result).values()) == {"replacement not cheaper"}


def test_a_node_that_only_a_simulation_can_judge_is_simulated_only_when_the_cluster_changed():
    """The pod fits a lesser node by resources, but selects the big type: only the
    simulation sees that. Of some 90 passes, only those after a change of the cluster's
    state simulate again (Karpenter's "consolidated" state)."""
    solves: list[int] = []
    pinned = testing.deployment("app", 1, "3", "128Mi", nodeSelector={wk.INSTANCE_TYPE: "big"})
    result = simulate(
        [BIG, LESSER],
        [types_pool("big"), pinned],
        [{"settle": "5m"}, {"apply": [types_pool("big", "lesser")]}, {"advance": "10m"}],
        prepare=lambda simulation: count_solves(simulation, solves),
    )
    assert result.failures == []
    assert live_types(result) == ["big"]
    assert 1 <= len(solves) == len(set(solves)) <= 3
    assert set(blocked(result).values()) == {"replacement not cheaper"}
