"""examples/walkthrough-v1alpha5.yaml, the source document's v1alpha5 Provisioner as
written there, simulates to exactly what examples/walkthrough.yaml (the v1 objects
written by hand) does, and joiner simulate names the fields it converted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from joiner.cli import main
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_v1alpha5_walkthrough_has_the_v1_walkthroughs_outcome(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", str(EXAMPLES / "walkthrough-v1alpha5.yaml"), "--output", "json"]) == 0
    out, err = capsys.readouterr()
    old = json.loads(out)
    new = json.loads(Simulation(load_scenario(EXAMPLES / "walkthrough.yaml")).run().to_json())
    assert old.pop("scenario") == "walkthrough-v1alpha5"
    assert new.pop("scenario") == "walkthrough"
    assert old == new
    assert len(old["nodeclaims"]) >= 3  # it did scale out and in
    assert err.splitlines() == [
        f"joiner simulate: {EXAMPLES / 'walkthrough-v1alpha5.yaml'}: warning: Provisioner/default: "
        "converted to v1 (joiner convert shows how): spec.requirements, spec.limits.resources, "
        "spec.provider, spec.provider.subnetSelector, spec.provider.securityGroupSelector, "
        "spec.ttlSecondsAfterEmpty, spec.ttlSecondsUntilExpired, spec.provider.amiFamily, "
        "spec.provider.instanceProfile"
    ]
