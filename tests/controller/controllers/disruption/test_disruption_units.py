"""Budgets [DISR-4], eviction cost [DISR-8], do-not-disrupt [API-2] and the check that spares
consolidation a simulation [DISR-7], as pure functions."""

from __future__ import annotations

import pytest
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import Budget, NodePool
from joiner.clock import from_rfc3339
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.controllers.disruption import methods
from joiner.controllers.disruption.budgets import (
    allowed_disruptions,
    budget_active,
    budget_value,
)
from joiner.controllers.disruption.candidates import (
    Candidate,
    do_not_disrupt_until,
    eviction_cost,
)
from joiner.controllers.disruption.methods import (
    ConsolidationOptions,
    PodShapes,
    Rooms,
    least_replacement_load,
    no_cheaper_home,
)
from joiner.state.node import StateNode

MIDNIGHT = from_rfc3339("2026-01-01T00:00:00Z")


def pool(budgets: list[dict]) -> NodePool:
    return NodePool.from_dict(
        {
            "metadata": {"name": "p"},
            "spec": {
                "template": {"spec": {"nodeClassRef": {"name": "default"}}},
                "disruption": {"budgets": budgets},
            },
        }
    )


def node(name: str, ready: bool = True, deleting: bool = False) -> StateNode:
    meta = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return StateNode(node={"metadata": meta, "spec": {}, "status": status})


def test_percentages_round_up_and_counts_are_taken_as_is():
    assert budget_value(Budget(nodes="10%"), 3) == 1
    assert budget_value(Budget(nodes="30%"), 10) == 3
    assert budget_value(Budget(nodes="30%"), 4) == 2
    assert budget_value(Budget(nodes="0%"), 10) == 0
    assert budget_value(Budget(nodes="5"), 2) == 5


def test_a_scheduled_budget_is_active_for_its_duration_after_each_fire():
    budget = Budget(nodes="0", schedule="0 9 * * 1-5", duration="8h")  # weekdays 09-17 UTC
    thursday_9am = MIDNIGHT + 9 * 3600  # 2026-01-01 is a Thursday
    assert budget_active(budget, thursday_9am)
    assert budget_active(budget, thursday_9am + 8 * 3600 - 1)
    assert not budget_active(budget, thursday_9am + 8 * 3600)
    assert not budget_active(budget, thursday_9am - 1)
    saturday_10am = MIDNIGHT + 2 * 86400 + 10 * 3600
    assert not budget_active(budget, saturday_10am)


def test_macros_mean_their_cron_expressions():
    assert budget_active(Budget(nodes="0", schedule="@daily", duration="1h"), MIDNIGHT + 3599)
    assert not budget_active(Budget(nodes="0", schedule="@daily", duration="1h"), MIDNIGHT + 3600)
    assert budget_active(Budget(nodes="0", schedule="@hourly", duration="10m"), MIDNIGHT + 7799)


def test_a_schedule_joiner_cannot_read_keeps_its_budget_active():
    """The API server takes any five words (and six cron fields); such a budget can only
    restrict disruption [docs/compatibility.md, cron]."""
    for schedule in ("61 * * * *", "every day at nine ok", "0 0 9 * * 1", "@dailyish"):
        budget = Budget(nodes="0", schedule=schedule, duration="1h")
        assert all(budget_active(budget, MIDNIGHT + hour * 3600) for hour in range(0, 48, 5))
    nodes = [node("a"), node("b")]
    p = pool([{"nodes": "0", "schedule": "61 * * * *", "duration": "1h"}, {"nodes": "100%"}])
    assert allowed_disruptions(p, "Empty", nodes, MIDNIGHT + 7 * 3600) == 0


def test_a_budget_duration_beyond_292_years_lasts_from_its_first_start_on():
    budget = Budget(nodes="0", schedule="@yearly", duration="9999999999999h")
    assert budget_active(budget, MIDNIGHT + 40 * 365 * 86400)


def test_allowed_is_the_smallest_active_budget_minus_nodes_already_disrupting():
    nodes = [node("a"), node("b", ready=False), node("c", deleting=True), node("d"), node("e")]
    p = pool([{"nodes": "100%"}, {"nodes": "3"}])
    assert allowed_disruptions(p, "Empty", nodes, MIDNIGHT) == 1  # min(5, 3) - 2
    assert allowed_disruptions(p, "Empty", nodes, MIDNIGHT, frozenset({"d"})) == 0


