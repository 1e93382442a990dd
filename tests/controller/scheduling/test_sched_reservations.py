"""Free reserved slots are counted while a batch is planned [issue 22]: a solve never plans
more NodeClaims into a reservation than it has free slots; the NodeClaims past them are
planned on the next capacity type the pool allows, in the same plan."""

from __future__ import annotations

from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import Offering
from sched_builders import nodepool, pod, run

RESERVATION = "cr-0a1b2c3d4e5f60718"
OTHER = "cr-0f0e0d0c0b0a09080"
ZONE = "test-zone-1a"


def _reserved(slots: int, reservation: str = RESERVATION, zone: str = ZONE) -> Offering:
    return Offering(
        zone,
        wk.CAPACITY_TYPE_RESERVED,
        0.0000001,
        available=slots > 0,
        reservation_id=reservation,
        reservation_type="default",
        reservation_capacity=slots,
    )


def _types(*reserved: Offering) -> list:
    """A 4-CPU type, on-demand in the zone plus ``reserved``; a dearer 8-CPU one,
    on-demand only."""
    return [
        new_instance_type(
            "m-4", cpu="4", memory="16Gi", offerings=[Offering(ZONE, "on-demand", 0.2), *reserved]
        ),
        new_instance_type(
            "m-8", cpu="8", memory="32Gi", offerings=[Offering(ZONE, "on-demand", 0.4)]
        ),
    ]


def _pool(*capacity_types: str):
    return nodepool(
        requirements=[{"key": wk.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)}]
    )


def _capacity_types(plan) -> list[list[str]]:
    return [
        next(r["values"] for r in nc.requirements if r["key"] == wk.CAPACITY_TYPE)
        for nc in plan.nodeclaims
    ]


def _pods(count: int) -> list:
    return [pod(f"p{i}", cpu="3", memory="1Gi") for i in range(count)]  # one per m-4


def test_a_batch_plans_no_more_reserved_nodeclaims_than_free_slots() -> None:
    plan = run(_pods(3), [_pool("reserved", "on-demand")], _types(_reserved(2)))
    assert len(plan.nodeclaims) == 3 and not plan.unplaceable
    assert _capacity_types(plan) == [["on-demand", "reserved"]] * 2 + [["on-demand"]]
    assert [nc.instance_types[0] for nc in plan.nodeclaims] == ["m-4", "m-4", "m-4"]
    assert [nc.price for nc in plan.nodeclaims] == [0.0000001, 0.0000001, 0.2]


def test_slots_of_every_reservation_the_nodeclaim_may_use_count() -> None:
    types = _types(_reserved(1), _reserved(1, OTHER))
    plan = run(_pods(3), [_pool("reserved", "on-demand")], types)
    assert _capacity_types(plan) == [["on-demand", "reserved"]] * 2 + [["on-demand"]]


def test_with_only_reserved_allowed_the_nodeclaims_past_the_slots_are_left_to_the_launch() -> None:
    """Nothing else to plan them on: planned in the reservation, the launch finds it full
    (insufficient capacity) and their pods are provisioned again, as before."""
    plan = run(_pods(3), [_pool("reserved")], _types(_reserved(2)))
    assert _capacity_types(plan) == [["reserved"]] * 3
