"""The interruption reconciler [INT]: take what the queue delivered, act, delete.

For a message whose instances are going away (spot interruption warning, EC2 scheduled
change, stopping / stopped / shutting-down / terminated, capacity reservation
interruption) each affected NodeClaim gets a ``DisruptionReason=Interrupted``
condition and is deleted: termination cordons (the disrupted taint) and drains it, and
its pods, pending again, start a replacement through normal provisioning at once. A
spot warning also marks the (instance type, zone, spot) offering unavailable for a few
minutes, so the replacement lands elsewhere; a capacity reservation warning does the same
for the (instance type, zone, reserved) offerings (as upstream marks the reservation
unavailable): the replacement does not go back into the reservation being reclaimed. A
rebalance recommendation is an event only, unless ``replace_on_rebalance`` is set. Every
message is deleted, whatever happened, so a poison message cannot come back forever.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.controllers.context import Controller, ControllerContext
from joiner.controllers.interruption.messages import Kind, Message, MessageError, parse
from joiner.controllers.interruption.queue import MessageQueue, QueueMessage, Receiver
from joiner.controllers.runtime import Result
from joiner.events import NORMAL, WARNING
from joiner.kube.api import ApiError, Conflict, NotFound

log = logging.getLogger(__name__)

KEY = "queue"
INTERRUPTED = "Interrupted"  # the DisruptionReason and the disrupted-metric reason
CORDON_AND_DRAIN = "CordonAndDrain"
NO_ACTION = "NoAction"
UNPARSABLE = "unparsable"  # message_type label of bodies that are not envelopes
RETRY_INTERVAL = 5.0  # seconds before a message whose handling failed is handled again

# Event reason on the NodeClaim, by message kind (as Karpenter names them).
EVENT_REASONS = {
    Kind.SPOT_INTERRUPTION: "SpotInterrupted",
    Kind.REBALANCE_RECOMMENDATION: "SpotRebalanceRecommendation",
    Kind.SCHEDULED_CHANGE: "InstanceUnhealthy",
    Kind.CAPACITY_RESERVATION_INTERRUPTION: "CapacityReservationInterrupted",
    Kind.INSTANCE_IMPAIRED: "InstanceUnhealthy",
}
# The capacity an interruption warning says is being taken back: its offerings are kept out
# of launches for a few minutes.
_AVOIDED_CAPACITY = {
    Kind.SPOT_INTERRUPTION: wk.CAPACITY_TYPE_SPOT,
    Kind.CAPACITY_RESERVATION_INTERRUPTION: wk.CAPACITY_TYPE_RESERVED,
}
STATE_EVENT_REASONS = {"stopping": "InstanceStopping", "stopped": "InstanceStopping"}
TERMINATING_EVENT_REASON = "InstanceTerminating"


@dataclass(frozen=True)
class InterruptionOptions:
    # Seconds between two looks at the receiver; None: only when woken (the simulator
    # wakes the controller right after it delivers a message).
    poll_interval: float | None = 1.0
    workers: int = 10  # messages handled in parallel (1: in order, on the caller's thread)
    replace_on_rebalance: bool = False  # drain on a rebalance recommendation too


@dataclass(frozen=True)
class InterruptionFeed:
    """Where interruption news comes from: the queue (and how it is received) and,
    optionally, an EC2 client for the DescribeInstanceStatus poller."""

    queue: MessageQueue
    receiver: Receiver
    ec2: Any | None = None
    # Seconds between two looks at the receiver; None: only when woken.
    poll_interval: float | None = 1.0
    workers: int = 10  # messages handled in parallel


def instance_id_of(provider_id: str | None) -> str | None:
    """``aws:///us-east-1a/i-0abc`` (or ``fake:///zone/i-0abc``) -> ``i-0abc``."""
    if not provider_id or "/" not in provider_id:
        return None
    return provider_id.rsplit("/", 1)[1] or None


