"""Capacity reservations against moto (with Joiner's emulation of them), as the controller
policy allows: capacityReservationSelectorTerms resolved into status and a condition, the
ledger of free slots, reserved offerings, and launches into a reservation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from aws_moto_seed import CLUSTER_INFO_KWARGS, Env, nodeclass_dict
from joiner.api import conditions as cond
from joiner.api import ec2nodeclass as api
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.capacityreservations import ReservationLedger
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.nodeclass import NodeClassResolver, is_ready
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
