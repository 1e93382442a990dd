"""NodeOverlay end to end [OVERLAY]: the real operator in the simulator, overlays in the
scenario, and what upstream Karpenter's docs promise: nothing without the NodeOverlay
gate; a price or priceAdjustment changes which instance type is launched and which one
consolidation moves to; capacity makes a type offer an extended resource pods request;
the higher weight wins; equal-weight overlays that set the same thing conflict, and the
later (by name) is reported in its status and applied nowhere."""

from __future__ import annotations

from typing import Any

import yaml
from joiner import testing
from joiner.api.conditions import get_condition
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

APP = "web"
SLICE = "example.com/gpu-slice"
CHEAP, DEAR = "cheap-4x16", "dear-4x16"


def _overlay(
    name: str, types: list[str], capacity_types: tuple[str, ...] = (), **spec: Any
) -> dict[str, Any]:
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}]
    if capacity_types:
        requirements.append(
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity_types)}
        )
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": requirements, **spec},
    }


def _scenario(
    overlays: list[dict[str, Any]],
    gate: bool = True,
    workload: dict[str, Any] | None = None,
    steps: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Two types of one size, one cheaper; four web pods of 1500m (two a node)."""
    return testing.on_demand_pool_scenario(
        "overlay",
        [
            testing.scenario_instance_type(CHEAP, "4", "16Gi", {"zone-a/on-demand": 0.10}),
            testing.scenario_instance_type(DEAR, "4", "16Gi", {"zone-a/on-demand": 0.15}),
        ],
        {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"},
        [workload or testing.deployment(APP, replicas=4, cpu="1500m", memory="1Gi"), *overlays],
        steps or [{"settle": "5m"}],
        f"NodeOverlay={str(gate).lower()}",
    )


def _run(doc: dict[str, Any]) -> tuple[Simulation, SimulationResult]:
    simulation = Simulation(load_scenario(yaml.safe_dump(doc)))
    return simulation, simulation.run()


def _launched(result: SimulationResult) -> list[str]:
    return sorted(c.instance_type or "" for c in result.nodeclaims if c.deleted_at is None)


def _validation(simulation: Simulation, name: str) -> tuple[str, str, str]:
    overlay = simulation.kube.get("NodeOverlay", name)
    found = get_condition((overlay.get("status") or {}).get("conditions"), "ValidationSucceeded")
    assert found is not None, overlay
    ready = get_condition(overlay["status"]["conditions"], "Ready")
    assert ready is not None and ready["status"] == found["status"]
    return found["status"], found["reason"], found["message"]


def test_a_price_adjustment_moves_launches_to_the_other_type() -> None:
    """+100% makes the cheap type 0.20 an hour: the 0.15 one is launched instead."""
    _, result = _run(_scenario([_overlay("double", [CHEAP], priceAdjustment="+100%")]))
    assert _launched(result) == [DEAR, DEAR]


def test_without_the_gate_overlays_change_nothing() -> None:
    simulation, result = _run(
        _scenario([_overlay("double", [CHEAP], priceAdjustment="+100%")], gate=False)
    )
    assert _launched(result) == [CHEAP, CHEAP]
    assert "status" not in simulation.kube.get("NodeOverlay", "double")  # no controller


def test_an_absolute_price_for_a_savings_plan_makes_a_type_preferred() -> None:
    _, result = _run(_scenario([_overlay("savings-plan", [DEAR], price="0.05")]))
    assert _launched(result) == [DEAR, DEAR]


def test_capacity_lets_pods_requesting_an_extended_resource_run() -> None:
    """No type offers the resource; the overlay gives the dear type 4 slices, so the pods
    (one slice each) run there; without it they stay pending."""
    pods = testing.deployment(APP, replicas=4, cpu="500m", memory="1Gi")
    pods["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][SLICE] = "1"
    pods["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {SLICE: "1"}
    slices = _overlay("slices", [DEAR], capacity={SLICE: "4"})
    _, result = _run(_scenario([slices], workload=pods))
    assert _launched(result) == [DEAR]
    assert result.final.pods_running == 4
    _, without = _run(_scenario([], workload=pods))
    assert _launched(without) == []
    assert len(without.final.pending_pods) == 4


def test_the_higher_weight_wins() -> None:
    overlays = [
        _overlay("cheapen-dear", [DEAR], weight=10, price="0.01"),
        _overlay("dear-is-dear", [DEAR], weight=90, price="1"),
    ]
    simulation, result = _run(_scenario(overlays))
    assert _launched(result) == [CHEAP, CHEAP]
    assert _validation(simulation, "cheapen-dear")[0] == "True"


def test_equal_weights_conflict_and_the_later_name_is_not_applied() -> None:
    """Both price the dear type at weight 10: "a-..." (first by name) applies, "b-..." is
    reported in its status as upstream reports it and changes nothing (not even the
    capacity it also sets)."""
    overlays = [
        _overlay("b-dear-is-dear", [DEAR], weight=10, price="1", capacity={SLICE: "1"}),
        _overlay("a-cheapen-dear", [DEAR], weight=10, price="0.01"),
    ]
    simulation, result = _run(_scenario(overlays))
    assert _launched(result) == [DEAR, DEAR]
    assert _validation(simulation, "b-dear-is-dear") == (
        "False",
        "Conflict",
        "conflict with another overlay",
    )
    assert _validation(simulation, "a-cheapen-dear") == ("True", "ValidationSucceeded", "")
    assert all(SLICE not in n.allocatable for n in result.final.managed_nodes)


def test_consolidation_sees_an_overlay_added_later() -> None:
    """Two cheap nodes run; then an overlay makes them dear (+100%): consolidation
    replaces them with the type that is now cheaper."""
    steps = [
        {"settle": "5m"},
        {"apply": [_overlay("double", [CHEAP], priceAdjustment="+100%")]},
        {"advance": "10m"},
    ]
    _, result = _run(_scenario([], steps=steps))
    assert _launched(result) == [DEAR, DEAR]
    replaced = [c for c in result.nodeclaims if c.instance_type == CHEAP]
    assert len(replaced) == 2
    assert all(c.disruption_reason == "Underutilized" for c in replaced)


def test_an_overlay_selecting_no_offered_type_changes_nothing() -> None:
    """Requirements that match no instance type this cluster offers: valid, applied
    nowhere, so the cheap type is launched as without it."""
    simulation, result = _run(_scenario([_overlay("nothing", ["absent-4x16"], price="0.01")]))
    assert _launched(result) == [CHEAP, CHEAP]
    assert _validation(simulation, "nothing") == ("True", "ValidationSucceeded", "")


def test_an_overlay_for_spot_leaves_the_on_demand_price_alone() -> None:
    """The capacity-type requirement narrows the overlay to the type's spot offerings;
    the pool launches on-demand, where the cheap type keeps its price."""
    spot_only = _overlay("spot-double", [CHEAP], capacity_types=("spot",), priceAdjustment="+100%")
    _, result = _run(_scenario([spot_only]))
    assert _launched(result) == [CHEAP, CHEAP]
    _, on_demand = _run(
        _scenario(
            [_overlay("od-double", [CHEAP], capacity_types=("on-demand",), priceAdjustment="+100%")]
        )
    )
    assert _launched(on_demand) == [DEAR, DEAR]


def test_an_overlay_on_a_type_the_pool_excludes_does_not_bring_it_in() -> None:
    """The pool allows only the dear type; an overlay pricing the cheap one at 0.01 does
    not make the pool launch it: overlays change what a pool may use, never what it may
    not."""
    doc = _scenario([_overlay("cheaper-still", [CHEAP], price="0.01")])
    pool = next(o for o in doc["spec"]["objects"] if o["kind"] == "NodePool")
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [DEAR]}
    )
    _, result = _run(doc)
    assert _launched(result) == [DEAR, DEAR]
