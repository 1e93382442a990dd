"""minValues across NodeClaims end to end (issue 21, item 6), on the shipped example: a
pod that would leave an in-flight NodeClaim with fewer instance types than the pool's
minValues goes to a new NodeClaim, as upstream Karpenter's scheduler does, instead of
being packed and then left pending."""

from __future__ import annotations

from pathlib import Path

import yaml
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "min-values.yaml"


def _run(min_values: int | None) -> SimulationResult:
    """The example with its pool's ``minValues`` (2) changed, or removed (None)."""
    document = yaml.safe_load(EXAMPLE.read_text())
    pool = next(o for o in document["spec"]["objects"] if o["kind"] == "NodePool")
    for requirement in pool["spec"]["template"]["spec"]["requirements"]:
        if "minValues" in requirement:
            requirement["minValues"] = min_values
        if min_values is None:
            requirement.pop("minValues", None)
    if min_values != 2:
        document["spec"]["steps"] = document["spec"]["steps"][:1]  # the expect is minValues'
    simulation = Simulation(load_scenario(yaml.safe_dump(document)))
    try:
        return simulation.run()
    finally:
        simulation.close()


def test_each_pod_gets_a_nodeclaim_open_to_two_types() -> None:
    result = _run(2)
    assert result.failures == []
    assert result.final.pods_running == 2
    assert [c.instance_types for c in result.nodeclaims] == [["m-4x16", "m-8x32"]] * 2


def test_without_min_values_both_pods_share_one_nodeclaim_of_the_large_type() -> None:
    result = _run(None)
    assert result.final.pods_running == 2
    assert [c.instance_types for c in result.nodeclaims] == [["m-8x32"]]


def test_more_min_values_than_types_that_fit_leaves_the_pods_pending_and_says_why() -> None:
    """Only two types hold a 3-CPU pod; minValues 3 cannot be met, so nothing is launched
    (upstream's default policy, Strict) and each pod's event names the label."""
    result = _run(3)
    assert result.nodeclaims == []
    assert len(result.final.pending_pods) == 2
    messages = {e.message for e in result.events if e.reason == "FailedScheduling"}
    assert messages == {
        "Failed to schedule pod, minValues requirement is not met for label(s) "
        "(label(s)=[node.kubernetes.io/instance-type]), minValues 3 on "
        "node.kubernetes.io/instance-type but only 2 value(s) remain, nodepool=flexible"
    }
