"""Drift of static NodePools [STATIC-5]: a drifted node of a pool with ``replicas`` is
replaced by a NodeClaim of the pool's template (whatever its pods need: they reschedule
like any evicted pod), launched and initialized before the old node drains. As upstream's:
within the pool's ``Drifted`` budget, never while the pool is scaling down, and only when
``limits.nodes`` leaves room for the replacement beside the node it replaces (otherwise
the node stays, with a ``DisruptionBlocked`` event saying so)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from joiner.api.nodepool import NodePool
from joiner.controllers.disruption.budgets import DRIFTED
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.methods import Command, Verdict, by_creation
from joiner.scheduling.model import NodeClaimPlan

AT_NODE_LIMIT = "static NodePool is at its node limit and cannot stage a replacement"
SCALING_DOWN = "static NodePool is scaling down"
NO_TEMPLATE_TYPE = "no instance type meets the static NodePool's template"


def static_drift(
    candidates: Sequence[Candidate],
    allowed: Callable[[str, str], int],
    room: Callable[[NodePool], int],
    plan_for: Callable[[NodePool], NodeClaimPlan | None],
) -> Verdict:
    """The earliest drifted node of a static pool that may be replaced now, with its
    replacement; ``room`` is how many NodeClaims the pool may still add (negative while it
    scales down)."""
    skipped: dict[str, str] = {}
    for candidate in sorted(candidates, key=by_creation):
        pool = candidate.pool
        why = _blocked(allowed(pool.name, DRIFTED), room(pool))
        plan = None if why else plan_for(pool)
        if plan is None:
            skipped[candidate.name] = why or NO_TEMPLATE_TYPE
            continue
        return Verdict(Command(DRIFTED, [candidate], [plan]), skipped)
    return Verdict(None, skipped)


def _blocked(budget: int, room: int) -> str | None:
    if room < 0:
        return SCALING_DOWN
    if budget <= 0:
        return f"budget {budget} for {DRIFTED}"
    if room == 0:
        return AT_NODE_LIMIT
    return None
