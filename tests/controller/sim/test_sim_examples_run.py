"""Every example scenario runs to the end with all its expectations holding, as
`joiner simulate` would report them (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from joiner.cli import main
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_its_expectations_hold(path: Path):
    result = Simulation(load_scenario(path)).run()
    assert result.failures == []


def test_walkthrough_returns_to_the_static_node_and_prices_it(capsys: pytest.CaptureFixture):
    walkthrough = next(p for p in EXAMPLES if p.stem == "walkthrough")
    assert main(["simulate", str(walkthrough), "--output", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [n["name"] for n in result["final"]["nodes"]] == ["system-1"]
    assert result["final"]["nodes"][0]["instanceType"] == "m5.large"
    assert result["final"]["costPerHour"] == result["final"]["nodes"][0]["price"] > 0
    reasons = [c["disruptionReason"] for c in result["nodeclaims"]]
    assert reasons.count("Expired") >= 1
    assert reasons[-1] == "Empty"
    assert all(c["capacityType"] == "spot" for c in result["nodeclaims"])


def test_restarts_shows_two_restarts_and_nothing_lost(capsys: pytest.CaptureFixture):
    restarts = next(p for p in EXAMPLES if p.stem == "restarts")
    assert main(["simulate", str(restarts), "--output", "table"]) == 0
    table = capsys.readouterr().out
    restarted = [line for line in table.splitlines() if "Operator/joiner" in line]
    assert [line.split()[0] for line in restarted] == ["0:00:15", "0:01:40"]
    assert "; controller restarts 2" in table
    result = Simulation(load_scenario(restarts)).run()
    assert result.totals.nodeclaims_created == 6  # three for the scale-up, three replacements
    assert result.totals.restarts == 2
    assert result.final.pending_pods == [] and result.final.pods_running == 9
