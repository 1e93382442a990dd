"""Capacity reservations of an EC2NodeClass: ``capacityReservationSelectorTerms`` resolved
through DescribeCapacityReservations into ``status.capacityReservations``, and the slots
each still has (``ReservationLedger``).

A term is an ``id``, or ``tags`` / ``ownerID`` / ``instanceMatchCriteria`` ANDed; terms
are ORed, and only active reservations that have not ended count, as upstream. A tag value
``*`` means "the tag is present". A term that matches nothing is reported (the class's
``CapacityReservationsReady`` condition), the others still count.

A Capacity Block is ``expiring`` from 40 minutes before its end (upstream's moment: EC2
sends its interruption warning then and starts terminating the block's instances ten
minutes later); its offering is then unavailable and its nodes are drained
(``joiner.controllers.capacityblock``).

EC2's ``AvailableInstanceCount`` is read at each resolution; between two, the ledger takes
a slot when a launch into the reservation starts (two NodeClaims never count on one
slot), gives it back when the launch fails, and a terminated instance's slot back.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from joiner.api import ec2nodeclass as api
from joiner.clock import from_rfc3339, to_rfc3339
from joiner.cloudprovider.aws.selectors import check_term, describe_all, tag_filters

FIELD = "capacityReservationSelectorTerms"
NOT_FOUND = "InvalidCapacityReservationId.NotFound"
_ACTIVE = [{"Name": "state", "Values": ["active"]}]
# EC2 warns of a Capacity Block's end 40 minutes ahead and terminates its instances from
# 30 minutes ahead; at the warning the block is expiring and its nodes drain (upstream's).
CAPACITY_BLOCK_EXPIRING_SECONDS = 40 * 60.0
CAPACITY_BLOCK_RECLAIM_SECONDS = 30 * 60.0


@dataclass
class Resolved:
    """What the terms select: status entries (by id), EC2's available counts, and the
    terms that matched nothing (as ``spec.capacityReservationSelectorTerms[i]``)."""

    reservations: list[dict[str, Any]] = field(default_factory=list)
    available: dict[str, int] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)


def resolve_capacity_reservations(
    ec2: Any, terms: Sequence[Mapping[str, Any]], now: float
) -> Resolved:
    """Every active, unexpired reservation a term selects, ordered by id."""
    found: dict[str, dict[str, Any]] = {}
    unmatched = []
    for index, term in enumerate(terms):
        where = f"spec.{FIELD}[{index}]"
        check_term(term, where)
        matched = [r for r in _describe(ec2, term) if not _ended(r, now)]
        if not matched:
            unmatched.append(where)
        found.update({r["CapacityReservationId"]: r for r in matched})
    ordered = [found[i] for i in sorted(found)]
    return Resolved(
        [status_entry(r, now) for r in ordered],
        {r["CapacityReservationId"]: int(r.get("AvailableInstanceCount", 0)) for r in ordered},
        unmatched,
    )


def _describe(ec2: Any, term: Mapping[str, Any]) -> list[dict[str, Any]]:
    if term.get("id"):
        try:  # by id: no MaxResults (EC2 refuses it with ids), one page
            return ec2.describe_capacity_reservations(
                CapacityReservationIds=[term["id"]], Filters=_ACTIVE
            )["CapacityReservations"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == NOT_FOUND:
                return []
            raise
    filters = [*_ACTIVE, *tag_filters(term.get("tags") or {})]
    if term.get("ownerID"):
        filters.append({"Name": "owner-id", "Values": [str(term["ownerID"])]})
    if term.get("instanceMatchCriteria"):
        filters.append(
            {"Name": "instance-match-criteria", "Values": [str(term["instanceMatchCriteria"])]}
        )
    return describe_all(
        ec2, "describe_capacity_reservations", "CapacityReservations", filters, MaxResults=1000
    )


def _ended(reservation: Mapping[str, Any], now: float) -> bool:
    end = reservation.get("EndDate")
    return isinstance(end, datetime) and end.timestamp() <= now


def status_entry(reservation: Mapping[str, Any], now: float) -> dict[str, Any]:
    """A reservation as DescribeCapacityReservations gives it, as the class's status says it
    at ``now``."""
    entry: dict[str, Any] = {
        "availabilityZone": reservation["AvailabilityZone"],
        "id": reservation["CapacityReservationId"],
        "instanceMatchCriteria": reservation.get("InstanceMatchCriteria", "open"),
        "instanceType": reservation["InstanceType"],
        "ownerID": reservation["OwnerId"],
        "reservationType": reservation.get("ReservationType") or api.RESERVATION_TYPE_DEFAULT,
        "state": api.RESERVATION_STATE_ACTIVE,
    }
    end = reservation.get("EndDate")
    if isinstance(end, datetime):
        entry["endTime"] = to_rfc3339(end.timestamp())
    if reservation.get("Interruptible"):
        entry["interruptible"] = True
    drain = expiring_at(entry)
    if drain is not None and now >= drain:
        entry["state"] = api.RESERVATION_STATE_EXPIRING
    return entry


def expiring_at(entry: Mapping[str, Any]) -> float | None:
    """When a status entry's reservation goes expiring (its nodes drain): a Capacity
    Block's end less 40 minutes; None for reservations that never do."""
    end = entry.get("endTime")
    if entry.get("reservationType") != api.RESERVATION_TYPE_CAPACITY_BLOCK or not end:
        return None
    return from_rfc3339(end) - CAPACITY_BLOCK_EXPIRING_SECONDS


