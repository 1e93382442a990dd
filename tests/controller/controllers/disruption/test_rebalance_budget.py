"""The rebalancer's churn bookkeeping: the hourly window, amortisation, the per-move budget."""

from __future__ import annotations

from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.api.rebalance import RebalanceSettings
from joiner.clock import to_rfc3339
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.rebalance import Budget, Churn, amortising
from joiner.state.node import StateNode

POOL = NodePool.from_dict({"metadata": {"name": "p"}, "spec": {}})
SETTINGS = RebalanceSettings(enabled=True, pods_per_move=5, amortisation=1800.0)


def _candidate(name: str, pods: int, launched: float | None = None) -> Candidate:
    annotations = {} if launched is None else {wk.REBALANCE_LAUNCHED: to_rfc3339(launched)}
    claim = NodeClaim.from_dict({"metadata": {"name": name, "annotations": annotations}})
    node = StateNode(nodeclaim=claim)
    return Candidate(node, POOL, "t", "on-demand", "zone-a", 1.0, [{}] * pods)


def test_the_hourly_window_forgets_evictions_an_hour_old():
    churn = Churn()
    churn.record("p", 0.0, 7)
    churn.record("p", 1800.0, 3)
    assert [churn.used("p", t) for t in (1800.0, 3599.0, 3600.0, 5400.0)] == [10, 10, 3, 0]
    assert churn.used("other", 0.0) == 0


def test_a_node_a_move_launched_is_amortising_for_the_period_only():
    candidate = _candidate("n", 1, launched=1000.0)
    assert [amortising(candidate, SETTINGS, t) for t in (1000.0, 2799.0, 2800.0)] == [
        True,
        True,
        False,
    ]
    assert not amortising(_candidate("m", 1), SETTINGS, 1000.0)


def test_the_budget_names_what_a_move_would_exceed():
    budget = Budget({"p": SETTINGS}, evictions_left={"p": 4}, nodes_left={"p": 1})
    assert budget.admits([_candidate("a", 3), _candidate("b", 3)]) == (
        "evicts 6 pods, more than 5 a move"
    )
    assert budget.admits([_candidate("a", 5)]) == "evicts 5 pods of pool p, 4 left this hour"
    assert budget.admits([_candidate("a", 1), _candidate("b", 1)]) == "budget 1 for Underutilized"
    assert budget.admits([_candidate("a", 4)]) is None
