"""The end of a Capacity Block, controller side: a NodeClaim in a block is deleted (and so
drained) 40 minutes before the block's end, as upstream; other NodeClaims are not; the
class is looked at again at each moment one of its reservations changes."""

from __future__ import annotations

from typing import Any

from joiner import testing
from joiner.api import labels as wk
from joiner.clock import FakeClock, to_rfc3339
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.controllers.capacityblock import EXPIRING, CapacityBlockExpiration
from joiner.controllers.context import ControllerContext
from joiner.controllers.nodeclass import RESOLVE_INTERVAL, NodeClassStatus
from joiner.controllers.runtime import DONE
from joiner.events import EventRecorder
from joiner.kube.memory import MemoryKube
from joiner.metrics import Metrics
from joiner.state.cluster import WATCHED_KINDS, ClusterState

BLOCK = "cr-0b10c0000000000001"
END = 7200.0
DRAIN = END - 2400


def _entry(reservation_id: str, reservation_type: str, end: float) -> dict[str, Any]:
    return {
        "id": reservation_id,
        "instanceType": "m5.large",
        "availabilityZone": "us-east-1a",
        "ownerID": "123456789012",
        "instanceMatchCriteria": "targeted",
        "reservationType": reservation_type,
        "state": "active",
        "endTime": to_rfc3339(end),
    }


def _claim(name: str, reservation_id: str | None, reservation_type: str) -> dict[str, Any]:
    labels = {}
    if reservation_id is not None:
        labels = {
            wk.CAPACITY_TYPE: "reserved",
            wk.CAPACITY_RESERVATION_ID: reservation_id,
            wk.CAPACITY_RESERVATION_TYPE: reservation_type,
        }
    claim = testing.nodeclaim(name, labels=labels)
    claim["metadata"]["finalizers"] = [wk.TERMINATION_FINALIZER]  # termination drains it
    return claim


class World:
    def __init__(self) -> None:
        self.clock = FakeClock(0)
        self.kube = MemoryKube(self.clock)
        self.state = ClusterState(self.clock)
        for kind in WATCHED_KINDS:
            self.state.mark_listed(kind)
        nodeclass = testing.ec2nodeclass()
        nodeclass["status"] = {
            "capacityReservations": [
                _entry(BLOCK, "capacity-block", END),
                _entry("cr-0dc400000000000001", "default", END),
            ]
        }
        self.state.apply("ADDED", nodeclass)
        cloud = FakeCloudProvider([], self.clock)
        recorder = EventRecorder(self.kube, self.clock)
        ctx = ControllerContext(self.kube, self.state, cloud, self.clock, recorder, Metrics())
        self.controller = CapacityBlockExpiration(ctx)

    def add(self, claim: dict[str, Any]) -> None:
        self.state.apply("ADDED", self.kube.create(claim))

    def deleting(self) -> list[str]:
        return sorted(
            c["metadata"]["name"]
            for c in self.kube.list("NodeClaim").items
            if c["metadata"].get("deletionTimestamp")
        )


def test_a_node_in_a_block_is_deleted_40_minutes_before_the_end_and_no_other() -> None:
    world = World()
    world.add(_claim("in-block", BLOCK, "capacity-block"))
    world.add(_claim("in-odcr", "cr-0dc400000000000001", "default"))
    world.add(_claim("on-demand", None, ""))
    assert world.controller.reconcile("in-block").requeue_after == DRAIN
    assert world.controller.reconcile("in-odcr") == DONE
    assert world.controller.reconcile("on-demand") == DONE
    world.clock.advance(DRAIN - 1)
    assert world.controller.reconcile("in-block").requeue_after == 1
    assert world.deleting() == []
    world.clock.advance(1)
    assert world.controller.reconcile("in-block") == DONE
    assert world.kube.get("NodeClaim", "in-block")["metadata"].get("deletionTimestamp")
    events = [e for e in world.kube.list("Event").items if e["reason"] == EXPIRING]
    assert [e["involvedObject"]["name"] for e in events] == ["in-block"]
    assert events[0]["message"] == (f"Capacity block {BLOCK} ends in 40 minutes: draining the node")


def test_a_node_whose_block_the_class_no_longer_lists_is_left_to_drift() -> None:
    world = World()
    world.add(_claim("elsewhere", "cr-0b10c0000000000999", "capacity-block"))
    world.clock.advance(END)
    assert world.controller.reconcile("elsewhere") == DONE
    assert world.deleting() == []


def test_the_class_is_looked_at_again_when_a_reservation_goes_expiring_or_ends() -> None:
    clock = FakeClock(0)
    kube = MemoryKube(clock)
    state = ClusterState(clock)
    statuses = {"status": {"capacityReservations": [_entry(BLOCK, "capacity-block", END)]}}
    controller = NodeClassStatus(
        kube, state, clock, lambda nc: dict(statuses["status"]), lambda nc: None
    )
    kube.create(testing.ec2nodeclass())
    assert controller.reconcile("default").requeue_after == RESOLVE_INTERVAL
    clock.advance(DRAIN - 60)
    assert controller.reconcile("default").requeue_after == 60  # the block goes expiring
    clock.advance(60)
    assert controller.reconcile("default").requeue_after == RESOLVE_INTERVAL
    clock.advance(2400 - 30)
    assert controller.reconcile("default").requeue_after == 30  # the block ends