def test_budgets_apply_only_to_the_reasons_they_name():
    nodes = [node("a"), node("b")]
    p = pool([{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "100%"}])
    assert allowed_disruptions(p, "Drifted", nodes, MIDNIGHT) == 0
    assert allowed_disruptions(p, "Underutilized", nodes, MIDNIGHT) == 2


def test_eviction_cost_follows_deletion_cost_and_priority_and_is_clamped():
    def pod(deletion_cost: str | None = None, priority: int | None = None) -> dict:
        annotations = (
            {}
            if deletion_cost is None
            else {"controller.kubernetes.io/pod-deletion-cost": deletion_cost}
        )
        spec = {} if priority is None else {"priority": priority}
        return {"metadata": {"annotations": annotations}, "spec": spec}

    def cost(p: dict) -> float:
        return eviction_cost(p, deletion_cost_managed=False)

    assert cost(pod()) == 1.0
    assert cost(pod(deletion_cost=str(2**27))) == 2.0
    assert cost(pod(priority=2**25)) == 2.0
    assert cost(pod(priority=2_000_000_000)) == 10.0
    assert cost(pod(deletion_cost=str(-(2**31)))) == -10.0
    assert cost(pod(deletion_cost="not-a-number")) == 1.0


def _annotated_pod(**annotations: str) -> dict:
    return {"metadata": {"annotations": annotations}, "spec": {}}


def test_eviction_cost_reads_disruption_cost_first_then_pod_deletion_cost():
    """As upstream's EvictionCost: karpenter.sh/disruption-cost (an int32) wins; a malformed
    one counts as nothing and does not fall back to pod-deletion-cost."""
    both = _annotated_pod(**{wk.DISRUPTION_COST: str(2**27), wk.POD_DELETION_COST: str(-(2**27))})
    assert eviction_cost(both, deletion_cost_managed=False) == 2.0
    for malformed in ("1.5", " 100 ", "0xff", "", str(2**31)):
        pod = _annotated_pod(**{wk.DISRUPTION_COST: malformed, wk.POD_DELETION_COST: str(2**27)})
        assert eviction_cost(pod, deletion_cost_managed=False) == 1.0, malformed
    assert (
        eviction_cost(
            _annotated_pod(**{wk.DISRUPTION_COST: "-134217728"}), deletion_cost_managed=False
        )
        == 0.0
    )


def test_with_the_gate_eviction_cost_ignores_the_pod_deletion_cost_joiner_writes():
    """Under PodDeletionCostManagement the annotation is Joiner's own rank [PDC-6]: read
    back, a node being disrupted (-2147483648) would weigh -10 a pod and reorder
    consolidation by the ranks it wrote."""
    ranked = _annotated_pod(**{wk.POD_DELETION_COST: str(-(2**31))})
    assert eviction_cost(ranked, deletion_cost_managed=True) == 1.0
    steered = _annotated_pod(**{wk.DISRUPTION_COST: str(2**27)})
    assert eviction_cost(steered, deletion_cost_managed=True) == 2.0


