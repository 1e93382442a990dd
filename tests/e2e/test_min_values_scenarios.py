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


def _run(min_values: bool) -> SimulationResult:
    document = yaml.safe_load(EXAMPLE.read_text())
    pool = next(o for o in document["spec"]["objects"] if o["kind"] == "NodePool")
    for requirement in pool["spec"]["template"]["spec"]["requirements"]:
        if not min_values:
            requirement.pop("minValues", None)
    if not min_values:
        document["spec"]["steps"] = document["spec"]["steps"][:1]  # the expect is minValues'
    simulation = Simulation(load_scenario(yaml.safe_dump(document)))
    try:
        return simulation.run()
    finally:
        simulation.close()


def test_each_pod_gets_a_nodeclaim_open_to_two_types() -> None:
    result = _run(min_values=True)
    assert result.failures == []
    assert result.final.pods_running == 2
    assert [c.instance_types for c in result.nodeclaims] == [["m-4x16", "m-8x32"]] * 2


def test_without_min_values_both_pods_share_one_nodeclaim_of_the_large_type() -> None:
    result = _run(min_values=False)
    assert result.final.pods_running == 2
    assert [c.instance_types for c in result.nodeclaims] == [["m-8x32"]]
