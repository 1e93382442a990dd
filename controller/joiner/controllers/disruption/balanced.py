"""Balanced consolidation [DISR-10] (``consolidationPolicy: Balanced``, upstream v1.14):
a consolidation move of a Balanced pool is taken only when the share of the pool's cost
it saves is at least half the share of the pool's disruption it causes.

    savings     = price of the removed nodes - price of the replacement
    disruption  = sum over the removed nodes of 1 + sum(max(0, eviction cost)) of their pods
    score       = (savings / pool cost) / (disruption / pool disruption)

A move is approved when ``score >= 1/k`` with k = 2 (upstream's fixed value). The pool
totals are over all its managed nodes, candidates or not (nodes inside their
``consolidateAfter`` count too), so a pool's own size cancels out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from joiner.controllers.disruption.candidates import Candidate, eviction_cost

K = 2
THRESHOLD = 1 / K
NODE_BASELINE = 1.0  # a node's own disruption, so an empty node still costs something
_SCORE_PREFIX = "score "


@dataclass(frozen=True)
class PoolTotals:
    cost: float  # USD per hour of the pool's nodes
    disruption: float  # the pool's nodes' disruption, summed


@dataclass(frozen=True)
class Score:
    value: float
    savings: float  # fraction of the pool's cost
    disruption: float  # fraction of the pool's disruption

    @property
    def approved(self) -> bool:
        return self.value >= THRESHOLD

    def describe(self) -> str:
        """As upstream's events: ``score 0.42 < threshold 0.50 (k: 2, savings 4.2%, ...)``."""
        relation = ">=" if self.approved else "<"
        return (
            f"{_SCORE_PREFIX}{self.value:.2f} {relation} threshold {THRESHOLD:.2f} (k: {K}, "
            f"savings {self.savings:.1%}, disruption {self.disruption:.1%})"
        )


def is_rejection(why: str) -> bool:
    """A reason a candidate was passed over that is a Balanced score."""
    return why.startswith(_SCORE_PREFIX)


def node_disruption(pods: Iterable[dict[str, Any]], *, deletion_cost_managed: bool) -> float:
    """1 for the node plus each pod's eviction cost, negatives counting as 0."""
    costs = (eviction_cost(pod, deletion_cost_managed=deletion_cost_managed) for pod in pods)
    return NODE_BASELINE + sum(max(0.0, cost) for cost in costs)


def score(
    candidates: Sequence[Candidate],
    replacement_price: float,
    totals: PoolTotals,
    *,
    deletion_cost_managed: bool,
) -> Score:
    """The move's score against its pool's totals; 0 when it saves nothing."""
    savings = sum(c.price for c in candidates) - replacement_price
    managed = deletion_cost_managed
    disruption = sum(node_disruption(c.pods, deletion_cost_managed=managed) for c in candidates)
    savings_fraction = savings / totals.cost if totals.cost > 0 else 0.0
    disruption_fraction = disruption / totals.disruption if totals.disruption > 0 else 1.0
    if savings_fraction <= 0:
        return Score(0.0, savings_fraction, disruption_fraction)
    return Score(savings_fraction / disruption_fraction, savings_fraction, disruption_fraction)


def best_case(candidate: Candidate, totals: PoolTotals, *, deletion_cost_managed: bool) -> Score:
    """The score of deleting the candidate outright, the best any single-node move of it
    can do (a replacement saves less): below the threshold, no move of it is worth a
    simulation, as upstream's candidate filter has it."""
    return score([candidate], 0.0, totals, deletion_cost_managed=deletion_cost_managed)
