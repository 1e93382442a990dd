"""Disruption budgets [DISR-4].

allowed(pool, reason) = min over the pool's active budgets that cover the reason
(``N`` or ``N%`` of the pool's nodes, percentages rounded up) minus the pool's
nodes that are already NotReady or being deleted, never below zero. A budget
with a schedule is active while the last cron fire (UTC) is within ``duration``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from croniter import croniter

from joiner.api.duration import parse_duration
from joiner.api.nodepool import Budget, NodePool, cron_expression
from joiner.state.node import StateNode

# Karpenter's three disruption reasons, as budgets name them.
UNDERUTILIZED, EMPTY, DRIFTED = "Underutilized", "Empty", "Drifted"


def budget_active(budget: Budget, now: float) -> bool:
    """A budget without a schedule is always active; so is one whose schedule Joiner cannot
    read (the API server accepts any five words), which can then only restrict disruption."""
    if budget.schedule is None:
        return True
    expression = cron_expression(budget.schedule)
    if expression is None:
        return True
    moment = datetime.fromtimestamp(now, tz=UTC)
    # croniter's get_prev excludes `now` itself; a fire exactly now counts as active.
    if croniter.match(expression, moment):
        return True
    last_fire = croniter(expression, moment).get_prev(float)
    return now < last_fire + _active_for(budget)


def _active_for(budget: Budget) -> float:
    """Seconds a scheduled budget stays active; beyond what Joiner can represent, forever."""
    seconds = parse_duration(budget.duration or "0s")
    return math.inf if seconds is None else seconds


def budget_value(budget: Budget, total_nodes: int) -> int:
    if budget.nodes.endswith("%"):
        return math.ceil(int(budget.nodes[:-1]) * total_nodes / 100)
    return int(budget.nodes)


def allowed_disruptions(
    pool: NodePool,
    reason: str,
    pool_nodes: list[StateNode],
    now: float,
    marked: frozenset[str] = frozenset(),
) -> int:
    total = len(pool_nodes)
    values = [
        budget_value(b, total)
        for b in pool.disruption.budgets
        if (b.reasons is None or reason in b.reasons) and budget_active(b, now)
    ]
    if not values:
        return total  # no budget covers this reason: nothing limits it
    disrupting = sum(
        1
        for sn in pool_nodes
        if sn.deleting or sn.name in marked or (sn.registered and not sn.ready)
    )
    return max(0, min(values) - disrupting)
