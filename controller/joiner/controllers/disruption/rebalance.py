"""The rebalancer as a disruption method (issue 23), after Karpenter's methods found
nothing to do.

Per pass, for the NodePools that opted in (``joiner.api.rebalance``): the planner
(``joiner.rebalance.plan``) finds the cheap target and the moves towards it; of each move
the largest set of its nodes that the churn budget allows (pods per move, evictions per
hour, the pool's ``Underutilized`` disruption budget) is simulated as consolidation
simulates its candidates, and taken when the scheduler places every pod and the saving,
priced at the worst offering each replacement may launch, repays every eviction by the
pool's minimum. The command is validated again after the batch window and carried out as
a consolidation replace: launch, wait until initialized, taint and drain.

A node a move launched carries ``joiner.sh/rebalance-launched`` (when): it is not drained
by another move within its pool's amortisation period, so no A -> B -> A can happen
inside it (and a restarted controller still knows). The hourly eviction count lives in
memory: a restart forgets at most an hour of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from joiner.api import labels as wk
from joiner.api.rebalance import RebalanceSettings
from joiner.clock import from_rfc3339, to_rfc3339
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.disruption.budgets import UNDERUTILIZED
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.methods import (
    Command,
    narrow,
    replacement_requirements,
    unplaceable_reason,
    worst_launch_price,
)
from joiner.rebalance import RebalancePlan
from joiner.scheduling.model import NodeClaimPlan, Plan

REASON = "Rebalanced"  # the Command's reason: the NodeClaims' DisruptionReason
HOUR = 3600.0
# (pool name) -> the instance types it may launch
TypesOf = Callable[[str], Sequence[InstanceType]]
# (candidates, the types each pool may launch) -> the plan for their pods on the rest
Simulate = Callable[[Sequence[Candidate], Mapping[str, set[str]]], Plan]
# Subsets of one move the pass simulates at most: each is a scheduler solve.
MAX_TRIES = 6


@dataclass(frozen=True)
class Proposal:
    """A command the rebalancer would take, with what it saves ($/h, at the worst
    launch price) and how many pods it evicts."""

    command: Command
    saving: float
    evictions: int

    def describe(self) -> str:
        nodes = len(self.command.candidates)
        replacements = len(self.command.replacements)
        return (
            f"rebalance: {nodes} node{'s' * (nodes != 1)} -> {replacements}, "
            f"saves ${self.saving:.2f}/h, evicts {self.evictions} pod{'s' * (self.evictions != 1)}"
        )


@dataclass
class Churn:
    """The evictions moves made, per pool, in the last hour (in memory)."""

    made: dict[str, deque[tuple[float, int]]] = field(default_factory=dict)

    def record(self, pool: str, now: float, evictions: int) -> None:
        self.made.setdefault(pool, deque()).append((now, evictions))

    def used(self, pool: str, now: float) -> int:
        made = self.made.get(pool)
        if not made:
            return 0
        while made and made[0][0] <= now - HOUR:
            made.popleft()
        return sum(count for _, count in made)


def amortising(candidate: Candidate, settings: RebalanceSettings, now: float) -> bool:
    """Whether a move launched the candidate's node within its amortisation period."""
    claim = candidate.node.nodeclaim
    launched = (
        (claim.metadata.get("annotations") or {}).get(wk.REBALANCE_LAUNCHED) if claim else None
    )
    if not launched:
        return False
    try:
        return now < from_rfc3339(launched) + settings.amortisation
    except ValueError:
        return False


@dataclass
class Budget:
    """What a pass may still spend, pool by pool: evictions this hour and nodes."""

    settings: Mapping[str, RebalanceSettings]
    evictions_left: Mapping[str, int]
    nodes_left: Mapping[str, int]

    def admits(self, nodes: Sequence[Candidate]) -> str | None:
        """Why these nodes may not go in one move, or None."""
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in nodes:
            by_pool.setdefault(candidate.pool.name, []).append(candidate)
        evictions = sum(len(c.pods) for c in nodes)
        for pool, group in sorted(by_pool.items()):
            pods = sum(len(c.pods) for c in group)
            if evictions > self.settings[pool].pods_per_move:
                return (
                    f"evicts {evictions} pods, more than {self.settings[pool].pods_per_move} a move"
                )
            if pods > self.evictions_left[pool]:
                return (
                    f"evicts {pods} pods of pool {pool}, {self.evictions_left[pool]} left this hour"
                )
            if len(group) > self.nodes_left[pool]:
                return f"budget {self.nodes_left[pool]} for {UNDERUTILIZED}"
        return None


