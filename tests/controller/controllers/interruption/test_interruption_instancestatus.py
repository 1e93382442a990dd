"""The DescribeInstanceStatus poller against moto's EC2. moto reports every running
instance healthy and without scheduled events; the tests make its instance model report
the failures EC2 would (an impaired check, a retirement event), then read them back
through the real API call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import moto.ec2.models.instances as moto_instances
import pytest
from interruption_world import catalogue
from joiner import testing
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.controllers.context import ControllerContext
from joiner.controllers.interruption.controller import Interruption
from joiner.controllers.interruption.instancestatus import (
    POLL_INTERVAL,
    InstanceStatusPoller,
    messages_from_statuses,
)
from joiner.controllers.interruption.messages import Kind, Message
from joiner.controllers.interruption.queue import InlineReceiver
from joiner.events import EventRecorder
from joiner.kube.memory import MemoryKube
from joiner.metrics import Metrics
from joiner.sim.interruption import InterruptionBus
from joiner.state.cluster import ClusterState

REGION = "us-east-1"
HEALTHY = {"Status": "ok", "Details": [{"Name": "reachability", "Status": "passed"}]}
IMPAIRED = {"Status": "impaired", "Details": [{"Name": "reachability", "Status": "failed"}]}


@pytest.fixture
def ec2(moto_url: str) -> Any:
    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=moto_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def instances(ec2: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Five running instances: impaired instance check, impaired system check, a pending
    retirement, a completed retirement, healthy."""
    launched = ec2.run_instances(
        ImageId="ami-12345678", MinCount=5, MaxCount=5, InstanceType="m5.large"
    )
    ids = [i["InstanceId"] for i in launched["Instances"]]
    instance_checks = {ids[0]: IMPAIRED}
    system_checks = {ids[1]: IMPAIRED}
    events = {
        ids[2]: [
            {
                "Code": "instance-retirement",
                "Description": "The instance is running on degraded hardware",
                "NotBefore": "2026-02-01T00:00:00Z",
            }
        ],
        ids[3]: [
            {
                "Code": "instance-retirement",
                "Description": "[Completed] The instance is running on degraded hardware",
                "NotBefore": "2026-01-01T00:00:00Z",
            }
        ],
    }
    instance_cls = moto_instances.Instance
    monkeypatch.setattr(
        instance_cls, "instance_status", property(lambda i: instance_checks.get(i.id, HEALTHY))
    )
    monkeypatch.setattr(
        instance_cls, "system_status", property(lambda i: system_checks.get(i.id, HEALTHY))
    )
    monkeypatch.setattr(
        instance_cls, "events", property(lambda i: events.get(i.id, [])), raising=False
    )
    yield ids
    ec2.terminate_instances(InstanceIds=ids)


class Rig:
    def __init__(self, ec2: Any, bus: InterruptionBus) -> None:
        self.clock = FakeClock()
        self.kube = MemoryKube(self.clock)
        self.state = ClusterState(self.clock)
        self.metrics = Metrics()
        context = ControllerContext(
            self.kube,
            self.state,
            FakeCloudProvider(catalogue(), self.clock),
            self.clock,
            EventRecorder(self.kube, self.clock),
            self.metrics,
        )
        self.interruption = Interruption(context, InlineReceiver(bus.queue), bus.queue)
        self.poller = InstanceStatusPoller(ec2, self.interruption)

    def add_claim(self, name: str, instance_id: str) -> None:
        created = self.kube.create(
            testing.nodeclaim(name, requirements=[testing.capacity_types("on-demand")])
        )
        created["status"] = {"providerID": f"aws:///{REGION}a/{instance_id}"}
        self.state.apply("ADDED", self.kube.update_status(created))

    def remaining(self) -> list[str]:
        return sorted(c["metadata"]["name"] for c in self.kube.list("NodeClaim").items)


def test_impaired_and_retiring_instances_are_drained(
    ec2: Any, bus: InterruptionBus, instances: list[str]
) -> None:
    rig = Rig(ec2, bus)
    names = ["impaired", "system-impaired", "retiring", "retired-already", "healthy"]
    for name, instance_id in zip(names, instances, strict=True):
        rig.add_claim(name, instance_id)
    result = rig.poller.reconcile("poll")
    assert result.requeue_after == POLL_INTERVAL
    assert rig.remaining() == ["healthy", "retired-already"]
    count = rig.metrics.registry.get_sample_value
    assert (
        count(
            "karpenter_interruption_received_messages_total", {"message_type": "instance_impaired"}
        )
        == 2
    )
    assert (
        count(
            "karpenter_interruption_received_messages_total", {"message_type": "scheduled_change"}
        )
        == 1
    )
    assert (
        count("karpenter_interruption_actions_performed_total", {"action_type": "CordonAndDrain"})
        == 3
    )


def test_instances_that_are_not_ours_are_left_alone(
    ec2: Any, bus: InterruptionBus, instances: list[str]
) -> None:
    rig = Rig(ec2, bus)
    rig.add_claim("healthy", instances[4])
    rig.poller.reconcile("poll")
    assert rig.remaining() == ["healthy"]
    assert (
        rig.metrics.registry.get_sample_value(
            "karpenter_interruption_received_messages_total", {"message_type": "instance_impaired"}
        )
        is None
    )


def test_statuses_to_messages() -> None:
    statuses = [
        {"InstanceId": "i-1", "InstanceStatus": IMPAIRED, "SystemStatus": IMPAIRED},
        {
            "InstanceId": "i-2",
            "InstanceStatus": HEALTHY,
            "SystemStatus": HEALTHY,
            "Events": [{"Code": "system-reboot", "Description": "scheduled reboot"}],
        },
        {"InstanceId": "i-3", "InstanceStatus": {"Status": "initializing"}},
        {"InstanceStatus": IMPAIRED},  # no id: nothing to act on
    ]
    assert messages_from_statuses(statuses) == [
        Message(Kind.INSTANCE_IMPAIRED, "", ("i-1",), "InstanceStatus,SystemStatus"),
        Message(Kind.SCHEDULED_CHANGE, "", ("i-2",), "system-reboot"),
    ]
