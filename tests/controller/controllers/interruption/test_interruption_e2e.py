"""Each message kind end to end: a real-shaped event put on EventBridge (moto) goes
through its rule into the SQS queue, the operator's interruption controller receives
it, acts on the NodeClaim and deletes the message."""

from __future__ import annotations

import pytest
from interruption_world import ZONE_A, ZONE_B, World, big_pod, instance_id
from joiner.api import labels as wk
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.kube.memory import MemoryKube
from joiner.operator import Operator
from joiner.sim.interruption import InterruptionBus, event_entry

DRAINING_KINDS = [
    ("spot-interruption", "SpotInterrupted", "spot_interruption"),
    ("scheduled-change", "InstanceUnhealthy", "scheduled_change"),
    ("stopping", "InstanceStopping", "state_change"),
    ("stopped", "InstanceStopping", "state_change"),
    ("shutting-down", "InstanceTerminating", "state_change"),
    ("terminated", "InstanceTerminating", "state_change"),
    (
        "capacity-reservation-interruption",
        "CapacityReservationInterrupted",
        "capacity_reservation_interruption",
    ),
]


@pytest.mark.parametrize(("kind", "reason", "message_type"), DRAINING_KINDS)
def test_a_draining_message_deletes_the_nodeclaim_and_the_message(
    bus: InterruptionBus, kind: str, reason: str, message_type: str
) -> None:
    world = World(bus)
    first, second = world.launch(2)
    world.publish(kind, first)
    world.advance(1)
    victim = first["metadata"]["name"]
    assert victim not in world.claim_names()
    assert second["metadata"]["name"] in world.claim_names()
    assert (victim, reason) in world.event_reasons()
    assert (
        world.metric("karpenter_interruption_received_messages_total", message_type=message_type)
        == 1
    )
    assert (
        world.metric("karpenter_interruption_actions_performed_total", action_type="CordonAndDrain")
        == 1
    )
    assert (
        world.metric(
            "karpenter_nodeclaims_disrupted_total", nodepool="default", reason="Interrupted"
        )
        == 1
    )
    assert first["status"]["providerID"] not in world.cloud.instances
    assert world.queue_depth() == 0
    assert world.operator.manager.error_count == 0


def test_a_spot_interruption_replaces_the_node_away_from_the_interrupted_offering(
    bus: InterruptionBus,
) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    labels = claim["metadata"]["labels"]
    assert (labels[wk.ZONE], labels[wk.CAPACITY_TYPE]) == (ZONE_A, "spot")
    published_at = world.clock.now()
    world.publish("spot-interruption", claim)
    world.advance(15)  # the pod is pending again: a provisioning batch closes
    (replacement,) = world.nodeclaims()
    assert replacement["metadata"]["name"] != claim["metadata"]["name"]
    new_labels = replacement["metadata"]["labels"]
    assert (new_labels[wk.ZONE], new_labels[wk.CAPACITY_TYPE]) == (ZONE_B, "spot")
    interrupted = ("c-4x8", ZONE_A, "spot")
    # Marked by the next poll, at most a poll interval (1 s) after the event.
    assert published_at < world.cloud.insufficient_capacity[interrupted] <= published_at + 1


def test_a_capacity_reservation_warning_keeps_launches_out_of_reservations_of_that_offering(
    bus: InterruptionBus,
) -> None:
    """As upstream marks the reservation unavailable: the replacement of a node whose
    reservation is being reclaimed does not go back into it."""
    world = World(bus)
    (claim,) = world.launch(1)
    published_at = world.clock.now()
    world.publish("capacity-reservation-interruption", claim)
    world.advance(1)
    assert set(world.cloud.insufficient_capacity) == {("c-4x8", ZONE_A, "reserved")}
    assert published_at < world.cloud.insufficient_capacity[("c-4x8", ZONE_A, "reserved")]


def test_the_interrupted_offering_is_usable_again_after_three_minutes(
    bus: InterruptionBus,
) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    world.publish("spot-interruption", claim)
    world.advance(181)
    world.unschedulable(big_pod("later"))
    world.advance(15)
    zones = sorted(c["metadata"]["labels"][wk.ZONE] for c in world.nodeclaims())
    assert zones == [ZONE_A, ZONE_B]  # the replacement in B, the later pod's node in A


