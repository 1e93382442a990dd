"""NodeOverlays applied to instance types [OVERLAY-2..5]: the one place where the
scheduler's and consolidation's prices and capacities are changed.

``resolve`` works out, from the overlays and each NodePool's instance types, which
overlay sets the price of each offering (pool, type, zone, capacity type) and which
extended resources each type gains; ``OverlaidCloudProvider`` hands every caller of
``get_instance_types`` the types with those changes applied.

Precedence, as upstream: overlays are taken highest ``weight`` first (unset is 0),
equal weights by name. A price is set by the first overlay that selects the offering;
an extended resource likewise. An overlay that would set a price or a resource that
an overlay of the same weight already sets conflicts: it is applied nowhere and its
status says so (``joiner.controllers.nodeoverlay``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodeoverlay import NodeOverlay, adjusted_price
from joiner.api.nodepool import NodePool
from joiner.api.requirements import Requirements
from joiner.api.resources import ResourceList
from joiner.cloudprovider.types import CloudProvider, InstanceType, LaunchPrices, Offering
from joiner.identity import IdentityCache


@dataclass(frozen=True)
class _Setting:
    """A value the first (highest) overlay set, and the weight of the last overlay that
    selected the same thing (the one a same-weight overlay would conflict with)."""

    value: Any
    last_weight: int


@dataclass
class TypeUpdate:
    prices: dict[tuple[str, str], _Setting] = field(default_factory=dict)  # (zone, ct)
    capacity: dict[str, _Setting] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolution:
    """What the overlays change, per (pool, instance type), and the overlays that
    conflict with one of the same weight."""

    updates: dict[tuple[str, str], TypeUpdate] = field(default_factory=dict)
    conflicts: frozenset[str] = frozenset()


def by_precedence(overlays: Iterable[NodeOverlay]) -> list[NodeOverlay]:
    """Highest weight first; equal weights in alphabetical order of name."""
    return sorted(overlays, key=lambda overlay: (-overlay.weight, overlay.name))


def resolve(
    overlays: Iterable[NodeOverlay],
    pools: Iterable[NodePool],
    instance_types: Callable[[NodePool], Sequence[InstanceType]],
) -> Resolution:
    catalog = [(pool, instance_types(pool)) for pool in pools]
    updates: dict[tuple[str, str], TypeUpdate] = {}
    conflicts: set[str] = set()
    for overlay in by_precedence(overlays):
        selected = list(_selected(overlay, catalog))
        if any(_conflicts(overlay, updates.get(key), offerings) for key, offerings in selected):
            conflicts.add(overlay.name)  # all or nothing: applied nowhere
            continue
        for key, offerings in selected:
            _record(overlay, updates.setdefault(key, TypeUpdate()), offerings)
    return Resolution(updates, frozenset(conflicts))


def _selected(
    overlay: NodeOverlay, catalog: list[tuple[NodePool, Sequence[InstanceType]]]
) -> Iterable[tuple[tuple[str, str], list[Offering]]]:
    """(pool, type) and the offerings of it the overlay selects, where it selects any."""
    for pool, types in catalog:
        pool_labels = Requirements.from_labels({**pool.template.labels, wk.NODEPOOL: pool.name})
        for it in types:
            offerings = _offerings(overlay.requirements, pool_labels, it)
            if offerings:
                yield (pool.name, it.name), offerings


def _offerings(wanted: Requirements, pool_labels: Requirements, it: InstanceType) -> list[Offering]:
    """The type's offerings (available now or not) ``wanted`` selects; none when it does
    not select the type itself (its labels, its pool's name and template labels)."""
    labels = Requirements(
        [
            *it.requirements.values(),
            *(r for k, r in pool_labels.items() if k not in it.requirements),
        ]
    )
    if not labels.is_compatible(wanted):
        return []
    zones, capacity_types = (
        wanted.get_requirement(wk.ZONE),
        wanted.get_requirement(wk.CAPACITY_TYPE),
    )
    return [o for o in it.offerings if zones.has(o.zone) and capacity_types.has(o.capacity_type)]


def _conflicts(overlay: NodeOverlay, update: TypeUpdate | None, offerings: list[Offering]) -> bool:
    if update is None:
        return False
    if overlay.price_update is not None and any(
        _same_weight(update.prices.get((o.zone, o.capacity_type)), overlay) for o in offerings
    ):
        return True
    return any(_same_weight(update.capacity.get(name), overlay) for name in overlay.capacity)


def _same_weight(setting: _Setting | None, overlay: NodeOverlay) -> bool:
    return setting is not None and setting.last_weight == overlay.weight


def _record(overlay: NodeOverlay, update: TypeUpdate, offerings: list[Offering]) -> None:
    if overlay.price_update is not None:
        for o in offerings:
            _keep_first(update.prices, (o.zone, o.capacity_type), overlay.price_update, overlay)
    for name, amount in overlay.capacity.items():
        _keep_first(update.capacity, name, amount, overlay)


def _keep_first(settings: dict[Any, _Setting], key: Any, value: Any, overlay: NodeOverlay) -> None:
    found = settings.get(key)
    settings[key] = _Setting(found.value if found else value, overlay.weight)


def apply(update: TypeUpdate, it: InstanceType) -> InstanceType:
    """A copy of ``it`` with the update's prices and extended resources."""
    offerings = [
        dataclasses.replace(o, price=adjusted_price(o.price, setting.value))
        if (setting := update.prices.get((o.zone, o.capacity_type))) is not None
        else o
        for o in it.offerings
    ]
    added: ResourceList = {name: setting.value for name, setting in update.capacity.items()}
    return InstanceType(it.name, it.requirements, offerings, {**it.capacity, **added}, it.overhead)


class OverlaidCloudProvider:
    """A cloud provider whose ``get_instance_types`` has the overlays applied (gate
    NodeOverlay); everything else is the wrapped provider's."""

    def __init__(self, cloud: CloudProvider) -> None:
        self._cloud = cloud
        self.resolution = Resolution()
        # (pool, base list) -> overlaid list, so the scheduler's caches keyed on the list's
        # identity keep working until the types or the overlays change
        self._applied: IdentityCache[list[InstanceType]] = IdentityCache(64)
        self._pools: dict[str, NodePool] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cloud, name)

    def base_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        return self._cloud.get_instance_types(nodepool)

    def set_resolution(self, resolution: Resolution) -> None:
        self.resolution = resolution
        self._applied = IdentityCache(64)

    def create(self, nodeclaim: NodeClaim, prices: LaunchPrices | None = None) -> NodeClaim:
        """Launched in the order of the overlaid prices (as upstream, EC2 Fleet's prioritized
        strategy); the NodeClaim's capacity and allocatable with the extended resources an
        overlay gives its type (what the node's device plugin will advertise)."""
        launched = self._cloud.create(
            self._without_overlay_resources(nodeclaim), prices or self._launch_prices(nodeclaim)
        )
        key = (launched.nodepool or "", launched.labels.get(wk.INSTANCE_TYPE, ""))
        update = self.resolution.updates.get(key)
        if update is not None and update.capacity:
            added = res.format_resource_list({n: s.value for n, s in update.capacity.items()})
            launched.status.capacity.update(added)
            launched.status.allocatable.update(added)
        return launched

    def _without_overlay_resources(self, nodeclaim: NodeClaim) -> NodeClaim:
        """The NodeClaim as the cloud is asked for it: without requests of the extended
        resources overlays add, which the cloud's own instance types do not list (the
        scheduler already chose types that have them)."""
        added = {name for update in self.resolution.updates.values() for name in update.capacity}
        requests = nodeclaim.resources.get("requests") or {}
        if not added & set(requests):
            return nodeclaim
        kept = {name: amount for name, amount in requests.items() if name not in added}
        return dataclasses.replace(nodeclaim, resources={**nodeclaim.resources, "requests": kept})

    def _launch_prices(self, nodeclaim: NodeClaim) -> LaunchPrices | None:
        """The overlaid prices of the NodeClaim's pool's offerings; None when no overlay
        prices one (the cloud's own prices and strategy then)."""
        pool = self._pools.get(nodeclaim.nodepool or "")
        if pool is None:
            return None
        updates = self.resolution.updates
        prices = {
            (it.name, o.zone, o.capacity_type): o.price
            for it in self.get_instance_types(pool)
            if (update := updates.get((pool.name, it.name))) is not None and update.prices
            for o in it.offerings
        }
        return prices or None

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        self._pools[nodepool.name] = nodepool  # the version the scheduler priced with
        base = self._cloud.get_instance_types(nodepool)
        if not self.resolution.updates:
            return base
        return self._applied.remember(
            (nodepool, base), lambda: self._apply(nodepool.name, base), key=nodepool.name
        )

    def _apply(self, pool: str, types: Sequence[InstanceType]) -> list[InstanceType]:
        updates = self.resolution.updates
        return [
            apply(updates[(pool, it.name)], it) if (pool, it.name) in updates else it
            for it in types
        ]
