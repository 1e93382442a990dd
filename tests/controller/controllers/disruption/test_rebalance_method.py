"""The rebalancer as a disruption method (issue 23), on the simulator with exact outcomes:
opt-in per NodePool, a move Karpenter's consolidation cannot make (one node replaced by
two), the churn budget's knobs, events, metrics and the amortisation of launched nodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from disruption_world import deployment, instance_type, live_types, nodepool, od, scale, simulate
from joiner.api import labels as wk
from joiner.clock import to_rfc3339
from joiner.sim.engine import SIM_START, Simulation
from joiner.sim.result import SimulationResult

# A 5-cpu workload needs BIG; once it is gone, the 5 cpu of small pods left on BIG fit
# no cheaper single node (SMALL holds 4 cpu), only two SMALL ones: $1.00 -> $0.50.
BIG = instance_type("big", "16", "32Gi", od(1.00))
SMALL = instance_type("small", "4", "8Gi", od(0.25))
MOVED = "rebalance: 1 node -> 2, saves $0.50/h, evicts 10 pods"


def _pool(annotations: dict[str, str]) -> dict[str, Any]:
    pool = nodepool(disruption={"consolidateAfter": "30s", "budgets": [{"nodes": "100%"}]})
    pool["metadata"]["annotations"] = annotations
    return pool


def _day(
    annotations: dict[str, str],
    after: str = "10m",
    prepare: Callable[[Simulation], None] | None = None,
) -> SimulationResult:
    return simulate(
        [BIG, SMALL],
        [
            _pool(annotations),
            deployment("wide", 2, "4500m"),
            deployment("narrow", 10, "500m"),
        ],
        [
            {"settle": "5m"},
            {"expect": {"nodesByInstanceType": {"big": 1}}},
            scale("wide", 0),
            {"advance": after},
        ],
        prepare=prepare,
    )


def _events(result: SimulationResult, reason: str) -> list[tuple[str, str, str]]:
    return sorted((e.kind, e.name, e.message) for e in result.events if e.reason == reason)


def test_off_by_default_karpenter_leaves_the_big_node():
    result = _day({})
    assert result.failures == []
    assert live_types(result) == ["big"]
    assert _events(result, "Rebalanced") == []


def test_opted_in_pool_replaces_one_node_by_two_cheaper_ones():
    simulations: list[Simulation] = []
    result = _day({wk.REBALANCE: "true"}, prepare=simulations.append)
    assert result.failures == []
    assert live_types(result) == ["small", "small"]
    (big,) = [c for c in result.nodeclaims if c.instance_type == "big"]
    assert big.disruption_reason == "Rebalanced"
    events = _events(result, "Rebalanced")
    assert [(kind, message) for kind, _, message in events] == [
        ("Node", MOVED),
        ("NodePool", MOVED),
    ]
    assert events[1][1] == "default"
    assert events[0][1] not in {n.name for n in result.final.nodes}  # the big one, gone
    smalls = [n for n in result.final.nodes if n.managed]
    assert sorted(len(n.pods) for n in smalls) in ([5, 5], [4, 6], [3, 7], [2, 8])
    # the replacements say when a move launched them, for the amortisation (and a
    # restarted controller): at the instant the move was decided
    (moved_at,) = {e.time for e in result.events if e.reason == "Rebalanced"}
    claims = simulations[0].operator.state.nodeclaims.values()
    launched = [(c.metadata.get("annotations") or {}).get(wk.REBALANCE_LAUNCHED) for c in claims]
    assert launched == [to_rfc3339(SIM_START + moved_at)] * 2
    registry = simulations[0].operator.metrics.registry
    sample = {"nodepool": "default"}
    assert [
        registry.get_sample_value(f"joiner_rebalance_{name}_total", sample)
        for name in ("moves", "evictions", "saving_dollars_per_hour")
    ] == [1.0, 10.0, pytest.approx(0.5)]


@pytest.mark.parametrize(
    "knob",
    [
        {wk.REBALANCE_PODS_PER_MOVE: "9"},  # the move evicts 10
        {wk.REBALANCE_EVICTIONS_PER_HOUR: "9"},
        {wk.REBALANCE_MIN_SAVING_PER_EVICTION: "0.051"},  # it saves $0.05 per eviction
    ],
)
def test_a_move_beyond_the_churn_budget_is_not_made(knob: dict[str, str]):
    result = _day({wk.REBALANCE: "true", **knob})
    assert result.failures == []
    assert live_types(result) == ["big"]


def test_the_saving_threshold_admits_a_move_that_repays_it():
    result = _day({wk.REBALANCE: "true", wk.REBALANCE_MIN_SAVING_PER_EVICTION: "0.049"})
    assert live_types(result) == ["small", "small"]


def test_a_bad_annotation_leaves_the_pool_alone_with_an_event_naming_it():
    result = _day({wk.REBALANCE: "true", wk.REBALANCE_AMORTISATION: "soon"})
    assert live_types(result) == ["big"]
    assert _events(result, "RebalanceInvalid") == [
        (
            "NodePool",
            "default",
            "metadata.annotations[joiner.sh/rebalance-amortisation]: must be a duration "
            "such as 30m or 2h, got 'soon'",
        )
    ]
