"""The decisions of one disruption pass [DISR-2, DISR-5..7], as pure functions over
candidates and a rescheduling simulation.

A ``Command`` says which nodes go, why, and which NodeClaims replace them.
Methods return a command, or None with the reason each candidate was passed over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.conditions import get_condition
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.disruption.budgets import DRIFTED, EMPTY, UNDERUTILIZED
from joiner.controllers.disruption.candidates import Candidate
from joiner.identity import IdentityCache
from joiner.scheduling.catalog import Dimensions
from joiner.scheduling.model import NodeClaimPlan, Plan

MULTI_NODE_MAX_CANDIDATES = 100
SPOT_TO_SPOT_MIN_TYPES = 15

# (candidates) -> the plan for their pods on the rest of the cluster
Simulate = Callable[[Sequence[Candidate]], Plan]
# (a feasible command) -> why it is not worth taking (a Balanced score), or None
Judge = Callable[["Command"], str | None]


def take_all(command: Command) -> str | None:
    return None


@dataclass
class Command:
    reason: str  # Empty, Drifted, Underutilized, Rebalanced
    candidates: list[Candidate]
    replacements: list[NodeClaimPlan] = field(default_factory=list)
    # what the replacements' NodeClaims carry besides their pool's (a move's launch time)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def decision(self) -> str:
        return "replace" if self.replacements else "delete"

    def describe(self) -> str:
        names = ", ".join(c.name for c in self.candidates)
        if not self.replacements:
            return f"{self.reason}: delete {names}"
        types = "; ".join(", ".join(r.instance_types[:3]) for r in self.replacements)
        return f"{self.reason}: replace {names} with {len(self.replacements)} node(s) ({types})"


@dataclass
class Verdict:
    command: Command | None
    skipped: dict[str, str] = field(default_factory=dict)  # candidate -> why not


# --- emptiness -------------------------------------------------------------------------


def emptiness(candidates: Sequence[Candidate], allowed: Callable[[str, str], int]) -> Verdict:
    """Every budget-allowed empty, consolidatable node goes at once [DISR-5]."""
    chosen: list[Candidate] = []
    skipped: dict[str, str] = {}
    taken: dict[str, int] = {}
    for candidate in candidates:
        if candidate.pods:
            continue
        pool = candidate.pool.name
        if taken.get(pool, 0) >= allowed(pool, EMPTY):
            skipped[candidate.name] = f"budget {allowed(pool, EMPTY)} for {EMPTY}"
            continue
        taken[pool] = taken.get(pool, 0) + 1
        chosen.append(candidate)
    return Verdict(Command(EMPTY, chosen) if chosen else None, skipped)


# --- drift -------------------------------------------------------------------------------


def drift(
    candidates: Sequence[Candidate], allowed: Callable[[str, str], int], simulate: Simulate
) -> Verdict:
    """The first drifted node, in the order they drifted, whose pool's budget allows one
    more and whose pods can all be placed (replaced by whatever they need) [DISR-6], as
    Karpenter's ``Drift.ComputeCommand``. A node without reschedulable pods is left to
    emptiness, as there: one still standing is one an ``Empty`` budget kept, and taking
    it here would spend the ``Drifted`` budget. A node its pods cannot leave does not hold
    the budget from the next one."""
    skipped: dict[str, str] = {}
    for candidate in sorted(candidates, key=by_drift_time):
        if not candidate.pods:
            continue
        if allowed(candidate.pool.name, DRIFTED) < 1:
            skipped[candidate.name] = f"budget 0 for {DRIFTED}"
            continue
        plan = simulate([candidate])
        if plan.unplaceable:
            skipped[candidate.name] = unplaceable_reason(plan)
            continue
        return Verdict(Command(DRIFTED, [candidate], list(plan.nodeclaims)), skipped)
    return Verdict(None, skipped)


def by_drift_time(candidate: Candidate) -> tuple[str, str, str]:
    """The earliest drifted first: by when the ``Drifted`` condition turned true, then
    oldest NodeClaim first."""
    claim = candidate.node.nodeclaim
    drifted = get_condition(claim.status.conditions, nc.DRIFTED) if claim else None
    since = (drifted or {}).get("lastTransitionTime", "")
    return (since, *by_creation(candidate))


def by_creation(candidate: Candidate) -> tuple[str, str]:
    """Oldest NodeClaim first (then by name)."""
    claim = candidate.node.nodeclaim
    created = claim.metadata.get("creationTimestamp", "") if claim else ""
    return (created, candidate.name)


# --- consolidation ----------------------------------------------------------------------


@dataclass(frozen=True)
class ConsolidationOptions:
    spot_to_spot: bool = False


def consolidate(
    candidates: Sequence[Candidate],
    simulate: Simulate,
    instance_types: Callable[[str], Sequence[InstanceType]],
    options: ConsolidationOptions,
    judge: Judge = take_all,
) -> tuple[Command | None, str]:
    """Remove ``candidates`` if their pods fit elsewhere, or replace them with one cheaper
    node [DISR-7], if ``judge`` finds it worth it [DISR-10]. Returns the command or why
    not."""
    command, why = _feasible(candidates, simulate, instance_types, options)
    if command is None:
        return None, why
    rejected = judge(command)
    return (None, rejected) if rejected is not None else (command, "")


def _feasible(
    candidates: Sequence[Candidate],
    simulate: Simulate,
    instance_types: Callable[[str], Sequence[InstanceType]],
    options: ConsolidationOptions,
) -> tuple[Command | None, str]:
    plan = simulate(candidates)
    if plan.unplaceable:
        return None, unplaceable_reason(plan)
    if not plan.nodeclaims:
        return Command(UNDERUTILIZED, list(candidates)), ""
    if len(plan.nodeclaims) > 1:
        return None, f"would need {len(plan.nodeclaims)} new nodes"
    replacement = plan.nodeclaims[0]
    by_name = {it.name: it for it in instance_types(replacement.nodepool)}
    narrowed, why = _cheaper_replacement(candidates, replacement, by_name, options)
    if narrowed is None:
        return None, why
    return Command(UNDERUTILIZED, list(candidates), [narrowed]), ""


def _cheaper_replacement(
    candidates: Sequence[Candidate],
    replacement: NodeClaimPlan,
    by_name: dict[str, InstanceType],
    options: ConsolidationOptions,
) -> tuple[NodeClaimPlan | None, str]:
    requirements = replacement_requirements(replacement)
    all_spot = all(c.capacity_type == wk.CAPACITY_TYPE_SPOT for c in candidates)
    spot_only = not requirements.get_requirement(wk.CAPACITY_TYPE).has(wk.CAPACITY_TYPE_ON_DEMAND)
    spot_to_spot = all_spot and spot_only
    if spot_to_spot and not options.spot_to_spot:
        return None, "spot-to-spot consolidation is disabled (SpotToSpotConsolidation)"
    ceiling = _price_ceiling(candidates, replacement)
    cheaper = []
    for name in replacement.instance_types:
        instance_type = by_name.get(name)
        if instance_type is None:
            continue
        worst = worst_launch_price(instance_type, requirements)
        if worst is not None and worst < ceiling:
            cheaper.append((worst, name))
    cheaper.sort()
    if spot_to_spot and len(candidates) == 1:
        if len(cheaper) < SPOT_TO_SPOT_MIN_TYPES:
            return None, (
                f"spot-to-spot needs {SPOT_TO_SPOT_MIN_TYPES} cheaper types, found {len(cheaper)}"
            )
        cheaper = cheaper[:SPOT_TO_SPOT_MIN_TYPES]
    if not cheaper:
        return None, "replacement not cheaper"
    names = [name for _, name in cheaper]
    return narrow(replacement, requirements, names, cheaper[0][0]), ""


def replacement_requirements(replacement: NodeClaimPlan) -> Requirements:
    """What a replacement may launch: its plan's requirements, spot only where they allow
    spot and on-demand (the price check assumes spot launches; if spot is short, the
    launch fails and the node stays)."""
    requirements = Requirements.from_node_selector_requirements(replacement.requirements)
    capacity = requirements.get_requirement(wk.CAPACITY_TYPE)
    if capacity.has(wk.CAPACITY_TYPE_SPOT) and capacity.has(wk.CAPACITY_TYPE_ON_DEMAND):
        requirements.add(Requirement.new(wk.CAPACITY_TYPE, IN, [wk.CAPACITY_TYPE_SPOT]))
    return requirements


def _price_ceiling(candidates: Sequence[Candidate], replacement: NodeClaimPlan) -> float:
    """A replacement must cost less than the candidates together and, when it could be a
    type being removed, less than the cheapest such candidate: replacing two m5.large with
    one m5.large is churn, not savings."""
    ceiling = sum(c.price for c in candidates)
    options = set(replacement.instance_types)
    same = [c.price for c in candidates if c.instance_type in options]
    return min([ceiling, *same])


def worst_launch_price(instance_type: InstanceType, requirements: Requirements) -> float | None:
    prices = [o.price for o in instance_type.compatible_offerings(requirements)]
    return max(prices) if prices else None


def narrow(
    plan: NodeClaimPlan, requirements: Requirements, names: list[str], price: float
) -> NodeClaimPlan:
    requirements.add(Requirement.new(wk.INSTANCE_TYPE, IN, names))
    entries: list[dict[str, Any]] = [
        d for d in requirements.to_dicts() if d["key"] != wk.INSTANCE_TYPE
    ]
    entries.append({"key": wk.INSTANCE_TYPE, "operator": IN, "values": names})
    return NodeClaimPlan(
        nodepool=plan.nodepool,
        hostname=plan.hostname,
        requirements=entries,
        instance_types=names,
        requests=plan.requests,
        daemonset_overhead=plan.daemonset_overhead,
        taints=plan.taints,
        startup_taints=plan.startup_taints,
        labels=plan.labels,
        pods=plan.pods,
        price=price,
    )


def multi_node(
    candidates: Sequence[Candidate],
    simulate: Simulate,
    instance_types: Callable[[str], Sequence[InstanceType]],
    options: ConsolidationOptions,
    judge: Judge = take_all,
) -> Command | None:
    """The largest prefix (>= 2) of the cheapest-to-disrupt candidates that consolidates,
    by binary search [DISR-7]."""
    pool = list(candidates)[:MULTI_NODE_MAX_CANDIDATES]
    low, high, best = 2, len(pool), None
    while low <= high:
        middle = (low + high) // 2
        command, _ = consolidate(pool[:middle], simulate, instance_types, options, judge)
        if command is not None:
            best, low = command, middle + 1
        else:
            high = middle - 1
    return best


def single_node(
    candidates: Sequence[Candidate],
    simulate: Simulate,
    instance_types: Callable[[str], Sequence[InstanceType]],
    options: ConsolidationOptions,
    hopeless: Callable[[Candidate], str | None] = lambda _: None,
    judge: Judge = take_all,
) -> Verdict:
    """The first candidate, round robin over pools, that can go or be replaced cheaper.
    ``hopeless`` says, without simulating, why a candidate cannot (None: simulate)."""
    skipped: dict[str, str] = {}
    for candidate in _round_robin(candidates):
        why_not = hopeless(candidate)
        if why_not is not None:
            skipped[candidate.name] = why_not
            continue
        command, why = consolidate([candidate], simulate, instance_types, options, judge)
        if command is not None:
            return Verdict(command, skipped)
        skipped[candidate.name] = why
    return Verdict(None, skipped)


@dataclass(frozen=True)
class Rooms:
    """The free room of the nodes pods may move to, as one matrix (nodes x resources),
    built once per pass rather than once per candidate checked against it. ``free``
    saturates at int64 (for comparisons); ``exact`` holds the amounts as Python integers
    (for sums)."""

    rows: Mapping[str, int]  # node name -> its row
    columns: Mapping[str, int]  # resource name -> its column
    free: np.ndarray
    exact: np.ndarray
    # (resource names) -> the rooms in those columns: every candidate of a pass asks
    # for the same few, and a copy per candidate was quadratic in nodes per pass
    _selected: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(cls, by_node: Mapping[str, Mapping[str, int]]) -> Rooms:
        names = sorted({name for room in by_node.values() for name in room})
        rooms = list(by_node.values())
        return cls(
            {node: row for row, node in enumerate(by_node)},
            {name: column for column, name in enumerate(names)},
            _matrix(rooms, names),
            _exact(rooms, names),
        )

    def in_columns(self, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Every node's room in the resources ``names`` (0 where a node has none of one):
        saturated and exact. Read only."""
        found = self._selected.get(names)
        if found is None:
            columns = [self.columns.get(name) for name in names]
            found = self._selected[names] = (
                _columns(self.free, columns, np.int64),
                _columns(self.exact, columns, object),
            )
        return found


