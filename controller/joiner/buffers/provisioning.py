"""A resolved CapacityBuffer's ``Provisioning`` condition: how many of its chunks the
cluster holds and, when not all, why (the reason the last provisioning pass gave for a
chunk it could not place). The status, the metrics, the Events and the simulator's
views all read it from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from joiner.buffers.chunks import buffer_of
from joiner.buffers.holding import Placement
from joiner.buffers.resolution import Resolved
from joiner.scheduling import model as m
from joiner.scheduling.model import Unplaceable, pod_key

PROVISIONING = "Provisioning"
HELD = "CapacityHeld"
PENDING = "Pending"
# A chunk's unplaceable constraint -> the Provisioning reason.
UNPLACEABLE_REASONS = {
    m.POOL_LIMITS: "PoolLimitReached",
    m.RESOURCES: "NoOffering",  # no instance type has the room
    m.NO_INSTANCE_TYPE: "NoOffering",
    m.NO_OFFERING: "NoOffering",
    m.NO_NODEPOOL: "NoNodePool",
}
UNSCHEDULABLE = "Unschedulable"


@dataclass(frozen=True)
class Holding:
    """How much of a resolved buffer the cluster holds: its Provisioning reason, and the
    scheduler's word on why not all of it (empty when held, or while room is asked for)."""

    wanted: int
    held: int
    reason: str
    why: str = ""

    @property
    def message(self) -> str:
        counted = f"{self.held} of {self.wanted} chunks held"
        return f"{counted}; {self.why}" if self.why else counted


def holding_of(
    resolution: Resolved, placement: Placement, unplaceable: Mapping[str, Unplaceable]
) -> Holding:
    """The chunks ``placement`` holds of the buffer, and why not the rest: the reason the
    last provisioning pass gave for one of them (``unplaceable``, by chunk key)."""
    key, wanted = resolution.buffer.key, resolution.replicas
    held = placement.held(key)
    if held >= wanted:
        return Holding(wanted, wanted, HELD)
    for pod in placement.unheld:
        why = unplaceable.get(pod_key(pod))
        if buffer_of(pod) == key and why is not None:
            reason = UNPLACEABLE_REASONS.get(why.constraint, UNSCHEDULABLE)
            return Holding(wanted, held, reason, why.message)
    return Holding(wanted, held, PENDING)
