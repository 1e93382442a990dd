"""A pool's instance types as NumPy arrays, for vectorised fit checks [SPEC 3.5, 3.9].

Rows are instance types; ``allocatable`` columns are the resource dimensions of
the solve; ``prices[t, z, c]`` is the price of type t in zone z with capacity
type c (infinity when there is no such available offering).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.api.resources import ResourceList
from joiner.cloudprovider.types import InstanceType
from joiner.identity import IdentityCache
from joiner.scheduling.model import DaemonSet
from joiner.scheduling.taints import untolerated

# Where quantities become int64 vectors, amounts saturate at +-2**62 milli-units: more
# than any node or pool holds (4 PiB of memory, 4.6e15 CPUs), so a saturated request
# still fits no instance type and a saturated limit still admits every one, exactly as
# the unbounded amounts would; and the sum or difference of two saturated amounts
# cannot overflow. Arithmetic on unbounded totals (pool usage, limits) stays in Python
# integers until it is compared with a vector.
VECTOR_LIMIT = 2**62


class Dimensions:
    """Resource names <-> column indexes."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.index = {name: i for i, name in enumerate(self.names)}

    def vector(self, resources: Mapping[str, int]) -> np.ndarray:
        """The amounts of ``resources`` in column order, saturated at ``VECTOR_LIMIT``."""
        out = np.zeros(len(self.names), dtype=np.int64)
        for name, amount in resources.items():
            column = self.index.get(name)
            if column is not None:
                out[column] = max(-VECTOR_LIMIT, min(amount, VECTOR_LIMIT))
        return out

    def to_list(self, vector: np.ndarray) -> ResourceList:
        return {name: int(vector[i]) for i, name in enumerate(self.names) if vector[i]}


# Catalogues of recent solves, by the pool object, its instance type list and daemonset
# templates they were built from: these stay the same objects between changes, and
# building the arrays for a large catalogue is most of a small solve.
_catalogs: IdentityCache[PoolCatalog] = IdentityCache(64)


def pool_catalog(
    pool: NodePool,
    instance_types: Sequence[InstanceType],
    dims: Dimensions,
    daemonsets: Sequence[tuple[DaemonSet, ResourceList]],
) -> PoolCatalog:
    """``PoolCatalog(...)``, or the one built from the very same inputs (its caches are
    pure functions of them, so they carry over)."""
    overheads = tuple((d.name, tuple(sorted(r.items()))) for d, r in daemonsets)
    return _catalogs.remember(
        (pool, instance_types, *(d.pod_template for d, _ in daemonsets)),
        lambda: PoolCatalog(pool, instance_types, dims, daemonsets),
        key=(tuple(dims.names), overheads),
    )


