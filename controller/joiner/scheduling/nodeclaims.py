"""NodeClaims opened during a solve, and their finalisation into plans [SPEC 3.9, 3.10]."""

from __future__ import annotations

from typing import Any

import numpy as np

from joiner.api import labels as wk
from joiner.api.requirements import IN, NOT_IN, Requirement, Requirements
from joiner.scheduling.catalog import PoolCatalog
from joiner.scheduling.model import NodeClaimPlan

MAX_INSTANCE_TYPES = 60  # candidates sent to the launch [SPEC 3.10]


class Draft:
    """A NodeClaim being filled: its requirements narrow and its candidate types
    (indexes into the pool's catalogue) shrink as pods are added."""

    __slots__ = (
        "_bounds_for",
        "_cells",
        "_cells_for",
        "_domains",
        "_fewest",
        "_least",
        "_most",
        "_pinned",
        "_price",
        "_reserved",
        "_reserved_for",
        "_room",
        "avail",
        "count",
        "free",
        "hostname",
        "idx",
        "pods",
        "pool",
        "ports",
        "requirements",
        "sig",
        "used",
    )

    def __init__(
        self,
        pool: PoolCatalog,
        hostname: str,
        requirements: Requirements,
        signature: str,
        idx: np.ndarray,
        free: np.ndarray,
    ) -> None:
        self.pool = pool
        self.hostname = hostname
        self.requirements = requirements
        self.sig = signature
        self.idx = idx
        self.free = free  # [t, d]: each type's allocatable less its daemonsets' requests
        self.used = np.zeros(free.shape[1], dtype=np.int64)  # the pods' requests
        # [d, i]: what candidate idx[i] has left of dimension d (free - used); by dimension,
        # so that reductions over the candidates run along contiguous rows
        self.avail = np.ascontiguousarray(free[idx].T)
        self.pods: list[str] = []
        self.count = 0  # len(pods), kept for fast sorting
        self.ports: set[tuple[str, str, int]] = set()
        self._bounds_for = -1
        self._most: np.ndarray = np.zeros(0, dtype=np.int64)
        self._fewest: np.ndarray = self._most
        self._room: list[int] | None = None
        self._least: list[int] | None = None
        self._reserved_for = -1
        self._reserved: np.ndarray = np.zeros(0, dtype=np.int64)
        self._price: float | None = None
        self._cells_for = -1
        self._cells: list[bool] = []
        self._domains: dict[str, list[str]] = {}  # per key, under the requirements
        self._pinned: dict[str, str | None] = {}  # likewise

    @property
    def room(self) -> list[int]:
        """Per dimension, the most any candidate type still has free (a quick pre-check),
        worked out when asked after a change."""
        if self._room is None:
            self._room = (self._bounds()[0] - self.used).tolist()
        return self._room

    @property
    def least(self) -> list[int]:
        """Per dimension, the least any candidate type still has free: requests within it
        fit on every candidate. Worked out as ``room`` is."""
        if self._least is None:
            self._least = (self._bounds()[1] - self.used).tolist()
        return self._least

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``free[idx]``'s most and least per dimension. Candidates only ever shrink to a
        subset, so their number tells whether the last ones computed still hold."""
        if self._bounds_for != len(self.idx):
            self._most = self.avail.max(axis=1) + self.used
            self._fewest = self.avail.min(axis=1) + self.used
            self._bounds_for = len(self.idx)
        return self._most, self._fewest

    def add(
        self,
        requirements: Requirements,
        signature: str,
        idx: np.ndarray,
        requests: np.ndarray,
        keys: list[str],
        avail: np.ndarray | None = None,
    ) -> None:
        """Take the pods ``keys`` (each requesting ``requests``), keeping the candidates
        ``idx``; ``avail``, when the caller has it, is ``self.avail``'s columns of those."""
        if avail is None:
            avail = self.free[idx].T - self.used[:, None]
        if signature != self.sig:
            self._domains, self._pinned = {}, {}
        if signature != self.sig or len(idx) != len(self.idx):
            self._price = None
        taken = requests * len(keys)
        # C order: a transposed or column-selected input would make every later
        # reduction over the candidates a strided one
        self.avail = np.subtract(avail, taken[:, None], order="C")
        self.requirements = requirements
        self.sig = signature
        self.idx = idx
        self.used = self.used + taken
        self.pods.extend(keys)
        self.count = len(self.pods)
        self._room = self._least = None

    def domains(self, key: str) -> list[str]:
        """The values ``key`` may still take on this node (kept while the requirements
        stay the same: every pod placed asks them of each topology group counting it)."""
        if key == wk.HOSTNAME:
            return [self.hostname]
        found = self._domains.get(key)
        if found is None:
            requirement = self.requirements.get_requirement(key)
            found = sorted(v for v in self.pool.domains(key) if requirement.has(v))
            self._domains[key] = found
        return found

    def pinned(self, key: str) -> str | None:
        """The one value the requirements allow for ``key``, if they name exactly one
        (kept as ``domains`` is: asked of every claim passed over for each pod)."""
        if key in self._pinned:
            return self._pinned[key]
        requirement = self.requirements.get(key)
        value = None
        if requirement is not None and not requirement.complement and len(requirement.values) == 1:
            value = next(iter(requirement.values))
        self._pinned[key] = value
        return value

    def offered_cells(self) -> list[bool]:
        """``PoolCatalog.offered_cells`` of the candidates, kept as ``_bounds`` are."""
        if self._cells_for != len(self.idx):
            self._cells = self.pool.offered_cells(self.idx)
            self._cells_for = len(self.idx)
        return self._cells

    def price(self) -> float:
        """The cheapest offering of any candidate type under the requirements, kept while
        they and the candidates stay the same (candidates only ever shrink to a subset,
        so their number tells)."""
        if self._price is None:
            prices = self.pool.type_prices(self.requirements, self.sig)
            self._price = float(prices[self.idx].min())
        return self._price

    def reservation(self) -> np.ndarray:
        """What this NodeClaim may take from its pool's limits: the largest capacity
        among its candidate types [SPEC 3.9]. Candidates only ever shrink to a subset,
        so their number tells whether the last answer still holds."""
        if self._reserved_for != len(self.idx):
            self._reserved = self.pool.capacity[self.idx].max(axis=0)
            self._reserved_for = len(self.idx)
        return self._reserved