def test_do_not_disrupt_true_duration_and_garbage():
    def obj(value: str) -> dict:
        return {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": value}}}

    assert do_not_disrupt_until(obj("true"), 100.0) == float("inf")
    assert do_not_disrupt_until(obj("5m"), 100.0) == 400.0
    assert do_not_disrupt_until(obj("1h30m"), 0.0) == 5400.0
    assert do_not_disrupt_until(obj("soon"), 100.0) is None
    assert do_not_disrupt_until({"metadata": {}}, 100.0) is None


def spot_candidate(price: float) -> Candidate:
    return Candidate(
        node=node("n"),
        pool=pool([]),
        instance_type="big",
        capacity_type=wk.CAPACITY_TYPE_SPOT,
        zone="zone-a",
        price=price,
    )


def typed(name: str, cpu: str, *offerings: tuple[str, float]) -> InstanceType:
    return new_instance_type(
        name, cpu=cpu, offerings=[Offering("zone-a", ct, price) for ct, price in offerings]
    )


def test_no_cheaper_home_needs_a_cheap_type_that_holds_the_shortfall():
    """[DISR-7] Only types holding what does not fit elsewhere count; on-demand cheaper than
    the node leaves the decision to the simulation; spot ones must be 15 (gate on)."""
    shortfall = {"cpu": 3000}
    on = ConsolidationOptions(spot_to_spot=True)
    small = [typed(f"s{i}", "2", (wk.CAPACITY_TYPE_SPOT, 0.01)) for i in range(20)]
    fit = [typed(f"f{i}", "4", (wk.CAPACITY_TYPE_SPOT, 0.10)) for i in range(14)]
    assert no_cheaper_home(spot_candidate(0.5), shortfall, small, on) is None  # none holds it
    assert no_cheaper_home(spot_candidate(0.5), shortfall, small + fit, on) == (
        "spot-to-spot needs 15 cheaper types, found 14"
    )
    fifteen = [*fit, typed("f14", "4", (wk.CAPACITY_TYPE_SPOT, 0.10))]
    assert no_cheaper_home(spot_candidate(0.5), shortfall, fifteen, on) is None
    assert no_cheaper_home(spot_candidate(0.05), shortfall, fifteen, on) == (
        "spot-to-spot needs 15 cheaper types, found 0"
    )
    on_demand = typed("od", "4", (wk.CAPACITY_TYPE_ON_DEMAND, 0.40))
    assert no_cheaper_home(spot_candidate(0.5), shortfall, [*fit, on_demand], on) is None
    off = ConsolidationOptions(spot_to_spot=False)
    assert no_cheaper_home(spot_candidate(0.5), shortfall, fifteen, off) == (
        "spot-to-spot consolidation is disabled (SpotToSpotConsolidation)"
    )


def test_least_replacement_load_counts_stranded_pods_and_what_the_usable_rooms_lack():
    """[DISR-7] A pod that fits in no other node's room must go to the replacement; a room
    too small for any of the pods gives nothing; the rest need what the usable rooms lack."""
    big, small = {"cpu": 3000, "pods": 1000}, {"cpu": 500, "pods": 1000}
    rooms = Rooms.of(
        {
            "a": {"cpu": 1000, "pods": 10000},
            "b": {"cpu": 400, "memory": 2**40, "pods": 10000},
            "self": {"cpu": 64000, "pods": 10000},  # the candidate's own room does not count
        }
    )
    assert least_replacement_load(PodShapes.of([big, small]), rooms, "self") == {
        "cpu": 3000,
        "pods": 1000,
    }
    assert least_replacement_load(PodShapes.of([small, small]), rooms, "self") == {}
    assert least_replacement_load(PodShapes.of([small] * 3), rooms, "self") == {"cpu": 500}
    assert least_replacement_load(PodShapes.of([small, big, small, small]), rooms, "self") == {
        "cpu": 3500,
        "pods": 1000,
    }
    assert least_replacement_load(PodShapes.of([small]), Rooms.of({}), "self") == {
        "cpu": 500,
        "pods": 1000,
    }
    assert least_replacement_load(PodShapes.of([big]), rooms, "elsewhere") == {}
    # the rooms' columns are shared by every candidate of a pass: leaving one node's room
    # out for one candidate leaves it in for the next
    assert least_replacement_load(PodShapes.of([big]), rooms, "self") == {"cpu": 3000, "pods": 1000}
    assert least_replacement_load(PodShapes.of([big]), rooms, "a") == {}
    assert least_replacement_load(PodShapes.of([]), rooms, "self") == {}


@pytest.mark.parametrize(
    "requests",
    [
        {"cpu": 3000},
        {"cpu": 3000, "memory": 0},
        {"cpu": 1000, "nvidia.com/gpu": 1},
        {"cpu": -5, "example.com/dongle": -1},
        {"pods": 200},
        {},
    ],
)
def test_the_types_that_hold_a_shortfall_are_the_ones_fits_accepts(requests):
    """The vectorised check (one matrix per type list) says what resources.fits says."""
    types = [typed(f"t{cpu}", str(cpu), (wk.CAPACITY_TYPE_SPOT, 0.1)) for cpu in (1, 2, 4, 8)]
    expected = [it.name for it in types if res.fits(requests, it.allocatable)]
    assert [it.name for it in methods._fitting(requests, types)] == expected