def choose(
    plan: RebalancePlan,
    eligible: Mapping[str, Candidate],
    budget: Budget,
    simulate: Simulate,
    instance_types: TypesOf,
    now: float,
) -> tuple[Proposal | None, str]:
    """The first move of the plan, or the largest part of it the budget admits, that the
    scheduler confirms saves enough; or None and why not."""
    why = (
        f"no move ({plan.method} target ${plan.target_cost:.4f}/h, now ${plan.current_cost:.4f}/h)"
    )
    tries = 0
    for move in plan.moves:
        launching = launch_types(move.launch)
        nodes = sorted(
            (eligible[name] for name in move.drain if name in eligible),
            key=lambda c: (len(c.pods), c.name),
        )
        for size in range(len(nodes), 0, -1):
            part = nodes[:size]
            refused = budget.admits(part)
            if refused is not None:
                why = refused
                continue
            if tries >= MAX_TRIES:
                return None, why
            tries += 1
            proposal, why = confirm(part, launching, budget.settings, simulate, instance_types, now)
            if proposal is not None:
                return proposal, ""
    return None, why


def confirm(
    nodes: Sequence[Candidate],
    launching: Mapping[str, set[str]],
    settings: Mapping[str, RebalanceSettings],
    simulate: Simulate,
    instance_types: TypesOf,
    now: float,
) -> tuple[Proposal | None, str]:
    """These nodes' move as the scheduler places their pods now, launching only the types
    ``launching`` names per pool (the planner's: offered every type, the scheduler puts
    pods that fit one dearer node there), if it saves at least the pools' minimum per
    eviction (and something); else None and why not."""
    placement = simulate(nodes, launching)
    if placement.unplaceable:
        return None, unplaceable_reason(placement)
    evictions = sum(len(c.pods) for c in nodes)
    least = max(settings[c.pool.name].min_saving_per_eviction for c in nodes) * evictions
    freed = sum(c.price for c in nodes)
    drained_types = {c.instance_type for c in nodes}
    replacements = _priced(placement.nodeclaims, freed - least, instance_types, drained_types)
    if replacements is None:
        cost = placement.price
        return None, (
            f"saves less than ${least:.4f}/h for {evictions} evictions "
            f"(frees ${freed:.4f}/h, launches ${cost:.4f}/h at best)"
        )
    saving = freed - sum(r.price for r in replacements)
    if saving <= 0:
        return None, "saves nothing"
    command = Command(REASON, list(nodes), replacements, {wk.REBALANCE_LAUNCHED: to_rfc3339(now)})
    return Proposal(command, saving, evictions), ""


def launch_types(claims: Sequence[NodeClaimPlan]) -> dict[str, set[str]]:
    """The instance types ``claims`` may launch, by pool."""
    types: dict[str, set[str]] = {}
    for claim in claims:
        types.setdefault(claim.nodepool, set()).update(claim.instance_types)
    return types


def _priced(
    claims: Sequence[NodeClaimPlan],
    ceiling: float,
    instance_types: TypesOf,
    drained_types: set[str],
) -> list[NodeClaimPlan] | None:
    """The replacements narrowed to the types whose worst offering keeps their sum under
    ``ceiling`` ($/h): each gets its cheapest type plus those within an equal share of
    the room left. None when even the cheapest types cost more. No replacement may be of
    a drained node's type: that node would be churn, not saving (as consolidation
    refuses to replace two m5.large by one)."""
    ranked = []
    for claim in claims:
        requirements = replacement_requirements(claim)
        by_name = {it.name: it for it in instance_types(claim.nodepool)}
        prices = sorted(
            (price, name)
            for name in claim.instance_types
            if name in by_name
            and name not in drained_types
            and (price := worst_launch_price(by_name[name], requirements)) is not None
        )
        if not prices:
            return None
        ranked.append((claim, requirements, prices))
    cheapest = sum(prices[0][0] for _, _, prices in ranked)
    if cheapest >= ceiling:
        return None
    share = (ceiling - cheapest) / max(len(ranked), 1)
    narrowed = []
    for claim, requirements, prices in ranked:
        limit = prices[0][0] + share
        names = [name for price, name in prices if price < limit]
        worst = max(price for price, name in prices if price < limit)
        narrowed.append(narrow(claim, requirements, names, worst))
    return narrowed


def eligible_candidates(
    candidates: Sequence[Candidate],
    settings: Mapping[str, RebalanceSettings],
    now: float,
    consolidatable: Callable[[Candidate], bool],
) -> tuple[dict[str, Candidate], dict[str, str]]:
    """The candidates of opted-in pools a move may drain, and why the others of those
    pools may not."""
    eligible: dict[str, Candidate] = {}
    skipped: dict[str, str] = {}
    for candidate in candidates:
        pool_settings = settings.get(candidate.pool.name)
        if pool_settings is None or not candidate.pods or not consolidatable(candidate):
            continue
        if amortising(candidate, pool_settings, now):
            skipped[candidate.name] = "rebalance: launched by a move, within its amortisation"
            continue
        eligible[candidate.name] = candidate
    return eligible, skipped
