"""EventBridge envelopes from the interruption queue -> typed messages [INT].

``parse(body)`` returns a ``Message`` for every well-formed envelope (``Kind.UNKNOWN``
for events this controller does not handle, ``Kind.NOOP`` for handled event types that
need nothing, e.g. a Health event about another service) and raises ``MessageError``,
naming the field, for anything malformed. The queue is fed by EventBridge, but anyone
allowed to send to it could put anything there, so nothing about a body is trusted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# SQS refuses bodies above 256 KiB; a bigger string cannot have come from the queue.
MAX_BODY_CHARS = 256 * 1024
_INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,32}$")
_INSTANCE_ARN = re.compile(r"^arn:[^:]+:ec2:[^:]*:[^:]*:instance/(i-[0-9a-f]{8,32})$")

SOURCE_EC2 = "aws.ec2"
SOURCE_HEALTH = "aws.health"
SPOT_INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE_NOTIFICATION = "EC2 Instance State-change Notification"
CAPACITY_RESERVATION_WARNING = "EC2 Capacity Reservation Instance Interruption Warning"
HEALTH_EVENT = "AWS Health Event"
HEALTH_SERVICE_EC2 = "EC2"
HEALTH_CATEGORY_SCHEDULED_CHANGE = "scheduledChange"

# Instance states that mean the instance is going away [INT]; others (pending, running)
# are ignored.
DISRUPTING_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})


class Kind(StrEnum):
    """Message kinds, also the ``message_type`` label of the received-messages metric."""

    SPOT_INTERRUPTION = "spot_interruption"
    REBALANCE_RECOMMENDATION = "rebalance_recommendation"
    SCHEDULED_CHANGE = "scheduled_change"
    STATE_CHANGE = "state_change"
    CAPACITY_RESERVATION_INTERRUPTION = "capacity_reservation_interruption"
    INSTANCE_IMPAIRED = "instance_impaired"  # from DescribeInstanceStatus, not the queue
    NOOP = "noop"
    UNKNOWN = "unknown"


class MessageError(ValueError):
    """A body that is not a usable EventBridge envelope; the text names the field."""


@dataclass(frozen=True)
class Message:
    kind: Kind
    event_id: str
    instance_ids: tuple[str, ...] = ()
    # The instance state for state changes, the event type code for Health events, the
    # instance action for spot warnings; the source and detail-type for unknown events.
    detail: str = ""

    @property
    def disrupts(self) -> bool:
        """Whether the affected instances are going away, so their NodeClaims must drain."""
        if self.kind == Kind.STATE_CHANGE:
            return self.detail in DISRUPTING_STATES
        return self.kind in (
            Kind.SPOT_INTERRUPTION,
            Kind.SCHEDULED_CHANGE,
            Kind.CAPACITY_RESERVATION_INTERRUPTION,
            Kind.INSTANCE_IMPAIRED,
        )


def parse(body: Any) -> Message:
    if not isinstance(body, str):
        raise MessageError(f"body: expected text, got {type(body).__name__}")
    if len(body) > MAX_BODY_CHARS:
        raise MessageError(f"body: {len(body)} characters, more than {MAX_BODY_CHARS}")
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError) as err:
        raise MessageError(f"body: not JSON ({str(err)[:80]})") from None
    if not isinstance(envelope, dict):
        raise MessageError(f"body: expected a JSON object, got {type(envelope).__name__}")
    source = _string(envelope, "source", "")
    detail_type = _string(envelope, "detail-type", "")
    event_id = _string(envelope, "id", "")
    parser = _PARSERS.get((source, detail_type))
    if parser is None:
        return Message(Kind.UNKNOWN, event_id, detail=f"{source}/{detail_type}")
    detail = envelope.get("detail")
    if not isinstance(detail, dict):
        raise MessageError(f"detail: expected an object, got {type(detail).__name__}")
    return parser(event_id, detail, envelope)


def _spot_interruption(event_id: str, detail: Mapping, envelope: Mapping) -> Message:
    action = _string(detail, "instance-action", "", where="detail")
    return Message(Kind.SPOT_INTERRUPTION, event_id, (_instance_id(detail),), action)


def _rebalance(event_id: str, detail: Mapping, envelope: Mapping) -> Message:
    return Message(Kind.REBALANCE_RECOMMENDATION, event_id, (_instance_id(detail),))


def _state_change(event_id: str, detail: Mapping, envelope: Mapping) -> Message:
    state = _string(detail, "state", where="detail")
    return Message(Kind.STATE_CHANGE, event_id, (_instance_id(detail),), state)


def _capacity_reservation(event_id: str, detail: Mapping, envelope: Mapping) -> Message:
    """The warning names its instances in ``detail`` (one id or a list) or, failing
    that, as instance ARNs in ``resources``."""
    if "instance-id" in detail:
        ids: tuple[str, ...] = (_instance_id(detail),)
    elif "instance-ids" in detail:
        ids = _id_list(detail["instance-ids"], "detail.instance-ids")
    else:
        ids = _ids_from_resources(envelope.get("resources"))
    return Message(Kind.CAPACITY_RESERVATION_INTERRUPTION, event_id, ids)


def _health(event_id: str, detail: Mapping, envelope: Mapping) -> Message:
    service = _string(detail, "service", where="detail")
    category = _string(detail, "eventTypeCategory", where="detail")
    code = _string(detail, "eventTypeCode", "", where="detail")
    if service != HEALTH_SERVICE_EC2 or category != HEALTH_CATEGORY_SCHEDULED_CHANGE:
        return Message(Kind.NOOP, event_id, detail=f"{service}/{category}")
    entities = detail.get("affectedEntities")
    if not isinstance(entities, list):
        raise MessageError("detail.affectedEntities: expected a list")
    ids = []
    for index, entity in enumerate(entities):
        where = f"detail.affectedEntities[{index}]"
        if not isinstance(entity, dict):
            raise MessageError(f"{where}: expected an object")
        value = _string(entity, "entityValue", where=where)
        if _INSTANCE_ID.match(value):  # entities may also be volumes, hosts, ...
            ids.append(value)
    return Message(Kind.SCHEDULED_CHANGE, event_id, tuple(ids), code)


_PARSERS = {
    (SOURCE_EC2, SPOT_INTERRUPTION_WARNING): _spot_interruption,
    (SOURCE_EC2, REBALANCE_RECOMMENDATION): _rebalance,
    (SOURCE_EC2, STATE_CHANGE_NOTIFICATION): _state_change,
    (SOURCE_EC2, CAPACITY_RESERVATION_WARNING): _capacity_reservation,
    (SOURCE_HEALTH, HEALTH_EVENT): _health,
}


def _string(obj: Mapping, key: str, default: str | None = None, where: str = "") -> str:
    field = f"{where}.{key}" if where else key
    value = obj.get(key, default)
    if value is None:
        raise MessageError(f"{field}: missing")
    if not isinstance(value, str):
        raise MessageError(f"{field}: expected a string, got {type(value).__name__}")
    return value


def _instance_id(detail: Mapping) -> str:
    value = _string(detail, "instance-id", where="detail")
    if not _INSTANCE_ID.match(value):
        raise MessageError(f"detail.instance-id: {value[:40]!r} is not an EC2 instance id")
    return value


def _id_list(value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise MessageError(f"{field}: expected a list")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not _INSTANCE_ID.match(item):
            raise MessageError(f"{field}[{index}]: not an EC2 instance id")
    return tuple(value)


def _ids_from_resources(resources: Any) -> tuple[str, ...]:
    if not isinstance(resources, list):
        raise MessageError("resources: expected a list of instance ARNs")
    return tuple(
        match.group(1)
        for item in resources
        if isinstance(item, str) and (match := _INSTANCE_ARN.match(item))
    )
