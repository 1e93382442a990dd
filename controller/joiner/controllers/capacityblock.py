"""Capacity Blocks end: their nodes are drained ahead of EC2 [issue 22].

EC2 starts terminating a Capacity Block's instances 30 minutes before the block's end and
warns 10 minutes earlier. As upstream Karpenter (its capacityreservation.expiration
controller), a NodeClaim launched into a Capacity Block is deleted when the block goes
``expiring``, 40 minutes before its end: termination cordons and drains it, and its pods,
pending again, get new capacity through normal provisioning while the instance still runs.
The end comes from the class's ``status.capacityReservations``; the reservation's
offering is unavailable from that moment, so nothing launches into it again.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import RESERVATION_TYPE_CAPACITY_BLOCK
from joiner.cloudprovider.aws.capacityreservations import expiring_at
from joiner.controllers.context import Controller
from joiner.controllers.runtime import DONE, Result
from joiner.events import NORMAL
from joiner.kube.api import NotFound

log = logging.getLogger(__name__)

EXPIRING = "CapacityBlockExpiring"  # the event's reason


def in_capacity_block(labels: Mapping[str, str]) -> bool:
    """Whether a NodeClaim with these labels was launched into a Capacity Block: only
    those are this controller's (others are never enqueued)."""
    return labels.get(wk.CAPACITY_RESERVATION_TYPE) == RESERVATION_TYPE_CAPACITY_BLOCK


class CapacityBlockExpiration(Controller):
    name = "capacityreservation.expiration"

    def reconcile(self, key: str) -> Result:
        cached = self.state.objects["NodeClaim"].get(key)
        drain_at = self._drain_at(cached) if cached is not None else None
        if drain_at is None:
            return DONE
        now = self.clock.now()
        if now < drain_at:
            return Result(requeue_after=drain_at - now)
        raw = self.fresh("NodeClaim", key)
        if raw is None or raw["metadata"].get("deletionTimestamp"):
            return DONE
        reservation = raw["metadata"]["labels"][wk.CAPACITY_RESERVATION_ID]
        log.info("deleting NodeClaim %s: its capacity block %s is expiring", key, reservation)
        self.recorder.record(
            raw,
            NORMAL,
            EXPIRING,
            f"Capacity block {reservation} ends in 40 minutes: draining the node",
        )
        with contextlib.suppress(NotFound):
            self.kube.delete("NodeClaim", key)
        return DONE

    def _drain_at(self, raw: Mapping[str, Any]) -> float | None:
        """When the NodeClaim's Capacity Block goes expiring, as its class says (None: not
        in a block, being deleted, or its class no longer lists the block: drift's case)."""
        meta = raw["metadata"]
        labels = meta.get("labels") or {}
        if meta.get("deletionTimestamp"):
            return None
        if not in_capacity_block(labels):
            return None
        class_name = ((raw.get("spec") or {}).get("nodeClassRef") or {}).get("name")
        nodeclass = self.state.nodeclasses.get(class_name or "")
        entries = (nodeclass.status.get("capacityReservations") or []) if nodeclass else []
        reservation = labels.get(wk.CAPACITY_RESERVATION_ID)
        entry = next((e for e in entries if e["id"] == reservation), None)
        return expiring_at(entry) if entry is not None else None
