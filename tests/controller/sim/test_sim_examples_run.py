"""Every example scenario runs to the end with all its expectations holding, as
`joiner simulate` would report them (exit 0)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from joiner.cli import main
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.yaml"))


# Examples too big for every test run, and the replica count CI runs them with (their
# quick form); the benchmarks run them in full (python -m benchmarks simscale).
QUICK_REPLICAS = {"replicas-10000": 1_000}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_its_expectations_hold(path: Path):
    result = Simulation(load_scenario(quick_form(path))).run()
    assert result.failures == []


def quick_form(path: Path) -> str:
    """The example's text, with its replica counts (scale steps, podsRunning
    expectations) lowered to the quick form's when it has one."""
    text = path.read_text()
    quick = QUICK_REPLICAS.get(path.stem)
    if quick is None:
        return text
    full = max(int(n) for n in re.findall(r"replicas: (\d+)", text))
    for field in ("replicas", "podsRunning"):
        assert f"{field}: {full}" in text
        text = text.replace(f"{field}: {full}", f"{field}: {quick}")
    return text


def test_the_quick_form_of_the_big_example_is_the_same_scenario_smaller():
    big = next(p for p in EXAMPLES if p.stem == "replicas-10000")
    full, quick = load_scenario(big), load_scenario(quick_form(big))
    assert [s.action for s in quick.steps] == [s.action for s in full.steps]
    assert [getattr(s, "replicas", None) for s in quick.steps] == [
        1_000 if getattr(s, "replicas", None) == 10_000 else getattr(s, "replicas", None)
        for s in full.steps
    ]
    assert quick.objects == full.objects and quick.limits == full.limits


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
