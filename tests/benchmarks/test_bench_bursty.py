"""The bursty benchmark measures what it says: the bursts come where its scenario's steps
put them, every burst pod's pending time is read (0 s on a buffer's room, a node's start
without one), and the buffer's allowed cost is the cheapest fitting offering's."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    import benchmarks.bench_bursty as module

    return module


def test_the_steps_scale_up_where_the_bursts_are(bench) -> None:
    at, replicas, scaled = 0, 0, []
    for step in bench.steps(2):
        if "advance" in step:
            at += int(step["advance"].removesuffix("m")) * 60
            continue
        wanted = step["scale"]["replicas"]
        if wanted > replicas and replicas >= bench.BASE:
            scaled.append(bench.Burst(at, wanted - replicas))
        replicas = wanted
    assert scaled == bench.bursts(2)
    assert [b.size for b in scaled[:6]] == [2, 4, 2, 4, 2, 4]
    assert scaled[6].at == 2 * bench.QUIET_MINUTES * 60 + 6 * bench.STEP_MINUTES * 60


def test_burst_pods_wait_for_a_node_without_a_buffer_and_not_at_all_with_one(bench) -> None:
    catalogue = bench.load_catalogue()
    without = bench.measure(catalogue, None, cycles=1, runs=1)
    held = bench.measure(catalogue, bench.LARGE, cycles=1, runs=1)
    burst_pods = 3 * (bench.SMALL + bench.LARGE)
    # without a buffer, a pod waits for a node to start (41 s in the fake cloud) unless
    # the last node launched had room left for it
    assert sorted(round(w, 1) for w in without.all_waits) == [0.0] * 6 + [41.0] * 12
    assert held.all_waits == held.fitting_waits == [0.0] * burst_pods


def test_percentile_is_the_nearest_rank(bench) -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert (bench.percentile(values, 0.5), bench.percentile(values, 0.95)) == (10.0, 19.0)
    assert bench.percentile([0.0, 41.0], 0.95) == 41.0


def test_the_buffers_price_is_the_fewest_instances_of_the_cheapest_fitting_type(bench) -> None:
    def it(name: str, vcpu: int, memory_gib: int, on_demand: float):
        return bench.CatalogueType(name, vcpu, memory_gib * 1024, 29, on_demand, 70, 674)

    # one chunk is 1 CPU / 2 GiB; spot is 0.35 of on-demand
    small = it("c5.large", 2, 4, 0.085)  # 1930m, 3422 MiB: one chunk
    big = it("m5.xlarge", 4, 16, 0.192)  # 3930m, 15710 MiB: three chunks
    assert bench.buffer_price_per_hour([small, big], 2) == pytest.approx(2 * 0.085 * 0.35)
    assert bench.buffer_price_per_hour([small, big], 3) == pytest.approx(0.192 * 0.35)
