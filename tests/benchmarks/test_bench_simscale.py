"""The scale benchmark's cases are the ones issue 20 names."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.sim.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    import benchmarks.bench_simscale as module

    return module


def test_the_day_is_200_to_20000_pods_in_50_deployments_with_expiry(bench) -> None:
    scenario = load_scenario(bench.scenario_text("day", quick=False))
    deployments = [o for o in scenario.objects if o["kind"] == "Deployment"]
    assert len(deployments) == 50
    sizes = {
        d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        for d in deployments
    }
    assert len(sizes) > 10  # mixed sizes
    pool = next(o for o in scenario.objects if o["kind"] == "NodePool")
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "6h"
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    replicas: dict[str, int] = {d["metadata"]["name"]: 0 for d in deployments}
    totals = []
    for step in scenario.steps:
        if step.action == "scale":
            replicas[step.target.name] = step.replicas
        elif step.action == "advance":
            totals.append(sum(replicas.values()))
    assert scenario.max_virtual_seconds == 24 * 3600
    assert abs(max(totals) - 20_000) <= 25  # each Deployment's share rounded
    assert abs(totals[0] - 200) <= 25 and abs(totals[-1] - 200) <= 25


def test_the_replicas_case_is_the_10000_replica_example(bench) -> None:
    assert (
        bench.scenario_text("replicas", quick=False)
        == (REPO / "examples" / "replicas-10000.yaml").read_text()
    )
    assert "replicas: 1000}" in bench.scenario_text("replicas", quick=True)


def test_spread_is_min_median_max(bench) -> None:
    assert bench.spread([3.0, 1.0, 2.5], "s") == "1.0 / 2.5 / 3.0 s (min / median / max of 3)"
    assert bench.spread([512.4], "MB", 0) == "512 MB"