def finalize(draft: Draft, slots: dict[str, int]) -> NodeClaimPlan:
    """The draft as a plan; ``slots`` (reservation id -> free slots) loses the one it
    takes, if it launches into a reservation."""
    pool = draft.pool
    full, signature, idx = take_reserved_slot(draft, slots)
    requirements = Requirements(r for k, r in full.items() if k != wk.HOSTNAME)
    # the hostname placeholder restricts no offering: the draft's own prices hold
    cheapest = pool.type_prices(full, signature)[idx]
    order = np.lexsort((idx, cheapest))
    ranked = idx[order]
    chosen = ranked[: _candidate_count(pool, ranked)]
    offered = pool.offered_values(requirements, chosen, wk.CAPACITY_TYPE)
    capacity_types = [c for c in pool.capacity_types if c in offered]
    requirements.add(Requirement.new(wk.CAPACITY_TYPE, IN, capacity_types))
    names = [pool.names[i] for i in chosen.tolist()]
    # what every candidate's node runs besides the pods (each has room for its own)
    overhead = pool.overhead_rows(requirements, chosen).min(axis=0)
    pod_requests = draft.used
    return NodeClaimPlan(
        nodepool=pool.name,
        hostname=draft.hostname,
        requirements=requirement_dicts(requirements, names),
        instance_types=names,
        requests=pool.dims.to_list(pod_requests + overhead),
        daemonset_overhead=pool.dims.to_list(overhead),
        taints=[dict(t) for t in pool.taints],
        startup_taints=[dict(t) for t in pool.startup_taints],
        labels=_labels(pool, requirements),
        pods=list(draft.pods),
        price=float(cheapest[order[0]]),
    )