def _columns(matrix: np.ndarray, columns: Sequence[int | None], dtype: Any) -> np.ndarray:
    chosen = np.zeros((matrix.shape[0], len(columns)), dtype=dtype)
    for index, column in enumerate(columns):
        if column is not None:
            chosen[:, index] = matrix[:, column]
    return chosen


@dataclass(frozen=True)
class PodShapes:
    """Pods' requests as the distinct requests (rows over ``names``) with how many pods
    ask for each: pods of one workload ask for the same. ``shapes`` saturates at int64
    (for comparisons); ``exact`` holds the amounts as Python integers (for sums)."""

    names: tuple[str, ...]
    shapes: np.ndarray
    exact: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, requests: Sequence[Mapping[str, int]]) -> PodShapes:
        names = sorted({name for r in requests for name in r})
        counted = Counter(tuple(r.get(name, 0) for name in names) for r in requests)
        distinct = [dict(zip(names, shape, strict=True)) for shape in counted]
        return cls(
            tuple(names),
            _matrix(distinct, names),
            _exact(distinct, names),
            np.array(list(counted.values()), dtype=np.int64),
        )


def least_replacement_load(pods: PodShapes, rooms: Rooms, node: str = "") -> dict[str, int]:
    """The least a replacement for ``node`` must hold of these ``pods`` when the other
    nodes have their ``rooms`` free: the pods that fit in no room, plus what the rest need
    beyond the rooms that can take at least one of them (each resource on its own). Empty
    when they might all fit elsewhere."""
    if not pods.names:
        return {}
    free, free_exact = rooms.in_columns(pods.names)  # rooms x resources
    fit = (pods.shapes[:, None, :] <= free[None, :, :]).all(axis=2)  # shape fits room
    own = rooms.rows.get(node)
    if own is not None:  # the node's own room is not somewhere else to go
        fit[:, own] = False
    movable, usable = fit.any(axis=1), fit.any(axis=0)
    # Sums in Python integers: a count of pods times a request, or many rooms together,
    # would overflow int64.
    need = pods.exact * pods.counts.astype(object)[:, None]
    beyond = need[movable].sum(axis=0) - free_exact[usable].sum(axis=0)
    load = need[~movable].sum(axis=0) + np.maximum(beyond, 0)
    return {name: int(n) for name, n in zip(pods.names, load, strict=True) if n > 0}


