"""The explain scenarios of this folder, run to a step and read as a `Cluster`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from joiner.cli import main
from joiner.explain.cluster import Cluster
from joiner.explain.simulation import snapshot_at
from joiner.sim.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def cluster_at(scenario: str, step: str | None = None) -> Cluster:
    return Cluster(snapshot_at(load_scenario(EXAMPLES / scenario), step))


def explain_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """``joiner explain ARGS -o json``, which must answer (exit 0), as parsed JSON."""
    assert main(["explain", *args, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)
