"""The scheduling benchmark's peer comparison, small: upstream's benchmark workloads go
through both schedulers as one document, and Joiner places every pod upstream does at no
higher cost than upstream's cheapest run (speed is judged by `make bench` only)."""

from __future__ import annotations

from pathlib import Path

from joiner.testing.workload import solve_inputs

from benchmarks import bench_scheduling as bench


def test_the_benchmark_document_is_upstreams_catalogue_and_pool():
    document = bench.upstream_document(bench.plain_pods(3))
    inputs = solve_inputs(document)
    (pool,) = inputs.nodepools
    types = inputs.instance_types[pool.name]
    assert len(types) == bench.UPSTREAM_TYPES
    assert [t.name for t in types[:2]] == ["fake-it-0", "fake-it-1"]
    assert types[1].capacity == {"cpu": 2000, "memory": 4 * 2**30 * 1000, "pods": 20000}
    assert pool.limits == {"cpu": "10000000", "memory": "10000000Gi"}


def test_both_schedulers_place_upstreams_workloads_alike(karpenter_oracle: Path):
    mixes = {"plain": (100,), "diverse": (100,), "preferences": (40,)}
    rows = bench.compare(karpenter_oracle, mixes)
    for mix, count, joiner, upstream in rows:
        assert upstream is not None
        assert (mix, joiner.unplaced, upstream.unplaced) == (mix, 0, 0)
        assert joiner.cost <= upstream.cost * (1 + bench.COST_TOLERANCE), (mix, count)
