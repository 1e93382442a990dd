"""The Balanced score [DISR-10] on the worked examples of upstream's design (a pool of
eight $4.84/day and two $9.68/day nodes, 80 pods of cost 1: $58.08/day, disruption 80 of
the pods plus 10 of the nodes)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from joiner.api import labels as wk
from joiner.controllers.disruption.balanced import PoolTotals, Score, node_disruption, score
from joiner.controllers.disruption.candidates import Candidate

POOL = PoolTotals(cost=58.08, disruption=90.0)


def _pods(count: int, **annotations: str) -> list[dict[str, Any]]:
    return [{"metadata": {"annotations": dict(annotations)}, "spec": {}} for _ in range(count)]


def _candidate(price: float, pods: list[dict[str, Any]]) -> Candidate:
    return cast(Candidate, SimpleNamespace(price=price, pods=pods))


@pytest.mark.parametrize(
    ("price", "pods", "replacement", "value", "approved"),
    [
        (9.68, 3, 2.42, (7.26 / 58.08) / (4 / 90), True),  # oversized node, replaced
        (4.84, 4, 0.0, (4.84 / 58.08) / (5 / 90), True),  # spare capacity elsewhere: delete
        (4.84, 8, 2.42, (2.42 / 58.08) / (9 / 90), False),  # marginal replace
        (4.84, 10, 4.84, 0.0, False),  # well packed: same price, no saving
    ],
)
def test_the_designs_examples(
    price: float, pods: int, replacement: float, value: float, approved: bool
) -> None:
    result = score([_candidate(price, _pods(pods))], replacement, POOL, deletion_cost_managed=False)
    assert result.value == pytest.approx(value)
    assert result.approved is approved


def test_costly_pods_weigh_more_and_negative_costs_count_as_nothing() -> None:
    expensive = _pods(1, **{wk.POD_DELETION_COST: "2147483647"})  # clamped to 10
    cheap = _pods(1, **{wk.POD_DELETION_COST: "-2147483647"})  # clamped to -10 -> 0
    assert node_disruption(expensive, deletion_cost_managed=False) == 11.0
    assert node_disruption(cheap, deletion_cost_managed=False) == 1.0
    assert node_disruption([], deletion_cost_managed=False) == 1.0


def test_with_the_gate_the_annotation_joiner_writes_weighs_nothing() -> None:
    """Under PodDeletionCostManagement the pod-deletion-cost on a pod is Joiner's own rank;
    the score reads karpenter.sh/disruption-cost instead [PDC-6]."""
    ranked = _pods(1, **{wk.POD_DELETION_COST: "2147483647"})
    steered = _pods(1, **{wk.DISRUPTION_COST: "2147483647"})
    assert node_disruption(ranked, deletion_cost_managed=True) == 2.0
    assert node_disruption(steered, deletion_cost_managed=True) == 11.0


def test_the_description_names_the_score_and_the_threshold() -> None:
    assert Score(0.42, 0.042, 0.1).describe() == (
        "score 0.42 < threshold 0.50 (k: 2, savings 4.2%, disruption 10.0%)"
    )
    assert Score(0.5, 0.05, 0.1).describe().startswith("score 0.50 >= threshold 0.50")