class PoolCatalog:
    """One NodePool with its instance types as arrays, its daemonset overhead, and
    caches of which types each set of requirements admits."""

    def __init__(
        self,
        pool: NodePool,
        instance_types: Sequence[InstanceType],
        dims: Dimensions,
        daemonsets: Sequence[tuple[DaemonSet, ResourceList]],
    ) -> None:
        self.pool = pool
        self.name = pool.name
        self.weight = pool.weight or 0
        self.requirements = pool.requirements()
        self.taints = list(pool.template.taints)
        self.startup_taints = list(pool.template.startup_taints)
        self.types = list(instance_types)
        self.names = [it.name for it in self.types]
        self.dims = dims
        self.allocatable = np.array(
            [dims.vector(it.allocatable) for it in self.types], dtype=np.int64
        ).reshape(len(self.types), len(dims.names))
        self.limits = pool.limits_milli
        limit_names = [n for n in self.limits if n != res.NODES]
        self.limit_dims = Dimensions(limit_names)
        self.capacity = np.array(
            [self.limit_dims.vector(it.capacity) for it in self.types], dtype=np.int64
        ).reshape(len(self.types), len(limit_names))
        self.largest_capacity = self.capacity.max(axis=0, initial=0)  # per limited dimension
        # only where something can launch: a zone without an available offering is no
        # topology domain of the pool (as the types' zone requirements are in Karpenter)
        available = [o for it in self.types for o in it.offerings if o.available]
        self.zones = sorted({o.zone for o in available})
        self.capacity_types = sorted({o.capacity_type for o in available})
        self._offered = (
            Requirement.new(wk.ZONE, IN, self.zones),
            Requirement.new(wk.CAPACITY_TYPE, IN, self.capacity_types),
        )
        # (type index, zone, reservation id) of each available reserved offering, and each
        # reservation's free slots: what the NodeClaims planned in one solve share out
        self.reserved: list[tuple[int, str, str]] = []
        self.reservation_slots: dict[str, int] = {}
        self.prices = self._price_cube()
        # [z * c, t]: whether type t has an available offering in that cell (by cell, so
        # that reductions over types run along contiguous rows)
        self._available = np.ascontiguousarray(
            np.isfinite(self.prices)
            .reshape(len(self.types), len(self.zones) * len(self.capacity_types))
            .T
        )
        # per (zones allowed, capacity types allowed): at most 2**(zones + capacity types)
        self._offerings: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._daemonsets = daemonsets
        self._all = np.arange(len(self.types))
        self._free: dict[str, np.ndarray] = {}
        self.daemon_overhead = dims.vector(self.overhead_for(self.requirements))
        # the pool's own requirements: what repacking fills
        self.free = self.free_for(self.requirements, repr(self.requirements.to_dicts()))
        self._compatible: dict[str, np.ndarray] = {}
        self._type_prices: dict[str, np.ndarray] = {}
        self._min_value_codes: dict[str, np.ndarray] = {}
        self._domains: dict[str, frozenset[str]] = {}
        self.min_values = {
            key: r.min_values for key, r in self.requirements.items() if r.min_values is not None
        }

    def _price_cube(self) -> np.ndarray:
        """[t, z, c] prices of the available offerings; ``reserved`` and
        ``reservation_slots`` are filled on the way (one pass over the offerings)."""
        zone_index = {z: i for i, z in enumerate(self.zones)}
        ct_index = {c: i for i, c in enumerate(self.capacity_types)}
        prices = np.full((len(self.types), len(self.zones), len(self.capacity_types)), np.inf)
        for t, it in enumerate(self.types):
            for o in it.offerings:
                if o.available:
                    z, c = zone_index[o.zone], ct_index[o.capacity_type]
                    prices[t, z, c] = min(prices[t, z, c], o.price)
                    if o.reservation_id is not None:
                        self.reserved.append((t, o.zone, o.reservation_id))
                        self.reservation_slots[o.reservation_id] = o.reservation_capacity
        return prices

    # --- requirements -> types --------------------------------------------------------

    def offering_prices(self, requirements: Requirements) -> np.ndarray:
        """[t, z, c] prices restricted to the zones and capacity types allowed (read-only:
        one array per distinct set of those, shared by every caller)."""
        return self._offerings_allowed(requirements)[0]

    def cell_prices(self, requirements: Requirements) -> np.ndarray:
        """``offering_prices`` by cell, [z * c, t] in C order: a reduction over some types
        runs along contiguous rows (over [t, z, c] it strides, and costs about five times
        as much). Read-only and shared, as ``offering_prices``."""
        return self._offerings_allowed(requirements)[1]

    def offered_values(self, requirements: Requirements, idx: np.ndarray, key: str) -> set[str]:
        """The zones (``key`` the zone label) or capacity types in which some type of
        ``idx`` has an available offering that the requirements allow."""
        return self.values_offered(requirements, self.offered_cells(idx), key)

    def offered_cells(self, idx: np.ndarray) -> list[bool]:
        """Per [zone, capacity type] cell (zone by zone), whether some type of ``idx`` has
        an available offering there."""
        # take, not [:, idx]: its result is C-ordered, so the reduction runs along rows
        return self._available.take(idx, axis=1).any(axis=1).tolist()

    def values_offered(
        self, requirements: Requirements, cells: Sequence[bool], key: str
    ) -> set[str]:
        """``offered_values`` from the types' ``offered_cells`` (a handful of cells: plain
        Python, where NumPy's calls cost more than the work)."""
        zone = requirements.get_requirement(wk.ZONE)
        capacity_type = requirements.get_requirement(wk.CAPACITY_TYPE)
        cell = iter(cells)
        offered = [
            (z, c)
            for z in self.zones
            for c in self.capacity_types
            if next(cell) and zone.has(z) and capacity_type.has(c)
        ]
        return {z if key == wk.ZONE else c for z, c in offered}

    def _offerings_allowed(self, requirements: Requirements) -> tuple[np.ndarray, np.ndarray]:
        """``offering_prices`` and ``cell_prices``."""
        zone = requirements.get_requirement(wk.ZONE)
        capacity_type = requirements.get_requirement(wk.CAPACITY_TYPE)
        zones = tuple(zone.has(z) for z in self.zones)
        cts = tuple(capacity_type.has(c) for c in self.capacity_types)
        found = self._offerings.get((zones, cts))
        if found is None:
            allowed = np.array(zones, dtype=bool)[:, None] & np.array(cts, dtype=bool)[None, :]
            prices = np.where(allowed[None, :, :], self.prices, np.inf)
            by_cell = np.ascontiguousarray(prices.reshape(len(self.types), allowed.size).T)
            for array in (prices, by_cell):
                array.setflags(write=False)
            found = self._offerings[zones, cts] = (prices, by_cell)
        return found

    def type_prices(self, requirements: Requirements, signature: str) -> np.ndarray:
        """Per type, its cheapest offering the requirements allow (infinity: none)."""
        found = self._type_prices.get(signature)
        if found is None:
            found = self._type_prices[signature] = self.offering_prices(requirements).min(
                axis=(1, 2), initial=np.inf
            )
        return found

    def compatible_types(self, requirements: Requirements, signature: str) -> np.ndarray:
        """Boolean mask of types whose labels intersect ``requirements`` and that have an
        available offering they allow."""
        found = self._compatible.get(signature)
        if found is None:
            by_labels = self.label_compatible(requirements)
            offered = np.isfinite(self.offering_prices(requirements)).any(axis=(1, 2))
            found = by_labels & offered
            self._compatible[signature] = found
        return found

    def label_compatible(self, requirements: Requirements) -> np.ndarray:
        return np.array(
            [it.requirements.is_intersecting(requirements) for it in self.types], dtype=bool
        ).reshape(len(self.types))

    # --- daemonsets -------------------------------------------------------------------

    def overhead_for(self, requirements: Requirements) -> ResourceList:
        """Requests of the daemonsets that would run on some node with these requirements
        and this pool's taints. The node's zone and capacity type are among those an
        available offering has, so a daemonset selecting others does not run there (as
        Karpenter judges it)."""
        return self.dims.to_list(self.overhead_rows(requirements, self._all).max(axis=0, initial=0))

    def free_for(self, requirements: Requirements, signature: str) -> np.ndarray:
        """[t, d]: per type, its allocatable less the requests of the daemonsets a node of
        that type with these requirements would run."""
        found = self._free.get(signature)
        if found is None:
            found = self._free[signature] = self.allocatable - self.overhead_rows(
                requirements, self._all
            )
        return found

    def overhead_rows(self, requirements: Requirements, idx: np.ndarray) -> np.ndarray:
        """[i, d]: the daemonsets' requests on a node of type ``idx[i]`` with these
        requirements. A daemonset runs there when it tolerates the pool's taints and its
        node selection admits the requirements narrowed by that type's labels, zones and
        capacity types (so one selecting on-demand or GPU types adds nothing to others,
        as in Karpenter)."""
        rows = np.zeros((len(idx), len(self.dims.names)), dtype=np.int64)
        if not self._daemonsets:
            return rows
        requirements = requirements.intersection(Requirements(self._offered))
        for daemonset, requests in self._daemonsets:
            spec = daemonset.pod_template.get("spec") or {}
            if untolerated(spec.get("tolerations") or (), self.taints, False) is not None:
                continue
            wanted = Requirements.for_pod(daemonset.pod_template)
            if requirements.compatible(wanted) is not None:
                continue
            runs = self._runs_on(requirements, wanted, idx)
            rows[runs] += self.dims.vector(requests)
        return rows

    def _runs_on(
        self, requirements: Requirements, wanted: Requirements, idx: np.ndarray
    ) -> np.ndarray:
        """Per type in ``idx``, whether ``wanted`` admits the requirements narrowed by the
        type's own requirements on the keys ``wanted`` names (judged once per distinct
        set of those)."""
        verdicts: dict[tuple, bool] = {}
        runs = np.ones(len(idx), dtype=bool)
        for i, t in enumerate(idx.tolist()):
            own = tuple(self.types[t].requirements.get(key) for key in wanted)
            verdict = verdicts.get(own)
            if verdict is None:
                narrowed = requirements.intersection(Requirements(r for r in own if r is not None))
                verdict = verdicts[own] = narrowed.compatible(wanted) is None
            runs[i] = verdict
        return runs

    # --- minValues --------------------------------------------------------------------

    def value_codes(self, key: str) -> np.ndarray:
        """Per type, an integer code of its value for ``key`` (-1 when undefined)."""
        found = self._min_value_codes.get(key)
        if found is None:
            codes: dict[str, int] = {}
            values = []
            for it in self.types:
                requirement = it.requirements.get(key)
                value = requirement.any_value() if requirement is not None else None
                values.append(-1 if value is None else codes.setdefault(value, len(codes)))
            found = np.array(values, dtype=np.int64)
            self._min_value_codes[key] = found
        return found

    def min_values_shortfall(self, candidates: np.ndarray) -> tuple[str, str] | None:
        """The first key whose minValues the candidate types do not satisfy, with what is
        missing; None when they satisfy every one."""
        for key, wanted in self.min_values.items():
            codes = self.value_codes(key)[candidates]
            distinct = len(np.unique(codes[codes >= 0]))
            if distinct < wanted:
                return key, f"minValues {wanted} on {key} but only {distinct} value(s) remain"
        return None

    # --- topology domains -------------------------------------------------------------

    def domains(self, key: str) -> frozenset[str]:
        """Values ``key`` can take on a new node of this pool."""
        found = self._domains.get(key)
        if found is None:
            found = self._domains[key] = frozenset(self._compute_domains(key))
        return found

    def _compute_domains(self, key: str) -> set[str]:
        allowed = self.requirements.get_requirement(key)
        if key == wk.ZONE:
            values = set(self.zones)
        elif key == wk.CAPACITY_TYPE:
            values = set(self.capacity_types)
        else:
            values = {
                v
                for it in self.types
                if (r := it.requirements.get(key)) is not None and not r.complement
                for v in r.values
            }
        if not allowed.complement:  # the pool names these domains, offered or not
            values |= set(allowed.values)
        return {v for v in values if allowed.has(v)}
