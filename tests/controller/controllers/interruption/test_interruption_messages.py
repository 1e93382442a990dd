"""Parsing EventBridge envelopes: every handled kind, the fields that name the instance,
and clear errors (naming the field) for everything malformed."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joiner.controllers.interruption.messages import (
    MAX_BODY_CHARS,
    Kind,
    Message,
    MessageError,
    parse,
)

ID = "i-0b662ef9931388ba0"


def envelope(source: str, detail_type: str, detail: Any, **extra: Any) -> str:
    return json.dumps(
        {
            "version": "0",
            "id": "7e2b7fd8-1b6c-4a3b-8a4a-3d4b5c6d7e8f",
            "detail-type": detail_type,
            "source": source,
            "account": "123456789012",
            "time": "2026-01-01T00:00:00Z",
            "region": "us-east-1",
            "resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{ID}"],
            "detail": detail,
            **extra,
        }
    )


def test_spot_interruption_warning() -> None:
    body = envelope(
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": ID, "instance-action": "terminate"},
    )
    assert parse(body) == Message(
        Kind.SPOT_INTERRUPTION, "7e2b7fd8-1b6c-4a3b-8a4a-3d4b5c6d7e8f", (ID,), "terminate"
    )
    assert parse(body).disrupts


def test_rebalance_recommendation_does_not_disrupt() -> None:
    message = parse(
        envelope("aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": ID})
    )
    assert (message.kind, message.instance_ids, message.disrupts) == (
        Kind.REBALANCE_RECOMMENDATION,
        (ID,),
        False,
    )


@pytest.mark.parametrize(
    ("state", "disrupts"),
    [
        ("stopping", True),
        ("stopped", True),
        ("shutting-down", True),
        ("terminated", True),
        ("pending", False),
        ("running", False),
    ],
)
def test_state_change(state: str, disrupts: bool) -> None:
    message = parse(
        envelope(
            "aws.ec2",
            "EC2 Instance State-change Notification",
            {"instance-id": ID, "state": state},
        )
    )
    assert (message.kind, message.detail, message.disrupts) == (
        Kind.STATE_CHANGE,
        state,
        disrupts,
    )


def health_detail(**overrides: Any) -> dict[str, Any]:
    return {
        "eventArn": "arn:aws:health:us-east-1::event/EC2/X/Y",
        "service": "EC2",
        "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
        "eventTypeCategory": "scheduledChange",
        "affectedEntities": [{"entityValue": ID}, {"entityValue": "vol-0123456789abcdef0"}],
        **overrides,
    }


def test_health_scheduled_change_for_ec2_keeps_the_instances_only() -> None:
    message = parse(envelope("aws.health", "AWS Health Event", health_detail()))
    assert message == Message(
        Kind.SCHEDULED_CHANGE,
        "7e2b7fd8-1b6c-4a3b-8a4a-3d4b5c6d7e8f",
        (ID,),
        "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
    )
    assert message.disrupts


@pytest.mark.parametrize("overrides", [{"service": "RDS"}, {"eventTypeCategory": "issue"}])
def test_other_health_events_are_noops(overrides: dict[str, str]) -> None:
    message = parse(envelope("aws.health", "AWS Health Event", health_detail(**overrides)))
    assert (message.kind, message.instance_ids, message.disrupts) == (Kind.NOOP, (), False)


@pytest.mark.parametrize(
    ("detail", "ids"),
    [
        ({"instance-id": ID}, (ID,)),
        ({"instance-ids": [ID, "i-0123456789abcdef0"]}, (ID, "i-0123456789abcdef0")),
        ({"capacity-reservation-id": "cr-0123"}, (ID,)),  # from the resources' ARNs
    ],
)
def test_capacity_reservation_interruption(detail: dict, ids: tuple[str, ...]) -> None:
    message = parse(
        envelope("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", detail)
    )
    assert (message.kind, message.instance_ids, message.disrupts) == (
        Kind.CAPACITY_RESERVATION_INTERRUPTION,
        ids,
        True,
    )


def test_unknown_events_are_recognised_as_such() -> None:
    message = parse(envelope("aws.autoscaling", "EC2 Instance Launch Successful", {}))
    assert (message.kind, message.detail, message.disrupts) == (
        Kind.UNKNOWN,
        "aws.autoscaling/EC2 Instance Launch Successful",
        False,
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("not json", "body: not JSON"),
        ("[1, 2]", "body: expected a JSON object, got list"),
        ("x" * (MAX_BODY_CHARS + 1), f"body: {MAX_BODY_CHARS + 1} characters"),
        ("[" * 100_000 + "]" * 100_000, "body: not JSON"),
        (json.dumps({"source": 5}), "source: expected a string, got int"),
        (
            envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", None),
            "detail: expected an object, got NoneType",
        ),
        (
            envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", {}),
            "detail.instance-id: missing",
        ),
        (
            envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", {"instance-id": 7}),
            "detail.instance-id: expected a string, got int",
        ),
        (
            envelope("aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": "web"}),
            "detail.instance-id: 'web' is not an EC2 instance id",
        ),
        (
            envelope("aws.ec2", "EC2 Instance State-change Notification", {"instance-id": ID}),
            "detail.state: missing",
        ),
        (
            envelope("aws.health", "AWS Health Event", health_detail(affectedEntities="i-1")),
            "detail.affectedEntities: expected a list",
        ),
        (
            envelope("aws.health", "AWS Health Event", health_detail(affectedEntities=[3])),
            "detail.affectedEntities[0]: expected an object",
        ),
        (
            envelope(
                "aws.ec2",
                "EC2 Capacity Reservation Instance Interruption Warning",
                {"instance-ids": [ID, 5]},
            ),
            "detail.instance-ids[1]: not an EC2 instance id",
        ),
        (
            envelope(
                "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", {}, resources=7
            ),
            "resources: expected a list of instance ARNs",
        ),
    ],
)
def test_malformed_bodies_name_the_field(body: str, error: str) -> None:
    with pytest.raises(MessageError) as raised:
        parse(body)
    assert str(raised.value).startswith(error)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
KNOWN = [
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
    ("aws.health", "AWS Health Event"),
]


@settings(max_examples=300)
@given(st.sampled_from(KNOWN), JSON_VALUES, JSON_VALUES)
def test_any_envelope_with_a_known_type_parses_or_fails_cleanly(
    known: tuple[str, str], detail: Any, resources: Any
) -> None:
    body = envelope(known[0], known[1], detail, resources=resources)
    try:
        message = parse(body)
    except MessageError:
        return
    assert all(i.startswith("i-") for i in message.instance_ids)


@settings(max_examples=300)
@given(st.text() | st.binary().map(lambda b: b.decode("latin-1")) | JSON_VALUES.map(json.dumps))
def test_any_text_parses_or_fails_cleanly(body: str) -> None:
    with contextlib.suppress(MessageError):
        parse(body)


def test_a_body_that_is_not_text_is_an_error() -> None:
    with pytest.raises(MessageError, match="body: expected text, got bytes"):
        parse(b"{}")
