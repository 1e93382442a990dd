"""The ``interrupt`` step: the real EventBridge event, through the real queue path.

A simulation with interrupt steps gets an embedded AWS (moto, served on 127.0.0.1 in
this process) holding its own event bus, the five rules of the interruption queue and
the queue itself, whatever the scenario's cloud. An interrupt step publishes one event
per chosen node with ``PutEvents``; EventBridge matches a rule and delivers it to SQS;
the operator's interruption controller receives it (without waiting: the simulator has
one thread) and acts, exactly as in a cluster.

EC2's own side of the interruption is played here, not in the controller: a spot
instance is reclaimed two minutes after its warning (if the controller has not
terminated it by then), a stopping/stopped instance's kubelet goes silent at once, and
a shutting-down/terminated instance is gone at once.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError

from joiner.api.conditions import FALSE, set_condition
from joiner.clock import Clock, to_rfc3339
from joiner.controllers.interruption import controller as interruption
from joiner.controllers.interruption import messages
from joiner.controllers.interruption.queue import InlineReceiver, SQSQueue
from joiner.infra.events import INTERRUPTION_EVENT_PATTERNS
from joiner.kube.api import KubeAPI, NotFound
from joiner.sim.scenario import InterruptStep, Scenario, ScenarioError
from joiner.sim.targets import target_nodes

# Spot and capacity-reservation instances are reclaimed this long after their warning.
WARNING_SECONDS = 120.0
ACCOUNT_ID = "123456789012"  # moto's default account
MAX_ENTRIES_PER_PUT = 10  # PutEvents takes at most 10 entries
QUEUE_RETENTION_SECONDS = "300"  # as the infrastructure creates the queue [INFRA]

CAPACITY_RESERVATION_INTERRUPTION = "capacity-reservation-interruption"
# scenario kind -> (source, detail-type) of the EC2 event
_EC2_EVENTS: dict[str, tuple[str, str]] = {
    "spot-interruption": (messages.SOURCE_EC2, messages.SPOT_INTERRUPTION_WARNING),
    "rebalance": (messages.SOURCE_EC2, messages.REBALANCE_RECOMMENDATION),
    CAPACITY_RESERVATION_INTERRUPTION: (
        messages.SOURCE_EC2,
        messages.CAPACITY_RESERVATION_WARNING,
    ),
    **{
        state: (messages.SOURCE_EC2, messages.STATE_CHANGE_NOTIFICATION)
        for state in sorted(messages.DISRUPTING_STATES)
    },
}
SCHEDULED_CHANGE = "scheduled-change"
RETIREMENT_CODE = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
RETIREMENT_NOTICE_SECONDS = 14 * 24 * 3600.0  # EC2 retires instances about two weeks out

_server_lock = threading.Lock()
_server: Any = None  # one embedded moto per process, shared by every simulation in it
_bus_ids = itertools.count(1)
# Buses of finished simulations, by region, for the next ones: setting one up takes a
# score of calls, reusing it one (the property suite runs thousands of simulations).
_idle_buses: dict[str, list[InterruptionBus]] = {}


def embedded_aws_endpoint() -> str:
    """The URL of this process's moto server, started on first use."""
    global _server
    with _server_lock:
        if _server is None:
            from moto.server import ThreadedMotoServer

            # The embedded server's request log is noise in a simulation's output.
            logging.getLogger("werkzeug").setLevel(logging.ERROR)

            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            _server = server
        host, port = _server.get_host_and_port()
    return f"http://{host}:{port}"


# --- the events, shaped as EC2 and AWS Health send them --------------------------------


def event_entry(
    kind: str,
    instance_id: str,
    region: str,
    now: float,
    bus: str,
    reclaimed_at: float | None = None,
) -> dict[str, Any]:
    """A PutEvents entry for one instance, with the detail EC2 / AWS Health put there.
    A capacity reservation warning says when EC2 takes the instance (``reclaimed_at``; by
    default two minutes on, as for an interruptible reservation)."""
    resource = f"arn:aws:ec2:{region}:{ACCOUNT_ID}:instance/{instance_id}"
    if kind == SCHEDULED_CHANGE:
        return _entry(
            bus,
            messages.SOURCE_HEALTH,
            messages.HEALTH_EVENT,
            _health_detail(instance_id, region, now),
            [resource],
            now,
        )
    source, detail_type = _EC2_EVENTS[kind]
    detail: dict[str, Any] = {"instance-id": instance_id}
    if kind == "spot-interruption":
        detail["instance-action"] = "terminate"
    elif kind == CAPACITY_RESERVATION_INTERRUPTION:
        detail["instance-action"] = "terminate"
        reclaim = now + WARNING_SECONDS if reclaimed_at is None else reclaimed_at
        detail["instance-termination-time"] = to_rfc3339(reclaim)
    elif kind in messages.DISRUPTING_STATES:
        detail["state"] = kind
    return _entry(bus, source, detail_type, detail, [resource], now)


