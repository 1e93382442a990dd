"""EC2's side of a capacity reservation's end, on the simulation's clock [issue 22].

A reservation the scenario gives ``endsAfter`` has that ``EndDate``. For a Capacity
Block, as EC2 does: 40 minutes before the end every instance still in the block gets an
"EC2 Capacity Reservation Instance Interruption Warning" (through the simulated
EventBridge and interruption queue, as the interrupt step sends events), 30 minutes before
the end EC2 terminates the instances still in the block, and at the end the reservation
is ``expired``. Any other reservation just expires at its end (its instances keep
running, outside it). What EC2 terminated is an event of the result
(``CapacityBlockReclaimed``), so a run shows whether any node was still there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from moto.core import DEFAULT_ACCOUNT_ID

from joiner.cloudprovider.aws.capacityreservations import (
    CAPACITY_BLOCK_EXPIRING_SECONDS,
    CAPACITY_BLOCK_RECLAIM_SECONDS,
)
from joiner.sim.interruption import CAPACITY_RESERVATION_INTERRUPTION, Interruptions, Schedule
from joiner.sim.moto_reservations import expire, instances_in
from joiner.sim.scenario import ReservationSpec

RECLAIMED = "CapacityBlockReclaimed"  # the result's event when EC2 took instances back

# (reservation id, reason, message): an event of the result about the reservation.
Report = Callable[[str, str, str], None]


class ReservationEnds:
    """Plays the end of each reservation of the scenario that has one."""

    def __init__(self, region: str, interruptions: Interruptions | None, report: Report) -> None:
        self.account_id, self.region = DEFAULT_ACCOUNT_ID, region
        self.interruptions = interruptions
        self.report = report

    def plan(
        self,
        reservations: Sequence[tuple[str, ReservationSpec]],
        schedule: Schedule,
        wake: Callable[[], None],
    ) -> None:
        """Schedule EC2's doings for ``(id, spec)`` pairs, the clock at the start."""
        for reservation_id, spec in reservations:
            if spec.ends_after is None:
                continue
            end = spec.ends_after
            schedule(f"block-expire/{reservation_id}", end, self._expire_now(reservation_id))
            if not spec.ending_block:
                continue
            schedule(
                f"block-warn/{reservation_id}",
                end - CAPACITY_BLOCK_EXPIRING_SECONDS,
                lambda rid=reservation_id: self._warn(rid, wake),
            )
            schedule(
                f"block-reclaim/{reservation_id}",
                end - CAPACITY_BLOCK_RECLAIM_SECONDS,
                lambda rid=reservation_id, s=spec: self._reclaim(rid, s),
            )

    def _expire_now(self, reservation_id: str) -> Callable[[], None]:
        return lambda: expire(self.account_id, self.region, reservation_id)

    def _warn(self, reservation_id: str, wake: Callable[[], None]) -> None:
        assert self.interruptions is not None  # built for every scenario with an ending block
        instances = instances_in(self.account_id, self.region, reservation_id)
        if instances:
            clock = self.interruptions.clock
            ahead = CAPACITY_BLOCK_EXPIRING_SECONDS - CAPACITY_BLOCK_RECLAIM_SECONDS
            reclaim_at = clock.now() + ahead
            self.interruptions.publish(CAPACITY_RESERVATION_INTERRUPTION, instances, reclaim_at)
            wake()

    def _reclaim(self, reservation_id: str, spec: ReservationSpec) -> None:
        assert self.interruptions is not None
        instances = instances_in(self.account_id, self.region, reservation_id)
        for instance_id in instances:
            self.interruptions.instance_gone(f"aws:///{spec.zone}/{instance_id}")
        self.report(
            reservation_id,
            RECLAIMED,
            f"EC2 terminated {len(instances)} instance(s) still in the capacity block"
            + (f": {', '.join(instances)}" if instances else ""),
        )
