"""Offerings (instance type x zone x capacity type) and which of them can launch now.

``UnavailableOfferings`` is the insufficient-capacity cache [SPEC 4.2, 4.6]: an offering
that failed with InsufficientInstanceCapacity is unavailable for 3 minutes of the
injected clock. The launch-time filters [SPEC 4.3] live here too: capacity-type order,
exotic types, spot dearer than on-demand.

A capacity reservation of the class (``status.capacityReservations``) adds a ``reserved``
offering of its type in its zone (priced by ``PricingProvider.price``: next to free), available
while the ledger has a free slot, the reservation is not expiring (a Capacity Block near its
end) and no interruption warning marked it unavailable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import RESERVATION_STATE_EXPIRING
from joiner.api.requirements import Requirements
from joiner.clock import Clock
from joiner.cloudprovider.aws.capacityreservations import ReservationLedger
from joiner.cloudprovider.aws.instancetypes import SUPPORTED_CAPACITY_TYPES
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.types import InstanceType, Offering

UNAVAILABLE_TTL_SECONDS = 180.0
# Labels that make a type "exotic": dropped at launch unless asked for [SPEC 4.3].
EXOTIC_LABELS = (wk.INSTANCE_GPU_COUNT, wk.INSTANCE_ACCELERATOR_COUNT)
METAL_SIZE = "metal"


class UnavailableOfferings:
    """(instance type, zone, capacity type) -> expiry time on the injected clock."""

    def __init__(self, clock: Clock, ttl_seconds: float = UNAVAILABLE_TTL_SECONDS) -> None:
        self._clock = clock
        self._ttl = ttl_seconds
        self._until: dict[tuple[str, str, str], float] = {}
        self._generation = 0

    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> None:
        self._until[(instance_type, zone, capacity_type)] = self._clock.now() + self._ttl
        self._generation += 1

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        until = self._until.get((instance_type, zone, capacity_type))
        return until is not None and until > self._clock.now()

    @property
    def generation(self) -> int:
        """Changes whenever availability changes (a mark, or an entry expiring)."""
        now = self._clock.now()
        expired = [key for key, until in self._until.items() if until <= now]
        for key in expired:
            del self._until[key]
        if expired:
            self._generation += 1
        return self._generation


def build_offerings(
    info: Mapping[str, Any],
    zones: Iterable[str],
    pricing: PricingProvider,
    unavailable: UnavailableOfferings,
) -> list[Offering]:
    """Every zone x capacity type EC2 supports for the type, priced, with availability."""
    name = info["InstanceType"]
    capacity_types = [
        SUPPORTED_CAPACITY_TYPES[c]
        for c in info.get("SupportedUsageClasses", ())
        if c in SUPPORTED_CAPACITY_TYPES
    ]
    return [
        Offering(
            zone=zone,
            capacity_type=capacity_type,
            price=pricing.price(info, capacity_type, zone),
            available=not unavailable.is_unavailable(name, zone, capacity_type),
        )
        for zone in sorted(zones)
        for capacity_type in capacity_types
    ]


def reserved_offerings(
    info: Mapping[str, Any],
    zones: Iterable[str],
    reservations: Sequence[Mapping[str, Any]],
    pricing: PricingProvider,
    availability: tuple[ReservationLedger, UnavailableOfferings],
) -> list[Offering]:
    """One ``reserved`` offering per reservation of the type in one of the zones."""
    name, zones = info["InstanceType"], set(zones)
    ledger, unavailable = availability
    return [
        Offering(
            zone=r["availabilityZone"],
            capacity_type=wk.CAPACITY_TYPE_RESERVED,
            price=pricing.price(info, wk.CAPACITY_TYPE_RESERVED, r["availabilityZone"]),
            available=ledger.available(r["id"]) > 0
            and r.get("state") != RESERVATION_STATE_EXPIRING
            and not unavailable.is_unavailable(
                name, r["availabilityZone"], wk.CAPACITY_TYPE_RESERVED
            ),
            reservation_id=r["id"],
            reservation_type=r.get("reservationType"),
            reservation_capacity=ledger.available(r["id"]),
        )
        for r in reservations
        if r["instanceType"] == name and r["availabilityZone"] in zones
    ]


def is_exotic(instance_type: InstanceType) -> bool:
    reqs = instance_type.requirements
    if reqs.get_requirement(wk.INSTANCE_SIZE).any_value() == METAL_SIZE:
        return True
    return any(reqs.get_requirement(key).any_value() not in (None, "0") for key in EXOTIC_LABELS)


def asks_for_exotic(requirements: Requirements) -> bool:
    """Whether the NodeClaim explicitly constrains GPUs, accelerators or metal sizes."""
    if any(key in requirements for key in EXOTIC_LABELS):
        return True
    size = requirements.get(wk.INSTANCE_SIZE)
    return size is not None and not size.complement and METAL_SIZE in size.values


def drop_exotic(
    instance_types: Sequence[InstanceType], requirements: Requirements
) -> list[InstanceType]:
    """Exotic types go unless asked for, or unless nothing else is left."""
    if asks_for_exotic(requirements):
        return list(instance_types)
    ordinary = [it for it in instance_types if not is_exotic(it)]
    return ordinary or list(instance_types)


def choose_capacity_type(
    instance_types: Sequence[InstanceType], requirements: Requirements
) -> str | None:
    """Reserved, then spot, then on-demand: the first the NodeClaim allows that has an
    available compatible offering [SPEC 4.3]."""
    allowed = requirements.get_requirement(wk.CAPACITY_TYPE)
    for capacity_type in wk.CAPACITY_TYPES:
        if not allowed.has(capacity_type):
            continue
        for it in instance_types:
            if any(o.capacity_type == capacity_type for o in it.compatible_offerings(requirements)):
                return capacity_type
    return None


def launchable_offerings(
    instance_types: Sequence[InstanceType], requirements: Requirements, capacity_type: str
) -> list[tuple[InstanceType, Offering]]:
    """(type, offering) pairs of the chosen capacity type, cheapest first; spot offerings
    dearer than the cheapest compatible on-demand offering are dropped."""
    pairs = [
        (it, o)
        for it in instance_types
        for o in it.compatible_offerings(requirements)
        if o.capacity_type == capacity_type
    ]
    if capacity_type == wk.CAPACITY_TYPE_SPOT and requirements.get_requirement(
        wk.CAPACITY_TYPE
    ).has(wk.CAPACITY_TYPE_ON_DEMAND):
        cheapest_on_demand = min(
            (
                o.price
                for it in instance_types
                for o in it.offerings
                if o.capacity_type == wk.CAPACITY_TYPE_ON_DEMAND
                and o.available
                and requirements.get_requirement(wk.ZONE).has(o.zone)
            ),
            default=None,
        )
        if cheapest_on_demand is not None:
            pairs = [(it, o) for it, o in pairs if o.price <= cheapest_on_demand]
    return sorted(pairs, key=lambda pair: (pair[1].price, pair[0].name, pair[1].zone))