def next_change(entries: Iterable[Mapping[str, Any]], now: float) -> float | None:
    """The next moment after ``now`` at which a reservation of ``entries`` goes expiring
    or ends (its status entry changes or goes), if any."""
    moments = [
        moment
        for entry in entries
        for moment in (
            expiring_at(entry),
            from_rfc3339(entry["endTime"]) if entry.get("endTime") else None,
        )
        if moment is not None and moment > now
    ]
    return min(moments, default=None)


class ReservationLedger:
    """Slots per reservation: EC2's count at the last resolution, less the launches that
    began since (in flight or done), plus the instances terminated since.

    ``sync`` takes counts read by a describe that began at ``token()``; launches that
    ended before that token are in EC2's count already, later ones are not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._seq = 0
        self._taken: dict[int, str] = {}  # launch (seq it began at) -> reservation
        self._done: list[tuple[int, str]] = []  # (seq it ended at, reservation)
        self._generation = 0
        self._free_counts: dict[str, int] = {}  # as the offerings last saw them

    def token(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def sync(self, counts: Mapping[str, int], token: int) -> None:
        with self._lock:
            self._done = [(seq, r) for seq, r in self._done if seq > token]
            for reservation_id, count in counts.items():
                self._counts[reservation_id] = count - sum(
                    1 for _, r in self._done if r == reservation_id
                )
            self._touch()

    def available(self, reservation_id: str) -> int:
        with self._lock:
            return self._free(reservation_id)

    def _free(self, reservation_id: str) -> int:
        in_flight = sum(1 for r in self._taken.values() if r == reservation_id)
        return max(0, self._counts.get(reservation_id, 0) - in_flight)

    def take(self, reservation_ids: Iterable[str]) -> dict[str, int]:
        """A slot in each reservation that has one free; launch -> reservation handles."""
        with self._lock:
            taken = {}
            for reservation_id in reservation_ids:
                if self._free(reservation_id) > 0:
                    self._seq += 1
                    self._taken[self._seq] = reservation_id
                    taken[reservation_id] = self._seq
            self._touch()
            return taken

    def settle(self, taken: Mapping[str, int], launched: str | None) -> None:
        """The launch ended: the reservation it went into keeps its slot (now in EC2's count
        only after the next describe), the others get theirs back."""
        with self._lock:
            for reservation_id, handle in taken.items():
                self._taken.pop(handle, None)
                if reservation_id == launched:
                    self._seq += 1
                    self._done.append((self._seq, reservation_id))
                    self._counts[reservation_id] = self._counts.get(reservation_id, 0) - 1
            self._touch()

    def exhausted(self, reservation_id: str) -> None:
        """EC2 said the reservation is full: no slot until the next resolution."""
        with self._lock:
            self._counts[reservation_id] = 0
            self._touch()

    def released(self, reservation_id: str) -> None:
        """An instance in the reservation was terminated: its slot is free again."""
        with self._lock:
            if reservation_id in self._counts:
                self._counts[reservation_id] += 1
                self._touch()

    @property
    def generation(self) -> int:
        """Changes whenever a reservation's free slots change (what the offerings'
        availability and capacity read)."""
        return self._generation

    def _touch(self) -> None:
        free_now = {r: self._free(r) for r in self._counts}
        if free_now != self._free_counts:
            self._free_counts = free_now
            self._generation += 1
