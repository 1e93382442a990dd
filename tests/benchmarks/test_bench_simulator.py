"""The simulator benchmark's --seed reaches the simulation: another seed is another
day (other generated names, so other tie orders), which is what comparing a setting
over several seeds needs."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    import benchmarks.bench_simulator as module

    return module


def test_the_seed_names_the_nodeclaims_of_the_day(bench) -> None:
    hour = bench.DayShape(0.5, 20, 20, 30, quiet_start_hours=0.5, quiet_end_hours=0)

    def names(seed: int) -> list[str]:
        simulation, result, _, _ = bench.run("fake", hour, seed=seed)
        simulation.close()
        assert result.final.pods_running == sum(bench.replicas_at(hour, 0).values())
        return sorted(c.name for c in result.nodeclaims)

    first, again, other = names(0), names(0), names(1)
    assert first == again
    assert first != other


def test_rebalance_opts_the_day_s_nodepool_in(bench) -> None:
    hour = bench.DayShape(0.5, 20, 20, 30, quiet_start_hours=0.5, quiet_end_hours=0)
    annotations = {}
    for rebalance in (False, True):
        simulation, _, _, _ = bench.run("fake", hour, rebalance=rebalance)
        pool = simulation.operator.state.nodepools["default"]
        annotations[rebalance] = pool.metadata.get("annotations")
        simulation.close()
    assert annotations[False].get("joiner.sh/rebalance") is None
    assert annotations[True].get("joiner.sh/rebalance") == "true"
    # an annotation, not a template field: the pool's hash (its nodes' drift) is the same
    hashes = {on: found["karpenter.sh/nodepool-hash"] for on, found in annotations.items()}
    assert hashes[False] == hashes[True]