def take_reserved_slot(draft: Draft, slots: dict[str, int]) -> tuple[Requirements, str, np.ndarray]:
    """The requirements, their signature and the candidates the plan launches with. A
    NodeClaim that may launch into a reservation (reserved allowed, a candidate with a
    reserved offering in an allowed zone) takes a free slot of one (the first by id);
    when they have none left, the plan is the next capacity type the pool allows, as if
    the reservations were full, and keeps the candidates that have such an offering.
    Offered nothing but the full reservations, it is left as it is: the launch finds
    them full and the pods are provisioned again."""
    pool, requirements = draft.pool, draft.requirements
    if not pool.reserved or not requirements.get_requirement(wk.CAPACITY_TYPE).has(
        wk.CAPACITY_TYPE_RESERVED
    ):
        return requirements, draft.sig, draft.idx
    zone = requirements.get_requirement(wk.ZONE)
    chosen = requirements.get_requirement(wk.CAPACITY_RESERVATION_ID)
    candidates = set(draft.idx.tolist())
    usable = sorted(
        {r for t, z, r in pool.reserved if t in candidates and zone.has(z) and chosen.has(r)}
    )
    if not usable:
        return requirements, draft.sig, draft.idx
    free = next((r for r in usable if slots.get(r, 0) > 0), None)
    if free is not None:
        slots[free] -= 1
        return requirements, draft.sig, draft.idx
    fallback = requirements.copy().add(
        Requirement.new(wk.CAPACITY_TYPE, NOT_IN, [wk.CAPACITY_TYPE_RESERVED])
    )
    signature = f"{draft.sig}|{wk.CAPACITY_TYPE} {NOT_IN} {wk.CAPACITY_TYPE_RESERVED}"
    idx = draft.idx[np.isfinite(pool.type_prices(fallback, signature)[draft.idx])]
    if not len(idx):
        return requirements, draft.sig, draft.idx
    return fallback, signature, idx


def _candidate_count(pool: PoolCatalog, ranked: np.ndarray) -> int:
    """At most 60, unless fewer would break the pool's minValues."""
    count = min(MAX_INSTANCE_TYPES, len(ranked))
    while count < len(ranked) and pool.min_values_shortfall(ranked[:count]) is not None:
        count += 1
    return count


def requirement_dicts(requirements: Requirements, names: list[str]) -> list[dict[str, Any]]:
    """Sorted by key, with the instance types in cheapest-first order (not sorted)."""
    out: list[dict[str, Any]] = []
    instance_type = requirements.get(wk.INSTANCE_TYPE)
    for key in sorted({*requirements.keys(), wk.INSTANCE_TYPE}):
        if key != wk.INSTANCE_TYPE:
            out.extend(requirements[key].to_dicts())
            continue
        entry: dict[str, Any] = {"key": key, "operator": IN, "values": names}
        if instance_type is not None and instance_type.min_values is not None:
            entry["minValues"] = instance_type.min_values
        out.append(entry)
    return out


def _labels(pool: PoolCatalog, requirements: Requirements) -> dict[str, str]:
    """Template labels, the pool label, and every requirement narrowed to one value."""
    return {**pool.pool.template.labels, **pinned_labels(requirements), wk.NODEPOOL: pool.name}


def pinned_labels(requirements: Requirements) -> dict[str, str]:
    """The labels ``requirements`` narrow to one value (the hostname placeholder aside)."""
    return {
        key: next(iter(requirement.values))
        for key, requirement in requirements.items()
        if key != wk.HOSTNAME and not requirement.complement and len(requirement.values) == 1
    }
