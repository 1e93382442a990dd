"""The SQS port against moto: receiving by name or URL, long-polling in a thread, and
malformed bodies that must neither crash the controller nor stay on the queue."""

from __future__ import annotations

import json
import threading

import pytest
from interruption_world import World
from joiner.backoff import Backoff, Retrier
from joiner.controllers.interruption.aws import production_feed
from joiner.controllers.interruption.queue import BackgroundReceiver, QueueMessage, SQSQueue
from joiner.sim.interruption import InterruptionBus, event_entry

MALFORMED_BODIES = [
    "not json at all",
    "",
    "null",
    "[1, 2, 3]",
    '{"source": "aws.ec2"}',
    json.dumps({"source": "aws.ec2", "detail-type": "EC2 Spot Instance Interruption Warning"}),
    json.dumps(
        {
            "source": "aws.ec2",
            "detail-type": "EC2 Spot Instance Interruption Warning",
            "detail": {"instance-id": ["i-0123456789abcdef0"]},
        }
    ),
    json.dumps({"source": ["aws.health"], "detail-type": 12, "detail": "x"}),
    json.dumps({"source": "aws.health", "detail-type": "AWS Health Event", "detail": {}}),
    "[" * 60_000 + "]" * 60_000,  # nesting deep enough to break a recursive parser
    json.dumps({"source": "aws.ec2", "detail-type": "x" * 200_000}),  # near SQS's 256 KiB
]


def test_malformed_bodies_are_counted_and_deleted_without_crashing(
    bus: InterruptionBus,
) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    for body in MALFORMED_BODIES:
        if body:
            world.send_raw(body)
    world.advance(2)
    assert world.queue_depth() == 0
    assert world.operator.manager.error_count == 0
    assert world.claim_names() == [claim["metadata"]["name"]]
    unparsable = world.metric(
        "karpenter_interruption_received_messages_total", message_type="unparsable"
    )
    unknown = world.metric("karpenter_interruption_received_messages_total", message_type="unknown")
    # Eight bodies are no usable envelope; two are well formed but of no type we handle.
    assert (unparsable, unknown) == (8, 2)


def test_the_queue_is_found_by_name(bus: InterruptionBus) -> None:
    queue = SQSQueue(bus.sqs, f"{bus.name}-interruption")
    bus.sqs.send_message(QueueUrl=bus.queue_url, MessageBody="hello")
    (message,) = queue.receive(0)
    assert (message.body, queue.url) == ("hello", bus.queue_url)
    queue.delete([message])
    assert queue.receive(0) == []


def test_a_receive_returns_at_most_ten_and_delete_takes_any_number(bus: InterruptionBus) -> None:
    for index in range(23):
        bus.sqs.send_message(QueueUrl=bus.queue_url, MessageBody=f"m{index}")
    received: list[QueueMessage] = []
    while batch := bus.queue.receive(0):
        assert len(batch) <= 10
        received.extend(batch)
    assert sorted(m.body for m in received) == sorted(f"m{i}" for i in range(23))
    bus.queue.delete(received)
    attributes = bus.sqs.get_queue_attributes(
        QueueUrl=bus.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_the_background_receiver_long_polls_and_hands_messages_over(
    bus: InterruptionBus,
) -> None:
    receiver = BackgroundReceiver(bus.queue, wait_seconds=1)
    receiver.start()
    bus.publish(
        [event_entry("rebalance", "i-0123456789abcdef0", "us-east-1", 1_767_225_600.0, bus.name)]
    )
    taken: list[QueueMessage] = []
    pause = threading.Event()
    for _ in range(200):  # up to 10 s; a message arrives within one long poll (1 s here)
        taken += receiver.take()
        if taken:
            break
        pause.wait(0.05)
    receiver.stop()
    (message,) = taken
    body = json.loads(message.body)
    assert body["detail-type"] == "EC2 Instance Rebalance Recommendation"
    assert body["detail"] == {"instance-id": "i-0123456789abcdef0"}


def test_the_production_feed_long_polls_the_queue_by_name(
    bus: InterruptionBus, moto_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``joiner controller`` wires when INTERRUPTION_QUEUE is set: a long-polling
    thread, reconciles that hand over what it received, EC2 for the status poller."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    feed, receiver = production_feed(f"{bus.name}-interruption", "us-east-1", endpoint_url=moto_url)
    receiver.wait_seconds = 1
    world = World(bus, feed=feed)
    (claim,) = world.launch(1)
    receiver.start()
    world.publish("spot-interruption", claim)
    pause = threading.Event()
    for _ in range(200):  # up to 10 s of wall time, one virtual second per turn
        world.advance(1)
        if claim["metadata"]["name"] not in world.claim_names():
            break
        pause.wait(0.05)
    receiver.stop()
    assert claim["metadata"]["name"] not in world.claim_names()
    assert world.queue_depth() == 0


def test_a_replica_that_does_not_lead_leaves_the_messages_on_the_queue(
    bus: InterruptionBus,
) -> None:
    receiver = BackgroundReceiver(bus.queue, wait_seconds=1, active=lambda: False)
    receiver.start()
    bus.sqs.send_message(QueueUrl=bus.queue_url, MessageBody="for the leader")
    threading.Event().wait(1.5)  # a receiving replica would have had it by now
    receiver.stop()
    assert receiver.take() == []
    attributes = bus.sqs.get_queue_attributes(
        QueueUrl=bus.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "1"


def test_the_receiver_survives_any_failure_counts_it_and_keeps_polling(
    bus: InterruptionBus, caplog: pytest.LogCaptureFixture
) -> None:
    """Not only boto's own errors: anything a receive raises (here a botocore hook that
    fails twice, as a buggy credential plugin would) is logged, counted, retried after a
    backoff, and the messages still arrive."""
    failing = [RuntimeError("plugin bug 1"), RuntimeError("plugin bug 2")]

    def before_receive(**kwargs: object) -> None:
        if failing:
            raise failing.pop(0)

    bus.sqs.meta.events.register("before-call.sqs.ReceiveMessage", before_receive)
    reported: list[str] = []
    receiver = BackgroundReceiver(
        bus.queue,
        wait_seconds=1,
        on_failure=lambda loop, err: reported.append(loop),
        retrier=Retrier(Backoff(base=0.05, cap=0.1)),
    )
    bus.sqs.send_message(QueueUrl=bus.queue_url, MessageBody="still delivered")
    receiver.start()
    taken: list[QueueMessage] = []
    pause = threading.Event()
    for _ in range(200):  # up to 10 s
        taken += receiver.take()
        if taken:
            break
        pause.wait(0.05)
    receiver.stop()
    assert [m.body for m in taken] == ["still delivered"]
    assert (receiver.loop.failures, reported) == (2, ["interruption-queue"] * 2)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [str(r.exc_info[1]) for r in errors if r.exc_info] == ["plugin bug 1", "plugin bug 2"]
    assert receiver.loop.alive