def _health_detail(instance_id: str, region: str, now: float) -> dict[str, Any]:
    start = now + RETIREMENT_NOTICE_SECONDS
    return {
        "eventArn": f"arn:aws:health:{region}::event/EC2/{RETIREMENT_CODE}/{instance_id}",
        "service": messages.HEALTH_SERVICE_EC2,
        "eventTypeCode": RETIREMENT_CODE,
        "eventTypeCategory": messages.HEALTH_CATEGORY_SCHEDULED_CHANGE,
        "startTime": to_rfc3339(start),
        "endTime": to_rfc3339(start + 3600),
        "eventDescription": [
            {
                "language": "en_US",
                "latestDescription": "EC2 has detected degradation of the underlying hardware "
                "hosting your instance and will retire it.",
            }
        ],
        "affectedEntities": [{"entityValue": instance_id}],
    }


def _entry(
    bus: str,
    source: str,
    detail_type: str,
    detail: Mapping[str, Any],
    resources: list[str],
    now: float,
) -> dict[str, Any]:
    return {
        "EventBusName": bus,
        "Source": source,
        "DetailType": detail_type,
        "Detail": json.dumps(detail),
        "Resources": resources,
        "Time": datetime.fromtimestamp(now, tz=UTC),
    }


# --- the bus, rules and queue ----------------------------------------------------------


class InterruptionBus:
    """One event bus with the five interruption rules targeting one SQS queue, as the
    infrastructure sets them up (on a bus of its own, so simulations sharing the
    embedded AWS never see each other's events)."""

    def __init__(self, region: str, endpoint_url: str | None = None) -> None:
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
        )
        endpoint_url = endpoint_url or embedded_aws_endpoint()
        self.region = region
        self.sqs = session.client("sqs", endpoint_url=endpoint_url)
        self.events = session.client("events", endpoint_url=endpoint_url)
        self.name = f"joiner-sim-{next(_bus_ids)}"
        self.queue_url = self.sqs.create_queue(
            QueueName=f"{self.name}-interruption",
            Attributes={"MessageRetentionPeriod": QUEUE_RETENTION_SECONDS},
        )["QueueUrl"]
        queue_arn = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        self.events.create_event_bus(Name=self.name)
        self.rules = [f"{self.name}-{suffix}" for suffix in INTERRUPTION_EVENT_PATTERNS]
        for rule, pattern in zip(self.rules, INTERRUPTION_EVENT_PATTERNS.values(), strict=True):
            self.events.put_rule(
                Name=rule, EventBusName=self.name, EventPattern=json.dumps(pattern)
            )
            self.events.put_targets(
                Rule=rule, EventBusName=self.name, Targets=[{"Id": "queue", "Arn": queue_arn}]
            )
        self.queue = SQSQueue(self.sqs, self.queue_url)

    @classmethod
    def take(cls, region: str) -> InterruptionBus:
        """An idle bus of this process (its queue empty), or a new one. An idle bus may
        be gone: an embedded AWS cloud that closes resets the whole moto."""
        with _server_lock:
            idle = _idle_buses.get(region, [])
            bus = idle.pop() if idle else None
        if bus is not None and bus._exists():
            return bus
        return cls(region)

    def _exists(self) -> bool:
        try:
            self.events.describe_event_bus(Name=self.name)
            self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        except ClientError:
            return False
        return True

    def give_back(self) -> None:
        """For the next simulation of this process, if its queue holds no message (none
        visible nor in flight, so nothing can reach the next one); else removed."""
        try:
            counts = self.sqs.get_queue_attributes(
                QueueUrl=self.queue_url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                ],
            )["Attributes"]
        except ClientError:  # gone with the embedded AWS
            return
        if any(int(count) for count in counts.values()):
            self.close()
            return
        with _server_lock:
            _idle_buses.setdefault(self.region, []).append(self)

    def publish(self, entries: list[dict[str, Any]]) -> None:
        for start in range(0, len(entries), MAX_ENTRIES_PER_PUT):
            response = self.events.put_events(Entries=entries[start : start + MAX_ENTRIES_PER_PUT])
            if response.get("FailedEntryCount"):
                raise RuntimeError(f"PutEvents rejected entries: {response['Entries']}")

    def close(self) -> None:
        """Remove the bus, rules and queue. Already gone (an embedded AWS that was reset
        when its scenario's cloud closed first) is fine."""
        with contextlib.suppress(ClientError):
            for rule in self.rules:
                self.events.remove_targets(Rule=rule, EventBusName=self.name, Ids=["queue"])
                self.events.delete_rule(Name=rule, EventBusName=self.name)
            self.events.delete_event_bus(Name=self.name)
            self.sqs.delete_queue(QueueUrl=self.queue_url)


