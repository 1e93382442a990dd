"""The explain scenarios of this folder, run to a step and read as a `Cluster`."""

from __future__ import annotations

from pathlib import Path

from joiner.explain.cluster import Cluster
from joiner.explain.simulation import snapshot_at
from joiner.sim.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def cluster_at(scenario: str, step: str | None = None) -> Cluster:
    return Cluster(snapshot_at(load_scenario(EXAMPLES / scenario), step))