def _exact(lists: Sequence[Mapping[str, int]], names: Sequence[str]) -> np.ndarray:
    rows = [[resources.get(name, 0) for name in names] for resources in lists]
    return np.array(rows, dtype=object).reshape(len(lists), len(names))


def _matrix(lists: Sequence[Mapping[str, int]], names: list[str]) -> np.ndarray:
    dims = Dimensions(names)
    rows = [dims.vector(resources) for resources in lists]
    return np.array(rows, dtype=np.int64).reshape(len(lists), len(names))


# Each instance type list's allocatable as a matrix (types x resources), while the list
# is the same object (the controller works out one list per pass).
_ALLOCATABLE: IdentityCache[tuple[dict[str, int], np.ndarray]] = IdentityCache(8)


def _fitting(
    requests: Mapping[str, int], instance_types: Sequence[InstanceType]
) -> list[InstanceType]:
    """The types whose allocatable holds ``requests`` (``resources.fits`` of each, at once)."""
    columns, allocatable = _ALLOCATABLE.remember(
        (instance_types,), lambda: _allocatable_matrix(instance_types)
    )
    fit = np.ones(len(instance_types), dtype=bool)
    for name, amount in requests.items():
        column = columns.get(name)
        if not amount:
            continue
        fit &= amount <= (0 if column is None else allocatable[:, column])
    return [it for it, fits in zip(instance_types, fit, strict=True) if fits]


