"""Regression scenarios of the crash-anywhere property suite (tests/controller/sim/
test_sim_properties.py): each reproduces, with `joiner simulate`, a bug a restart or a
fault at some step found, or pins a finding that is a valid Karpenter outcome; the header
of each file says which. Every expectation in them holds and every settle step settles
(exit 0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.cli import main

SCENARIOS = sorted((Path(__file__).resolve().parent / "crash").glob("*.yaml"))


def test_there_are_regression_scenarios():
    assert SCENARIOS


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_regression_scenario_holds(path: Path, capsys: pytest.CaptureFixture):
    assert main(["simulate", str(path), "--output", "json"]) == 0, capsys.readouterr().err
