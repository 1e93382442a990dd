"""Capacity reservations against moto (with Joiner's emulation of them), as the controller
policy allows: capacityReservationSelectorTerms resolved into status and a condition, the
ledger of free slots, reserved offerings, and launches into a reservation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_moto_seed import (
    CLUSTER_INFO_KWARGS,
    Env,
    Stand,
    make_stand,
    nodeclaim_dict,
    nodeclass_dict,
)
from joiner.api import conditions as cond
from joiner.api import ec2nodeclass as api
from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodeclaim import NodeClaim
from joiner.api.requirements import Requirements
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.capacityreservations import ReservationLedger, next_change
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.nodeclass import NodeClassResolver, is_ready
from joiner.cloudprovider.aws.pricing import RESERVED_PRICE_DIVISOR, PricingProvider
from joiner.cloudprovider.types import InsufficientCapacityError
from joiner.sim.moto_reservations import CapacityReservation, add_reservation, new_reservation_id
from moto.core import DEFAULT_ACCOUNT_ID

FIELD = "capacityReservationSelectorTerms"


def reserve(
    env: Env,
    instance_type: str = "m5.large",
    zone: str = "us-east-1a",
    count: int = 2,
    tags: dict[str, str] | None = None,
    **extra: Any,
) -> str:
    specs = [
        {
            "ResourceType": "capacity-reservation",
            "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()],
        }
    ]
    return env.clients.ec2.create_capacity_reservation(
        InstanceType=instance_type,
        InstancePlatform="Linux/UNIX",
        AvailabilityZone=zone,
        InstanceCount=count,
        TagSpecifications=specs if tags else [],
        **extra,
    )["CapacityReservation"]["CapacityReservationId"]


def resolve(
    env: Env, terms: list[dict[str, Any]], clock: FakeClock | None = None
) -> tuple[dict[str, Any], ReservationLedger]:
    ledger = ReservationLedger()
    resolver = NodeClassResolver(
        env.controller,
        clock or FakeClock(),
        ClusterInfo(**CLUSTER_INFO_KWARGS),
        "us-east-1",
        ledger,
    )
    nodeclass = EC2NodeClass.from_dict(nodeclass_dict(**{FIELD: terms}))
    return resolver.resolve(nodeclass), ledger


def condition(status: dict[str, Any]) -> tuple[str, str, str]:
    found = cond.get_condition(status["conditions"], api.CAPACITY_RESERVATIONS_READY)
    assert found is not None
    return found["status"], found["reason"], found["message"]


def test_terms_by_id_and_by_tags_resolve_into_status_and_the_ledger(env: Env) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)
    by_id = reserve(env, count=3, EndDate=end, EndDateType="limited")
    by_tag = reserve(
        env, "c5.xlarge", "us-east-1b", 1, tags={"team": "ml"}, InstanceMatchCriteria="targeted"
    )
    reserve(env, tags={"team": "web"})  # selected by no term
    status, ledger = resolve(env, [{"id": by_id}, {"tags": {"team": "ml"}}])
    expected = {
        by_id: {
            "availabilityZone": "us-east-1a",
            "endTime": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "id": by_id,
            "instanceMatchCriteria": "open",
            "instanceType": "m5.large",
            "ownerID": DEFAULT_ACCOUNT_ID,
            "reservationType": "default",
            "state": "active",
        },
        by_tag: {
            "availabilityZone": "us-east-1b",
            "id": by_tag,
            "instanceMatchCriteria": "targeted",
            "instanceType": "c5.xlarge",
            "ownerID": DEFAULT_ACCOUNT_ID,
            "reservationType": "default",
            "state": "active",
        },
    }
    assert status["capacityReservations"] == [expected[i] for i in sorted(expected)]
    assert (ledger.available(by_id), ledger.available(by_tag)) == (3, 1)
    assert condition(status) == ("True", api.CAPACITY_RESERVATIONS_READY, "")


def test_owner_and_match_criteria_narrow_a_term(env: Env) -> None:
    targeted = reserve(env, tags={"team": "ml"}, InstanceMatchCriteria="targeted")
    reserve(env, tags={"team": "ml"})  # open
    status, _ = resolve(
        env,
        [
            {
                "tags": {"team": "*"},
                "ownerID": DEFAULT_ACCOUNT_ID,
                "instanceMatchCriteria": "targeted",
            }
        ],
    )
    assert [r["id"] for r in status["capacityReservations"]] == [targeted]
    other_owner, _ = resolve(env, [{"tags": {"team": "ml"}, "ownerID": "111122223333"}])
    assert "capacityReservations" not in other_owner


def test_a_term_that_matches_nothing_is_a_condition_and_the_class_stays_ready(env: Env) -> None:
    found = reserve(env, tags={"team": "ml"})
    cancelled = reserve(env)
    env.clients.ec2.cancel_capacity_reservation(CapacityReservationId=cancelled)
    status, _ = resolve(
        env, [{"tags": {"team": "ml"}}, {"id": "cr-0123456789abcdef0"}, {"id": cancelled}]
    )
    assert [r["id"] for r in status["capacityReservations"]] == [found]
    assert condition(status) == (
        "False",
        "NotFound",
        f"no active capacity reservation matches spec.{FIELD}[1]; "
        f"no active capacity reservation matches spec.{FIELD}[2]",
    )
    nodeclass = EC2NodeClass.from_dict(nodeclass_dict())
    nodeclass.status = status
    assert is_ready(nodeclass)  # on-demand and spot launches need no reservation


def test_an_ended_reservation_is_left_out(env: Env) -> None:
    clock = FakeClock()
    end = datetime.fromtimestamp(clock.now(), UTC) + timedelta(hours=1)
    ending = reserve(env, EndDate=end, EndDateType="limited")
    status, _ = resolve(env, [{"id": ending}], clock)
    assert [r["id"] for r in status["capacityReservations"]] == [ending]
    clock.advance(3600)
    status, _ = resolve(env, [{"id": ending}], clock)
    assert "capacityReservations" not in status
    assert condition(status)[1] == "NotFound"


def _block(end: datetime, zone: str = "us-east-1a") -> str:
    """A Capacity Block of one m5.large, active now, ending at ``end``."""
    return add_reservation(
        DEFAULT_ACCOUNT_ID,
        "us-east-1",
        CapacityReservation(
            new_reservation_id(), "m5.large", zone, 1, reservation_type="capacity-block", end=end
        ),
    )


def test_a_capacity_block_is_expiring_from_40_minutes_before_its_end(env: Env) -> None:
    """Upstream's moment: EC2's interruption warning. An ODCR with an end never expires
    early; the class is looked at again at each moment a reservation changes."""
    clock = FakeClock()
    end = datetime.fromtimestamp(clock.now(), UTC) + timedelta(hours=2)
    block = _block(end)
    odcr = reserve(env, EndDate=end, EndDateType="limited")
    terms = [{"id": block}, {"id": odcr}]

    def states() -> dict[str, str]:
        status, _ = resolve(env, terms, clock)
        return {r["id"]: r["state"] for r in status["capacityReservations"]}

    drain = end.timestamp() - 40 * 60
    assert states() == {block: "active", odcr: "active"}
    status, _ = resolve(env, terms, clock)
    assert next_change(status["capacityReservations"], clock.now()) == drain
    clock.advance(drain - clock.now() - 1)
    assert states() == {block: "active", odcr: "active"}
    clock.advance(1)
    assert states() == {block: "expiring", odcr: "active"}
    status, _ = resolve(env, terms, clock)
    assert next_change(status["capacityReservations"], clock.now()) == end.timestamp()


def test_a_class_without_terms_describes_no_reservation(env: Env) -> None:
    reserve(env)
    status, _ = resolve(env, [])
    assert "capacityReservations" not in status
    assert condition(status) == ("True", api.CAPACITY_RESERVATIONS_READY, "")
    assert "ec2:DescribeCapacityReservations" not in env.audit.used


# --- the ledger ------------------------------------------------------------------------


def test_two_launches_in_flight_never_count_on_one_slot() -> None:
    ledger = ReservationLedger()
    ledger.sync({"cr-1": 1, "cr-2": 2}, ledger.token())
    first = ledger.take(["cr-1", "cr-2"])
    assert first.keys() == {"cr-1", "cr-2"}
    second = ledger.take(["cr-1", "cr-2"])
    assert second.keys() == {"cr-2"}  # cr-1's one slot is the first launch's
    assert (ledger.available("cr-1"), ledger.available("cr-2")) == (0, 0)
    ledger.settle(first, launched="cr-2")  # went into cr-2: cr-1's slot comes back
    assert (ledger.available("cr-1"), ledger.available("cr-2")) == (1, 0)
    ledger.settle(second, launched=None)  # failed: its slot comes back
    assert ledger.available("cr-2") == 1


def test_a_sync_counts_launches_that_ended_after_the_describe_began() -> None:
    ledger = ReservationLedger()
    ledger.sync({"cr-1": 3}, ledger.token())
    ledger.settle(ledger.take(["cr-1"]), launched="cr-1")  # in EC2's next count
    token = ledger.token()  # a describe begins...
    ledger.settle(ledger.take(["cr-1"]), launched="cr-1")  # ...this one is not in its answer
    ledger.sync({"cr-1": 2}, token)
    assert ledger.available("cr-1") == 1
    ledger.sync({"cr-1": 1}, ledger.token())  # a later describe counts both
    assert ledger.available("cr-1") == 1


def test_exhaustion_and_termination_move_the_count() -> None:
    ledger = ReservationLedger()
    ledger.sync({"cr-1": 2}, ledger.token())
    generation = ledger.generation
    ledger.exhausted("cr-1")
    assert ledger.available("cr-1") == 0
    assert ledger.generation != generation
    ledger.released("cr-1")
    assert ledger.available("cr-1") == 1
    assert ledger.available("cr-unknown") == 0


# --- offerings and launches ------------------------------------------------------------

M5 = {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}
RESERVED_OR_ON_DEMAND = {
    "key": wk.CAPACITY_TYPE,
    "operator": "In",
    "values": ["reserved", "on-demand"],
}


@pytest.fixture
def stand(env: Env, catalogue: InstanceTypeCatalogue, pricing: PricingProvider) -> Stand:
    return make_stand(env, catalogue, pricing)


def claim(name: str, *requirements: dict[str, Any]) -> NodeClaim:
    return NodeClaim.from_dict(nodeclaim_dict(name, [M5, *requirements]))


def launched_in(env: Env, nodeclaim: NodeClaim) -> str | None:
    instance_id = nodeclaim.status.provider_id.rsplit("/", 1)[-1]
    described = env.clients.ec2.describe_instances(InstanceIds=[instance_id])
    return described["Reservations"][0]["Instances"][0].get("CapacityReservationId")


def available(env: Env, reservation_id: str) -> int:
    described = env.clients.ec2.describe_capacity_reservations(
        CapacityReservationIds=[reservation_id]
    )
    return described["CapacityReservations"][0]["AvailableInstanceCount"]


def reservation_labels(nodeclaim: NodeClaim) -> dict[str, str]:
    keys = (wk.CAPACITY_TYPE, wk.CAPACITY_RESERVATION_ID, wk.CAPACITY_RESERVATION_TYPE)
    return {k: nodeclaim.labels[k] for k in keys if k in nodeclaim.labels}


def test_a_reservation_is_an_offering_next_to_free(stand: Stand, env: Env) -> None:
    reservation = reserve(env, count=1)
    nodeclass = stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    [m5] = [it for it in stand.provider.instance_types_for(nodeclass) if it.name == "m5.large"]
    [reserved] = [o for o in m5.offerings if o.capacity_type == "reserved"]
    on_demand = next(
        o for o in m5.offerings if (o.capacity_type, o.zone) == ("on-demand", "us-east-1a")
    )
    assert (reserved.zone, reserved.reservation_id, reserved.available) == (
        "us-east-1a",
        reservation,
        True,
    )
    assert reserved.price == pytest.approx(on_demand.price / RESERVED_PRICE_DIVISOR)
    assert m5.requirements.get_requirement(wk.CAPACITY_RESERVATION_ID).values == {reservation}
    c5 = next(it for it in stand.provider.instance_types_for(nodeclass) if it.name == "c5.large")
    assert "reserved" not in {o.capacity_type for o in c5.offerings}
    wants_block = Requirements.from_node_selector_requirements(
        [{"key": wk.CAPACITY_RESERVATION_TYPE, "operator": "In", "values": ["capacity-block"]}]
    )
    assert m5.compatible_offerings(wants_block) == []


def test_the_reservation_is_filled_first_then_on_demand(stand: Stand, env: Env) -> None:
    reservation = reserve(env, count=1)
    stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    first = stand.provider.create(claim("default-1", RESERVED_OR_ON_DEMAND))
    assert reservation_labels(first) == {
        wk.CAPACITY_TYPE: "reserved",
        wk.CAPACITY_RESERVATION_ID: reservation,
        wk.CAPACITY_RESERVATION_TYPE: "default",
    }
    assert launched_in(env, first) == reservation
    request = stand.fleets.requests[-1]
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    template = request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]
    versions = env.clients.ec2.describe_launch_template_versions(
        LaunchTemplateName=template["LaunchTemplateName"]
    )
    data = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": reservation}
    }
    assert available(env, reservation) == 0

    second = stand.provider.create(claim("default-2", RESERVED_OR_ON_DEMAND))
    assert reservation_labels(second) == {wk.CAPACITY_TYPE: "on-demand"}
    assert launched_in(env, second) is None
    assert len(stand.fleets.requests) == 2  # no launch was tried into the full reservation


def test_a_pool_without_reserved_never_uses_the_reservation(stand: Stand, env: Env) -> None:
    reservation = reserve(env, count=1)
    stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    on_demand_only = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}
    launched = stand.provider.create(claim("default-1", on_demand_only))
    assert reservation_labels(launched) == {wk.CAPACITY_TYPE: "on-demand"}
    assert available(env, reservation) == 1


def test_exhaustion_ec2_reports_falls_back_on_the_next_launch(stand: Stand, env: Env) -> None:
    """The class resolved a free slot that someone else then took: EC2 answers
    ReservationCapacityExceeded, the launch fails as insufficient capacity, and the next
    one goes on-demand without trying the reservation again."""
    reservation = reserve(env, count=1)
    stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    outsider = stand.provider.create(claim("outside-1", RESERVED_OR_ON_DEMAND))
    stand.provider.reservations.released(reservation)  # as if the ledger had not seen it
    assert stand.provider.reservations.available(reservation) == 1
    with pytest.raises(InsufficientCapacityError, match="ReservationCapacityExceeded"):
        stand.provider.create(claim("default-1", RESERVED_OR_ON_DEMAND))
    assert stand.provider.reservations.available(reservation) == 0
    fallback = stand.provider.create(claim("default-2", RESERVED_OR_ON_DEMAND))
    assert reservation_labels(fallback) == {wk.CAPACITY_TYPE: "on-demand"}
    assert launched_in(env, outsider) == reservation


def test_deleting_a_reserved_node_frees_its_slot(stand: Stand, env: Env) -> None:
    reservation = reserve(env, count=1)
    stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    launched = stand.provider.create(claim("default-1", RESERVED_OR_ON_DEMAND))
    [listed] = stand.provider.list()
    assert reservation_labels(listed) == reservation_labels(launched)
    stand.provider.delete(launched)
    assert stand.provider.reservations.available(reservation) == 1
    assert available(env, reservation) == 1
    again = stand.provider.create(claim("default-2", RESERVED_OR_ON_DEMAND))
    assert launched_in(env, again) == reservation


def test_a_capacity_block_is_launched_as_one(stand: Stand, env: Env) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=12)
    block = add_reservation(
        DEFAULT_ACCOUNT_ID,
        "us-east-1",
        CapacityReservation(
            new_reservation_id(),
            "m5.large",
            "us-east-1b",
            1,
            reservation_type="capacity-block",
            end=end,
        ),
    )
    stand.add_nodeclass(**{FIELD: [{"id": block}]})
    wants_block = {
        "key": wk.CAPACITY_RESERVATION_TYPE,
        "operator": "In",
        "values": ["capacity-block"],
    }
    launched = stand.provider.create(claim("default-1", RESERVED_OR_ON_DEMAND, wants_block))
    assert reservation_labels(launched) == {
        wk.CAPACITY_TYPE: "reserved",
        wk.CAPACITY_RESERVATION_ID: block,
        wk.CAPACITY_RESERVATION_TYPE: "capacity-block",
    }
    template = stand.fleets.requests[-1]["LaunchTemplateConfigs"][0]
    name = template["LaunchTemplateSpecification"]["LaunchTemplateName"]
    versions = env.clients.ec2.describe_launch_template_versions(LaunchTemplateName=name)
    data = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    with pytest.raises(InsufficientCapacityError):  # the block is full; nothing else fits
        stand.provider.create(claim("default-2", RESERVED_OR_ON_DEMAND, wants_block))


def test_an_expiring_capacity_block_offers_no_slot(stand: Stand, env: Env) -> None:
    """Nothing launches into a block within 40 minutes of its end (as upstream)."""
    end = datetime.fromtimestamp(stand.clock.now(), UTC) + timedelta(minutes=39)
    block = _block(end)
    nodeclass = stand.add_nodeclass(**{FIELD: [{"id": block}]})
    assert [r["state"] for r in nodeclass.status["capacityReservations"]] == ["expiring"]
    [m5] = [it for it in stand.provider.instance_types_for(nodeclass) if it.name == "m5.large"]
    [reserved] = [o for o in m5.offerings if o.capacity_type == "reserved"]
    assert (reserved.reservation_id, reserved.available) == (block, False)
    launched = stand.provider.create(claim("default-1", RESERVED_OR_ON_DEMAND))
    assert reservation_labels(launched) == {wk.CAPACITY_TYPE: "on-demand"}
    assert launched_in(env, launched) is None


def test_an_interruption_warning_keeps_launches_out_of_the_reservation(
    stand: Stand, env: Env
) -> None:
    """The interruption controller marks (type, zone, reserved) after a capacity
    reservation's warning: for 3 minutes the reservation's offering is unavailable."""
    reservation = reserve(env, count=2)
    nodeclass = stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    stand.provider.mark_unavailable("m5.large", "us-east-1a", "reserved")
    [m5] = [it for it in stand.provider.instance_types_for(nodeclass) if it.name == "m5.large"]
    [reserved] = [o for o in m5.offerings if o.capacity_type == "reserved"]
    assert reserved.available is False
    stand.clock.advance(180)
    [m5] = [it for it in stand.provider.instance_types_for(nodeclass) if it.name == "m5.large"]
    assert [o.available for o in m5.offerings if o.capacity_type == "reserved"] == [True]


def test_a_node_whose_reservation_left_the_class_drifts(stand: Stand, env: Env) -> None:
    reservation = reserve(env, count=1)
    stand.add_nodeclass(**{FIELD: [{"id": reservation}]})
    reserved = stand.provider.create(claim("default-1", RESERVED_OR_ON_DEMAND))
    on_demand = stand.provider.create(claim("default-2", RESERVED_OR_ON_DEMAND))
    assert stand.provider.is_drifted(reserved) is None
    stand.add_nodeclass()  # the term removed: the class selects no reservation
    assert stand.provider.is_drifted(reserved) == "CapacityReservationDrift"
    assert stand.provider.is_drifted(on_demand) is None