def test_a_rebalance_recommendation_is_an_event_only(bus: InterruptionBus) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    world.publish("rebalance", claim)
    world.advance(1)
    name = claim["metadata"]["name"]
    assert world.claim_names() == [name]
    assert not world.kube.get("NodeClaim", name)["metadata"].get("deletionTimestamp")
    assert world.event_reasons() == [(name, "SpotRebalanceRecommendation")]
    assert (
        world.metric(
            "karpenter_interruption_received_messages_total",
            message_type="rebalance_recommendation",
        )
        == 1
    )
    assert (
        world.metric("karpenter_interruption_actions_performed_total", action_type="NoAction") == 1
    )
    assert world.cloud.insufficient_capacity == {}
    assert world.queue_depth() == 0


def test_a_rebalance_recommendation_replaces_the_node_when_asked_to(bus: InterruptionBus) -> None:
    world = World(bus, replace_on_rebalance=True)
    first, second = world.launch(2)
    world.publish("rebalance", first)
    world.advance(1)
    assert first["metadata"]["name"] not in world.claim_names()
    assert second["metadata"]["name"] in world.claim_names()


def test_other_instance_states_are_ignored(bus: InterruptionBus) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    entry = event_entry("stopping", instance_id(claim), "us-east-1", world.clock.now(), bus.name)
    for state in ("pending", "running"):
        bus.publish([{**entry, "Detail": entry["Detail"].replace("stopping", state)}])
    world.advance(1)
    assert world.claim_names() == [claim["metadata"]["name"]]
    assert (
        world.metric("karpenter_interruption_received_messages_total", message_type="state_change")
        == 2
    )
    assert (
        world.metric("karpenter_interruption_actions_performed_total", action_type="NoAction") == 2
    )
    assert world.queue_depth() == 0


def test_a_health_event_about_another_service_changes_nothing(bus: InterruptionBus) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    entry = event_entry(
        "scheduled-change", instance_id(claim), "us-east-1", world.clock.now(), bus.name
    )
    bus.publish([{**entry, "Detail": entry["Detail"].replace('"EC2"', '"RDS"')}])
    world.advance(1)
    assert world.claim_names() == [claim["metadata"]["name"]]
    assert world.metric("karpenter_interruption_received_messages_total", message_type="noop") == 1
    assert world.queue_depth() == 0


def test_a_message_about_an_instance_we_do_not_know_is_deleted(bus: InterruptionBus) -> None:
    world = World(bus)
    (claim,) = world.launch(1)
    bus.publish(
        [event_entry("spot-interruption", "i-0123456789abcdef0", "us-east-1", 0.0, bus.name)]
    )
    world.advance(1)
    assert world.claim_names() == [claim["metadata"]["name"]]
    assert (
        world.metric("karpenter_interruption_actions_performed_total", action_type="NoAction") == 1
    )
    assert world.queue_depth() == 0


def test_a_repeated_warning_acts_once(bus: InterruptionBus) -> None:
    world = World(bus)
    first, _ = world.launch(2)
    world.publish("spot-interruption", first)
    world.publish("spot-interruption", first)
    world.advance(1)
    assert (
        world.metric(
            "karpenter_interruption_received_messages_total", message_type="spot_interruption"
        )
        == 2
    )
    assert (
        world.metric("karpenter_interruption_actions_performed_total", action_type="CordonAndDrain")
        == 1
    )
    assert world.queue_depth() == 0


def test_many_messages_at_once_are_all_handled(bus: InterruptionBus) -> None:
    """More than one receive's worth (10): the controller keeps receiving until empty."""
    world = World(bus)
    claims = world.launch(25)
    bus.publish(
        [
            event_entry("spot-interruption", instance_id(c), "us-east-1", 0.0, bus.name)
            for c in claims
        ]
    )
    world.advance(1)
    assert not set(world.claim_names()) & {c["metadata"]["name"] for c in claims}
    assert (
        world.metric("karpenter_interruption_actions_performed_total", action_type="CordonAndDrain")
        == 25
    )
    assert world.queue_depth() == 0
    assert world.operator.manager.error_count == 0


def test_without_a_queue_there_is_no_interruption_controller() -> None:
    clock = FakeClock()
    cloud = FakeCloudProvider([], clock)
    operator = Operator(MemoryKube(clock), cloud, clock, cloud.resolve_nodeclass)
    assert operator.interruption is None
