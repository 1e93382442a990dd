"""Budgets [DISR-4], eviction cost [DISR-8] and do-not-disrupt [API-2] as pure functions."""

from __future__ import annotations

from joiner.api.nodepool import Budget, NodePool
from joiner.clock import from_rfc3339
from joiner.controllers.disruption.budgets import (
    allowed_disruptions,
    budget_active,
    budget_value,
)
from joiner.controllers.disruption.candidates import do_not_disrupt_until, eviction_cost
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

    assert eviction_cost(pod()) == 1.0
    assert eviction_cost(pod(deletion_cost=str(2**27))) == 2.0
    assert eviction_cost(pod(priority=2**25)) == 2.0
    assert eviction_cost(pod(priority=2_000_000_000)) == 10.0
    assert eviction_cost(pod(deletion_cost=str(-(2**31)))) == -10.0
    assert eviction_cost(pod(deletion_cost="not-a-number")) == 1.0


def test_do_not_disrupt_true_duration_and_garbage():
    def obj(value: str) -> dict:
        return {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": value}}}

    assert do_not_disrupt_until(obj("true"), 100.0) == float("inf")
    assert do_not_disrupt_until(obj("5m"), 100.0) == 400.0
    assert do_not_disrupt_until(obj("1h30m"), 0.0) == 5400.0
    assert do_not_disrupt_until(obj("soon"), 100.0) is None
    assert do_not_disrupt_until({"metadata": {}}, 100.0) is None
