"""``spec.cloud.enforceIAM``: the embedded AWS runs the provider as a principal holding
exactly the controller policy, moto enforcing it and every call checked (issue #18)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from joiner.sim import embedded_aws
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

WALKTHROUGH = Path(__file__).resolve().parents[3] / "examples" / "walkthrough.yaml"


def walkthrough(enforce_iam: bool, steps: list[dict[str, Any]] | None = None) -> Simulation:
    document = yaml.safe_load(WALKTHROUGH.read_text())
    document["spec"]["cloud"]["enforceIAM"] = enforce_iam
    if steps is not None:
        document["spec"]["steps"] = steps
    return Simulation(load_scenario(yaml.safe_dump(document)))


def launched(result: Any) -> list[tuple[str, str, str]]:
    return [(c.name, c.instance_type, c.capacity_type) for c in result.nodeclaims]


def test_the_walkthrough_runs_the_same_under_the_controller_policy() -> None:
    enforced = walkthrough(enforce_iam=True)
    result = enforced.run()
    assert result.failures == []
    assert enforced.cloud.iam_denials() == []
    assert {
        "ec2:CreateFleet",
        "ec2:RunInstances",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateTags",
        "ec2:TerminateInstances",
        "iam:CreateInstanceProfile",
        "iam:PassRole",
        "ssm:GetParameter",
    } <= enforced.cloud.audit.used
    assert launched(result) == launched(walkthrough(enforce_iam=False).run())


def test_a_call_the_policy_lacks_fails_and_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    original = embedded_aws.controller_policy

    def without_fleets(params: Any) -> dict[str, Any]:
        policy = original(params)
        for statement in policy["Statement"]:
            actions = [a for a in statement["Action"] if a != "ec2:CreateFleet"]
            statement["Action"] = actions or ["ec2:DescribeImages"]
        return policy

    monkeypatch.setattr(embedded_aws, "controller_policy", without_fleets)
    scale = {"kind": "Deployment", "name": "inflate", "namespace": "default", "replicas": 5}
    denied = walkthrough(
        enforce_iam=True,
        steps=[{"scale": scale}, {"advance": "2m"}, {"expect": {"pendingPods": 0}}],
    )
    result = denied.run()
    assert result.nodeclaims  # NodeClaims were made...
    assert all(c.launched_at is None for c in result.nodeclaims)  # ...and none launched
    assert len(result.failures) == 1  # so pods stay pending
    denials = denied.cloud.iam_denials()
    assert denials
    assert all("needs ec2:CreateFleet on arn:aws:ec2:us-east-1:" in d for d in denials)
