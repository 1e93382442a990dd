"""The CloudProvider port and the instance-type model the scheduler reads.

An ``InstanceType`` carries its well-known labels as ``Requirements`` (zone and
capacity type span its offerings), its capacity, the overhead reserved on the
node, and its ``Offering``s: zone x capacity type, each with a price and
whether it can be launched now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.ec2nodeclass import RESERVATION_TYPE_DEFAULT, EC2NodeClass
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.api.resources import ResourceList

RESERVATION_LABELS = (wk.CAPACITY_RESERVATION_ID, wk.CAPACITY_RESERVATION_TYPE)


def reservation_labels(reservation_id: str | None, reservation_type: str | None) -> dict[str, str]:
    """The labels of a node in a capacity reservation (none outside one)."""
    if reservation_id is None:
        return {}
    return {
        wk.CAPACITY_RESERVATION_ID: reservation_id,
        wk.CAPACITY_RESERVATION_TYPE: reservation_type or RESERVATION_TYPE_DEFAULT,
    }


@dataclass(frozen=True, slots=True)
class Offering:
    zone: str
    capacity_type: str
    price: float
    available: bool = True
    # capacity type reserved: the capacity reservation and its type (default, capacity-block)
    reservation_id: str | None = None
    reservation_type: str | None = None
    # capacity type reserved: its free slots when the offerings were made (launches in
    # flight taken off), which the scheduler shares out among the NodeClaims it plans
    reservation_capacity: int = 0

    def requirements(self) -> Requirements:
        requirements = Requirements(
            [
                Requirement.new(wk.ZONE, IN, [self.zone]),
                Requirement.new(wk.CAPACITY_TYPE, IN, [self.capacity_type]),
            ]
        )
        for key, value in self.reservation_labels().items():
            requirements.add(Requirement.new(key, IN, [value]))
        return requirements

    def reservation_labels(self) -> dict[str, str]:
        """The capacity reservation labels of a node launched from this offering."""
        return reservation_labels(self.reservation_id, self.reservation_type)

    def meets_reservation(self, requirements: Requirements) -> bool:
        """Whether the requirements on the reservation labels (if any) allow this offering;
        an offering outside any reservation has no such labels."""
        labels = self.reservation_labels()
        for key in RESERVATION_LABELS:
            if key not in requirements:
                continue
            requirement = requirements.get_requirement(key)
            value = labels.get(key)
            if not (requirement.allows_absence() if value is None else requirement.has(value)):
                return False
        return True


@dataclass(slots=True)
class Overhead:
    kube_reserved: ResourceList = field(default_factory=dict)
    system_reserved: ResourceList = field(default_factory=dict)
    eviction_threshold: ResourceList = field(default_factory=dict)

    def total(self) -> ResourceList:
        return res.add(self.kube_reserved, self.system_reserved, self.eviction_threshold)


@dataclass
class InstanceType:
    name: str
    requirements: Requirements
    offerings: list[Offering]
    capacity: ResourceList
    overhead: Overhead = field(default_factory=Overhead)

    @cached_property
    def allocatable(self) -> ResourceList:
        """Capacity minus overhead, never negative."""
        reserved = self.overhead.total()
        return {
            name: max(0, amount - reserved.get(name, 0)) for name, amount in self.capacity.items()
        }

    def available_offerings(self) -> list[Offering]:
        return [o for o in self.offerings if o.available]

    def compatible_offerings(self, requirements: Requirements) -> list[Offering]:
        zones = requirements.get_requirement(wk.ZONE)
        capacity_types = requirements.get_requirement(wk.CAPACITY_TYPE)
        by_reservation = any(key in requirements for key in RESERVATION_LABELS)
        return [
            o
            for o in self.offerings
            if o.available
            and zones.has(o.zone)
            and capacity_types.has(o.capacity_type)
            and (not by_reservation or o.meets_reservation(requirements))
        ]

    def cheapest_price(self, requirements: Requirements | None = None) -> float | None:
        offerings = (
            self.compatible_offerings(requirements)
            if requirements is not None
            else self.available_offerings()
        )
        return min((o.price for o in offerings), default=None)


# (instance type, zone, capacity type) -> the price a launch weighs the offering at: the
# NodeOverlay-adjusted price, so the cloud launches in the order the scheduler priced.
LaunchPrices = Mapping[tuple[str, str, str], float]


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A Node condition that makes the node unhealthy [REPAIR-1]: once the condition has had
    ``condition_status`` for ``toleration`` seconds, node repair replaces the node."""

    condition_type: str
    condition_status: str  # "True", "False" or "Unknown"
    toleration: float  # seconds


# --- errors ------------------------------------------------------------------


class CloudProviderError(Exception):
    """Base for errors the controllers act on."""


class InsufficientCapacityError(CloudProviderError):
    """No requested offering could be launched; they are now marked unavailable."""


class NodeClaimNotFoundError(CloudProviderError):
    """The instance behind a NodeClaim does not exist (any more)."""


class NodeClassNotReadyError(CloudProviderError):
    """The NodeClaim's node class cannot be used to launch yet."""


# --- the port ----------------------------------------------------------------


@runtime_checkable
class CloudProvider(Protocol):
    """What controllers need from a cloud (mirrors Karpenter's interface).

    ``create`` launches one instance for the NodeClaim (the cheapest offering it can, at
    ``prices`` where given: EC2 Fleet's prioritized strategy) and returns the NodeClaim
    with ``status.providerID``, ``status.capacity``/``allocatable`` and the labels
    of what was launched (instance type, zone, capacity type, ...). It raises
    ``InsufficientCapacityError`` or ``NodeClassNotReadyError``.
    ``delete`` raises ``NodeClaimNotFoundError`` once the instance is gone.
    """

    name: str

    def create(self, nodeclaim: NodeClaim, prices: LaunchPrices | None = None) -> NodeClaim: ...

    def delete(self, nodeclaim: NodeClaim) -> None: ...

    def get(self, provider_id: str) -> NodeClaim: ...

    def list(self) -> list[NodeClaim]: ...

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]: ...

    def is_drifted(self, nodeclaim: NodeClaim) -> str | None:
        """A drift reason (e.g. ``AMIDrift``), or None."""
        ...

    def resolve_nodeclass(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        """The node class's status (what its selectors found) with its conditions."""
        ...

    def finalize_nodeclass(self, nodeclass: EC2NodeClass) -> None:
        """Remove what the provider created for a node class that is being deleted
        (launch templates, instance profiles), once no NodeClaim uses it."""
        ...

    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> None:
        """Keep the offering out of launches for a few minutes (e.g. after a spot
        interruption warning for it), as an insufficient-capacity error does."""
        ...

    def repair_policies(self) -> Sequence[RepairPolicy]:
        """The Node conditions that make a node unhealthy, and how long each is tolerated
        before node repair (gate NodeRepair) replaces the node [REPAIR-1]."""
        ...
