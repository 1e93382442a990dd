"""Balanced consolidation end to end [DISR-10]: the real operator in the simulator. A
node on a 3-CPU type ($0.16/h) is left with one 1.4-CPU pod, which a 2-CPU type would
hold. In a one-node pool a move's disruption is all of the pool's (the node and its
pod), so the score is the share of the price saved: Balanced (k = 2) replaces only
with a type at most half the price, while WhenEmptyOrUnderutilized takes any saving.
Empty nodes are emptiness's, never scored."""

from __future__ import annotations

from typing import Any

import yaml
from joiner import testing
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario


def _simulation(policy: str, half_price: float, replicas_after: int = 1) -> Simulation:
    doc: dict[str, Any] = testing.scenario(
        "balanced",
        instance_types=[
            testing.scenario_instance_type("mid", "3", "12Gi", {"zone-a/on-demand": 0.16}),
            testing.scenario_instance_type("half", "2", "8Gi", {"zone-a/on-demand": half_price}),
        ],
        objects=[
            testing.ec2nodeclass(),
            testing.nodepool(
                requirements=[testing.capacity_types("on-demand")],
                disruption={"consolidationPolicy": policy, "consolidateAfter": "30s"},
            ),
            testing.deployment("app", replicas=2, cpu="1400m", memory="1Gi"),
        ],
        steps=[
            {"settle": "5m"},
            {"scale": {"kind": "Deployment", "name": "app", "replicas": replicas_after}},
            {"advance": "10m"},
        ],
    )
    return Simulation(load_scenario(yaml.safe_dump(doc)))


def _run(policy: str, half_price: float, replicas_after: int = 1) -> SimulationResult:
    return _simulation(policy, half_price, replicas_after).run()


def _types(result: SimulationResult) -> list[str | None]:
    return [n.instance_type for n in result.final.managed_nodes]


def _events(result: SimulationResult, reason: str) -> list[tuple[str, str]]:
    return [(e.kind, e.message) for e in result.events if e.reason == reason]


def test_balanced_skips_a_replacement_saving_less_than_half_and_says_why() -> None:
    result = _run("Balanced", half_price=0.10)
    assert _types(result) == ["mid"]
    rejected = set(_events(result, "ConsolidationRejected"))
    assert rejected == {
        (
            "NodeClaim",
            "score 0.38 < threshold 0.50 (k: 2, savings 37.5%, disruption 100.0%)",
        )
    }
    assert _events(result, "ConsolidationApproved") == []


def test_when_empty_or_underutilized_takes_the_same_replacement() -> None:
    result = _run("WhenEmptyOrUnderutilized", half_price=0.10)
    assert _types(result) == ["half"]
    assert _events(result, "ConsolidationRejected") == []


def _sample(simulation: Simulation, metric: str, *labels: str) -> float | None:
    value = simulation.operator.metrics.registry.get_sample_value(
        metric, dict(zip(("decision", "nodepool", "policy"), labels, strict=True))
    )
    return value


def test_every_policy_counts_its_moves_and_only_balanced_scores_them() -> None:
    """As upstream's: karpenter_consolidation_moves_total counts the moves of every
    policy; the score histogram holds Balanced pools' only."""
    eager = _simulation("WhenEmptyOrUnderutilized", half_price=0.10)
    eager.run()
    moves = "karpenter_consolidation_moves_total"
    # the move is worked out when decided and again when validated 15 s later
    assert _sample(eager, moves, "approved", "default", "WhenEmptyOrUnderutilized") == 2
    assert (
        _sample(
            eager,
            "karpenter_consolidation_score_count",
            "approved",
            "default",
            "WhenEmptyOrUnderutilized",
        )
        is None
    )

    careful = _simulation("Balanced", half_price=0.10)
    careful.run()
    assert _sample(careful, moves, "rejected", "default", "Balanced") == 1
    assert _sample(careful, moves, "approved", "default", "Balanced") is None


def test_balanced_takes_a_replacement_at_half_the_price_and_says_so() -> None:
    result = _run("Balanced", half_price=0.08)
    assert _types(result) == ["half"]
    assert _events(result, "ConsolidationApproved") == [
        ("NodeClaim", "score 0.50 >= threshold 0.50 (k: 2, savings 50.0%, disruption 100.0%)")
    ]
    assert result.failures == []


def test_balanced_deletes_an_empty_node_without_scoring_it() -> None:
    result = _run("Balanced", half_price=0.10, replicas_after=0)
    assert _types(result) == []
    assert _events(result, "ConsolidationRejected") == []
    assert [c.disruption_reason for c in result.nodeclaims] == ["Empty"]


def test_a_node_not_even_worth_deleting_is_passed_over_without_a_simulation() -> None:
    """Upstream's candidate filter: a $0.08 node holding a pod of the highest deletion
    cost (eviction cost 10) in a $0.40 pool scores 0.24 even for an outright delete, so
    it is not simulated; a simulation would have found only "replacement not cheaper"
    (nothing else can take its pod). The full $0.32 node still is simulated."""
    costly = testing.deployment("costly", replicas=1, cpu="800m", memory="1Gi")
    costly["spec"]["template"]["metadata"]["annotations"] = {
        "controller.kubernetes.io/pod-deletion-cost": "2147483647"
    }
    doc: dict[str, Any] = testing.scenario(
        "balanced",
        instance_types=[
            testing.scenario_instance_type("big", "4", "16Gi", {"zone-a/on-demand": 0.32}),
            testing.scenario_instance_type("small", "1", "4Gi", {"zone-a/on-demand": 0.08}),
        ],
        objects=[
            testing.ec2nodeclass(),
            testing.nodepool(
                requirements=[testing.capacity_types("on-demand")],
                disruption={"consolidationPolicy": "Balanced", "consolidateAfter": "30s"},
            ),
            testing.deployment("full", replicas=1, cpu="3500m", memory="1Gi"),
            costly,
        ],
        steps=[{"settle": "5m"}, {"advance": "5m"}],
    )
    result = Simulation(load_scenario(yaml.safe_dump(doc))).run()
    assert sorted(_types(result)) == ["big", "small"]
    assert {m for _, m in _events(result, "ConsolidationRejected")} == {
        "score 0.24 < threshold 0.50 (k: 2, savings 20.0%, disruption 84.6%)"
    }
    assert {m for _, m in _events(result, "DisruptionBlocked")} == {"replacement not cheaper"}
