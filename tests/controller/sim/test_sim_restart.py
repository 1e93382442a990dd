"""The ``restart`` step: its options and their errors, and what a restart drops (every
in-memory structure of the operator) and keeps (the objects and the cloud)."""

from __future__ import annotations

from typing import Any

import pytest
from joiner.sim.engine import Simulation
from joiner.sim.report import render_html
from joiner.sim.scenario import RestartStep, ScenarioError, load_scenario
from joiner.sim.table import render_table
from sim_builders import SCALE_UP, load_steps, to_text, with_steps


def error_of(steps: list[dict[str, Any]]) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_steps(steps)
    return str(caught.value)


def test_restart_options_load():
    steps = load_steps(
        [
            {"restart": {}},
            {"restart": {"at": "45s"}},
            {"name": "often", "restart": {"every": "2m"}},
            {"restart": {"afterReconciles": 12}},
        ]
    )
    assert steps == (
        RestartStep(index=0),
        RestartStep(index=1, at=45.0),
        RestartStep(index=2, name="often", every=120.0),
        RestartStep(index=3, after_reconciles=12),
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "spec.steps[0].restart: required"),
        ("now", "spec.steps[0].restart: expected a mapping, got a string"),
        (
            {"at": "1m", "every": "1m"},
            "spec.steps[0].restart: give at most one of at, every, afterReconciles",
        ),
        (
            {"when": "1m"},
            "spec.steps[0].restart: unknown field 'when' (expected one of at, every, "
            "afterReconciles)",
        ),
        (
            {"at": "soon"},
            "spec.steps[0].restart.at: invalid duration 'soon' (expected e.g. 30s, 5m, 1h)",
        ),
        ({"every": "0s"}, "spec.steps[0].restart.every: must be longer than 0s"),
        (
            {"afterReconciles": 0},
            "spec.steps[0].restart.afterReconciles: expected an integer >= 1, got 0",
        ),
        (
            {"afterReconciles": "3"},
            "spec.steps[0].restart.afterReconciles: expected an integer >= 1, got '3'",
        ),
    ],
)
def test_restart_errors_name_the_field(value: Any, message: str):
    assert error_of([{"restart": value}]) == message


# --- running ---------------------------------------------------------------------------


def scale_up_scenario(steps: list[dict[str, Any]]) -> Simulation:
    """Five 500m pods on 2-CPU nodes (three per node): two NodeClaims."""
    return Simulation(load_scenario(to_text(with_steps(steps))))


def test_a_restart_drops_the_operator_and_keeps_objects_and_cloud():
    sim = scale_up_scenario([SCALE_UP, {"advance": "5s"}])
    result_before = sim.run()
    first_claims = [c.name for c in result_before.nodeclaims]

    sim = scale_up_scenario([SCALE_UP, {"advance": "5s"}, {"restart": {}}, {"settle": "10m"}])
    operators = []
    original = sim.restart_operator

    def spy() -> None:
        operators.append(sim.operator)
        original()
        operators.append(sim.operator)

    sim.restart_operator = spy  # type: ignore[method-assign]
    result = sim.run()

    assert len(operators) == 2 and operators[0] is not operators[1]
    assert operators[1].state is not operators[0].state
    assert [c.name for c in result.nodeclaims] == first_claims  # no launch twice
    assert all(c.deleted_at is None and c.initialized_at for c in result.nodeclaims)
    assert result.final.pending_pods == []
    assert result.totals.restarts == 1
    restarted = [e for e in result.events if e.reason == "Restarted"]
    assert [(e.kind, e.name, e.time) for e in restarted] == [("Operator", "joiner", 5.0)]
    assert "; controller restarts 1\n" in render_table(result)
    assert "<span>controller restarts 1</span>" in render_html(result)


def test_a_restart_forgets_insufficient_capacity_the_cloud_does_not():
    sim = scale_up_scenario([{"advance": "1s"}])
    provider = sim.cloud.provider
    provider.mark_unavailable("small", "zone-a", "spot")  # the provider's memory
    provider.unavailable.add(("small", "zone-b", "on-demand"))  # the cloud's fact
    sim.restarts.request()
    sim.run()
    assert sim.restarts.count == 1
    assert provider.insufficient_capacity == {}
    assert provider.unavailable == {("small", "zone-b", "on-demand")}


def test_restart_after_a_number_of_reconciles_falls_between_two_of_them():
    sim = scale_up_scenario([{"restart": {"afterReconciles": 7}}, SCALE_UP, {"settle": "10m"}])
    counts: list[int] = []
    original, plan = sim.restart_operator, sim.restarts.plan

    def spy() -> None:
        counts.append(sim.operator.manager.reconcile_count)
        original()

    def planned(step, schedule, reconciles: int) -> None:
        counts.append(reconciles)
        plan(step, schedule, reconciles)

    sim.restart_operator = spy  # type: ignore[method-assign]
    sim.restarts.plan = planned  # type: ignore[method-assign]
    result = sim.run()
    assert counts[1] - counts[0] == 7  # counted from the step
    assert result.final.pending_pods == []
    assert len(result.nodeclaims) == 2


def test_restart_at_and_every_follow_virtual_time():
    sim = scale_up_scenario(
        [SCALE_UP, {"restart": {"at": "20s"}}, {"restart": {"every": "1m"}}, {"advance": "3m"}]
    )
    result = sim.run()
    times = [e.time for e in result.events if e.reason == "Restarted"]
    assert times == [20.0, 60.0, 120.0, 180.0]
    assert result.final.pending_pods == []
    assert len(result.nodeclaims) == 2