# --- the step ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    node: str
    provider_id: str
    instance_id: str


# (key, delay, action): run ``action`` after ``delay`` virtual seconds.
Schedule = Callable[[str, float, Callable[[], None]], None]


class Interruptions:
    """Delivers a scenario's interrupt steps and plays EC2's part in them."""

    def __init__(
        self, region: str, kube: KubeAPI, clock: Clock, reclaim: Callable[[str], None]
    ) -> None:
        self.region, self.kube, self.clock, self.reclaim = region, kube, clock, reclaim
        self.bus = InterruptionBus.take(region)
        self.feed = interruption.InterruptionFeed(
            self.bus.queue,
            InlineReceiver(self.bus.queue),
            poll_interval=None,  # woken right after each delivery
            workers=1,  # one thread: the memory adapter and the run stay deterministic
        )

    @classmethod
    def for_scenario(
        cls, scenario: Scenario, kube: KubeAPI, clock: Clock, reclaim: Callable[[str], None]
    ) -> Interruptions | None:
        """Only scenarios that interrupt, or whose capacity blocks end, pay for the
        embedded AWS."""
        first = next((s for s in scenario.steps if isinstance(s, InterruptStep)), None)
        blocks = any(r.ending_block for r in scenario.cloud.capacity_reservations)
        if first is None and not blocks:
            return None
        if first is not None and importlib.util.find_spec("moto") is None:
            raise ScenarioError(
                f"spec.steps[{first.index}].interrupt: delivering interruptions needs the "
                "embedded AWS (moto): pip install 'joiner[sim]'"
            )
        return cls(scenario.cluster.region, kube, clock, reclaim)

    def deliver(self, step: InterruptStep, schedule: Schedule, wake: Callable[[], None]) -> None:
        """Publish the step's events, start EC2's side of them, wake the controller."""
        targets = self._targets(step)
        now = self.clock.now()
        for target in targets:
            self._play_ec2(step.kind, target, schedule)
        self.bus.publish(
            [
                event_entry(step.kind, t.instance_id, self.region, now, self.bus.name)
                for t in targets
            ]
        )
        wake()

    def close(self) -> None:
        self.bus.give_back()

    def _targets(self, step: InterruptStep) -> list[Target]:
        return [
            _target(node["metadata"]["name"], node["spec"]["providerID"])
            for node in target_nodes(self.kube, step)
        ]

    def _play_ec2(self, kind: str, target: Target, schedule: Schedule) -> None:
        if kind in ("spot-interruption", CAPACITY_RESERVATION_INTERRUPTION):
            schedule(
                f"reclaim/{target.instance_id}",
                WARNING_SECONDS,
                lambda: self._instance_gone(target),
            )
        elif kind in ("stopping", "stopped"):
            self._node_silent(target.node)
        elif kind in ("shutting-down", "terminated"):
            self._instance_gone(target)

    def publish(self, kind: str, instance_ids: list[str], reclaimed_at: float) -> None:
        """EC2 warns of these instances (a Capacity Block nearing its end)."""
        now = self.clock.now()
        self.bus.publish(
            [
                event_entry(kind, i, self.region, now, self.bus.name, reclaimed_at)
                for i in instance_ids
            ]
        )

    def instance_gone(self, provider_id: str) -> None:
        """EC2 terminated the instance; its node (if it has one) goes silent."""
        node = next(
            (
                n["metadata"]["name"]
                for n in self.kube.list("Node").items
                if (n.get("spec") or {}).get("providerID") == provider_id
            ),
            None,
        )
        self.reclaim(provider_id)
        if node is not None:
            self._node_silent(node)

    def _instance_gone(self, target: Target) -> None:
        self.reclaim(target.provider_id)
        self._node_silent(target.node)

    def _node_silent(self, node_name: str) -> None:
        """The kubelet stops reporting: the node lifecycle controller marks it NotReady."""
        try:
            node = self.kube.get("Node", node_name)
        except NotFound:
            return
        conditions = node.setdefault("status", {}).setdefault("conditions", [])
        set_condition(conditions, "Ready", FALSE, self.clock.now(), reason="NodeStatusUnknown")
        self.kube.update_status(node)


def _target(node: str, provider_id: str) -> Target:
    return Target(node, provider_id, interruption.instance_id_of(provider_id) or "")