class Interruption(Controller):
    name = "interruption"

    def __init__(
        self,
        ctx: ControllerContext,
        receiver: Receiver,
        queue: MessageQueue,
        options: InterruptionOptions | None = None,
    ) -> None:
        super().__init__(ctx)
        self.receiver, self.queue = receiver, queue
        self.options = options or InterruptionOptions()
        self.handled = 0  # messages taken off the queue so far
        # Messages whose handling an API server failure broke: not deleted from the
        # queue, and handled again after RETRY_INTERVAL, as Karpenter leaves them for the
        # queue to deliver again. Deleted, the interruption was lost for good.
        self.unhandled: list[QueueMessage] = []

    def reconcile(self, key: str) -> Result:
        retried, self.unhandled = self.unhandled, []
        received = self.receiver.take()
        messages = retried + received
        if not messages:
            return Result(requeue_after=self.options.poll_interval)
        claims = self.claims_by_instance()
        if self.options.workers > 1 and len(messages) > 1:
            with ThreadPoolExecutor(min(self.options.workers, len(messages))) as pool:
                done = list(pool.map(lambda m: self._handle_safely(m, claims), messages))
        else:
            done = [self._handle_safely(message, claims) for message in messages]
        finished = [m for m, ok in zip(messages, done, strict=True) if ok]
        self.unhandled = [m for m, ok in zip(messages, done, strict=True) if not ok]
        if finished:
            self.queue.delete(finished)
        self.handled += len(finished)
        if received:
            return Result(requeue_after=0.0)  # more may be waiting
        return Result(
            requeue_after=RETRY_INTERVAL if self.unhandled else self.options.poll_interval
        )

    def claims_by_instance(self) -> dict[str, str]:
        """Instance id -> NodeClaim name, from the cluster state (read on the loop's thread,
        before any worker starts)."""
        index = {}
        for claim in self.state.nodeclaims.values():
            instance_id = instance_id_of(claim.status.provider_id)
            if instance_id:
                index[instance_id] = claim.name
        return index

    def _handle_safely(self, queued: QueueMessage, claims: Mapping[str, str]) -> bool:
        """False when the message must be handled again: an API call of its handling
        failed. Any other failure is the message's own, and it would fail again."""
        try:
            message = parse(queued.body)
        except MessageError as err:
            log.warning("unparsable interruption message %s: %s", queued.message_id, err)
            self.metrics.interruption_messages.labels(UNPARSABLE).inc()
            return True
        try:
            self.handle(message, claims)
        except ApiError:  # the API server failed: the message is still to act on
            log.exception("interruption message %s not handled; retried", queued.message_id)
            return False
        except Exception:  # one bad message must not keep the others from their deletion
            log.exception("interruption message %s not handled", queued.message_id)
        return True

    def handle(self, message: Message, claims: Mapping[str, str]) -> None:
        self.metrics.interruption_messages.labels(message.kind.value).inc()
        if message.kind == Kind.UNKNOWN:
            log.info(
                "ignoring unknown interruption event %s (%s)", message.event_id, message.detail
            )
        names = sorted({claims[i] for i in message.instance_ids if i in claims})
        drain = message.disrupts or (
            message.kind == Kind.REBALANCE_RECOMMENDATION and self.options.replace_on_rebalance
        )
        for name in names:
            if drain:
                self._cordon_and_drain(name, message)
            else:
                self._notify(name, message)
        if not (drain and names):
            self.metrics.interruption_actions.labels(NO_ACTION).inc()

    def _notify(self, name: str, message: Message) -> None:
        reason = _event_reason(message)
        if reason is None:
            return
        with contextlib.suppress(NotFound):
            raw = self.kube.get("NodeClaim", name)
            self.recorder.record(raw, NORMAL, reason, _event_text(message))

    def _cordon_and_drain(self, name: str, message: Message) -> None:
        try:
            raw = self.kube.get("NodeClaim", name)
        except NotFound:
            return
        labels = raw["metadata"].get("labels") or {}
        if message.kind in _AVOIDED_CAPACITY:
            self._avoid_offering(labels, _AVOIDED_CAPACITY[message.kind])
        if raw["metadata"].get("deletionTimestamp"):
            return  # already draining: a repeat of the message changes nothing
        self._mark_interrupted(raw)
        self.recorder.record(
            raw, WARNING, _event_reason(message) or INTERRUPTED, _event_text(message)
        )
        self.metrics.nodeclaims_disrupted.labels(labels.get(wk.NODEPOOL, ""), INTERRUPTED).inc()
        self.metrics.interruption_actions.labels(CORDON_AND_DRAIN).inc()
        with contextlib.suppress(NotFound):
            self.kube.delete("NodeClaim", name)

    def _avoid_offering(self, labels: Mapping[str, str], capacity_type: str) -> None:
        instance_type, zone = labels.get(wk.INSTANCE_TYPE), labels.get(wk.ZONE)
        if instance_type and zone:
            self.cloud.mark_unavailable(instance_type, zone, capacity_type)

    def _mark_interrupted(self, raw: dict[str, Any]) -> None:
        conditions = raw.setdefault("status", {}).setdefault("conditions", [])
        cond.set_condition(
            conditions, nc.DISRUPTION_REASON, cond.TRUE, self.clock.now(), reason=INTERRUPTED
        )
        with contextlib.suppress(Conflict, NotFound):
            self.kube.update_status(raw)


def _event_reason(message: Message) -> str | None:
    if message.kind == Kind.STATE_CHANGE:
        return STATE_EVENT_REASONS.get(message.detail, TERMINATING_EVENT_REASON)
    return EVENT_REASONS.get(message.kind)


def _event_text(message: Message) -> str:
    texts = {
        Kind.SPOT_INTERRUPTION: "Spot interruption warning: the instance is reclaimed in 2 minutes",
        Kind.REBALANCE_RECOMMENDATION: "Spot rebalance recommendation: elevated risk of "
        "interruption",
        Kind.SCHEDULED_CHANGE: f"AWS Health scheduled change {message.detail}",
        Kind.STATE_CHANGE: f"Instance is {message.detail}",
        Kind.CAPACITY_RESERVATION_INTERRUPTION: "Capacity reservation interruption warning",
        Kind.INSTANCE_IMPAIRED: f"Instance status check failed: {message.detail}",
    }
    return texts.get(message.kind, message.kind.value)
