"""The rebalancer benchmark's clusters are what it says they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.rebalance.model import GREEDY, MILP
from joiner.scheduling.pods import pod_requests

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    import benchmarks.bench_rebalance as module

    return module


def test_the_synthetic_cluster_has_its_nodes_and_pods_each_within_its_node(bench) -> None:
    cluster = bench.synthetic(20, 10)
    nodes = cluster.snapshot.nodes
    assert (len(nodes), sum(len(n.pods) for n in nodes)) == (20, 200)
    for node in nodes:
        used = [pod_requests(p, {}) for p in node.pods]
        for resource in ("cpu", "memory"):
            assert sum(r[resource] for r in used) <= node.allocatable[resource]
        assert {p["spec"]["nodeName"] for p in node.pods} == {node.name}
    assert set(cluster.prices) == {n.name for n in nodes}


def test_a_plan_of_the_synthetic_cluster_is_cheaper_and_drains_what_it_evicts(bench) -> None:
    result = bench.plan(bench.synthetic(20, 10))
    assert result.method in (MILP, GREEDY)
    assert result.target_cost < result.current_cost
    drained = {name for move in result.moves for name in move.drain}
    assert set(result.kept) | drained == {f"node-{i:04d}" for i in range(20)}
    assert result.evictions == sum(
        len(n.pods) for n in bench.synthetic(20, 10).snapshot.nodes if n.name in drained
    )


def test_the_plateau_day_stops_after_the_hold_from_its_hour(bench) -> None:
    steps = [
        {"scale": {"name": "web", "replicas": 3}},
        {"name": "hold from 0.5h (1)", "advance": "15m"},
        {"name": "hold from 0.5h (2)", "advance": "15m"},
        {"scale": {"name": "web", "replicas": 2}},
        {"name": "hold from 1h (1)", "advance": "15m"},
    ]
    assert bench._steps_until(steps, 0.5) == steps[:3]