def _allocatable_matrix(
    instance_types: Sequence[InstanceType],
) -> tuple[dict[str, int], np.ndarray]:
    names = sorted({name for it in instance_types for name in it.allocatable})
    return {name: column for column, name in enumerate(names)}, _matrix(
        [it.allocatable for it in instance_types], names
    )


def no_cheaper_home(
    candidate: Candidate,
    shortfall: Mapping[str, int],
    instance_types: Sequence[InstanceType],
    options: ConsolidationOptions,
) -> str | None:
    """Why ``candidate`` alone cannot be consolidated when its pods need ``shortfall`` more
    than the free room elsewhere: its replacement would have to hold at least that, and no
    instance type that can is cheap enough (for spot-to-spot: not 15 of them). None when
    one might be, or when nothing holds it (the simulation then says what is missing)."""
    fitting = _fitting(shortfall, instance_types)
    if not fitting:
        return None
    spot = other = 0
    for instance_type in fitting:
        cheaper = {
            o.capacity_type
            for o in instance_type.offerings
            if o.available and o.price < candidate.price
        }
        spot += wk.CAPACITY_TYPE_SPOT in cheaper
        other += bool(cheaper - {wk.CAPACITY_TYPE_SPOT})
    if other:
        return None
    if candidate.capacity_type != wk.CAPACITY_TYPE_SPOT:
        return None if spot else "replacement not cheaper"
    if not options.spot_to_spot:
        return "spot-to-spot consolidation is disabled (SpotToSpotConsolidation)"
    if spot >= SPOT_TO_SPOT_MIN_TYPES:
        return None
    return f"spot-to-spot needs {SPOT_TO_SPOT_MIN_TYPES} cheaper types, found {spot}"


def _round_robin(candidates: Sequence[Candidate]) -> list[Candidate]:
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.pool.name, []).append(candidate)
    queues = [by_pool[name] for name in sorted(by_pool)]
    ordered: list[Candidate] = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def unplaceable_reason(plan: Plan) -> str:
    key, why = next(iter(plan.unplaceable.items()))
    more = len(plan.unplaceable) - 1
    suffix = f" (and {more} more)" if more else ""
    return f"pod {key} cannot be rescheduled: {why.constraint}: {why.message}{suffix}"
