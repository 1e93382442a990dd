"""A ``Snapshot`` of a simulation after one of its steps: the scenario is run up to and
including that step (the steps after it are not run), then every object of the
simulated API server and the instance types the simulated cloud offers each NodePool
then, as the controller reads them (NodeOverlays applied; offerings out of capacity
marked unavailable) are read."""

from __future__ import annotations

import dataclasses

from joiner.explain.snapshot import KINDS, Snapshot
from joiner.sim.engine import Simulation
from joiner.sim.scenario import Scenario, ScenarioError


def step_index(scenario: Scenario, step: str | None, option: str = "--at") -> int:
    """The index of ``step`` (an index or a step's name; ``option`` named it); None: the
    last step."""
    if step is None:
        return len(scenario.steps) - 1
    if step.isdigit() and int(step) < len(scenario.steps):
        return int(step)
    for candidate in scenario.steps:
        if candidate.name == step:
            return candidate.index
    names = ", ".join(s.name for s in scenario.steps if s.name) or "none"
    raise ScenarioError(
        f"{option} {step}: no such step (steps 0-{len(scenario.steps) - 1}; names: {names})"
    )


def snapshot_at(
    scenario: Scenario, step: str | None, seed: int = 0, option: str = "--at"
) -> Snapshot:
    last = step_index(scenario, step, option)
    simulation = Simulation(dataclasses.replace(scenario, steps=scenario.steps[: last + 1]), seed)
    taken: list[Snapshot] = []
    simulation.run(before_close=lambda: taken.append(_read(simulation)))
    return taken[0]


def _read(simulation: Simulation) -> Snapshot:
    kube = simulation.kube
    objects = [{**obj, "kind": kind} for kind in KINDS for obj in kube.list(kind).items]
    state = simulation.operator.state
    cloud = simulation.operator.cloud  # the controller's view: NodeOverlays applied
    return Snapshot(
        objects=objects,
        now=simulation.clock.now(),
        instance_types={
            name: list(cloud.get_instance_types(pool))
            for name, pool in sorted(state.nodepools.items())
        },
        spot_to_spot=simulation.operator.disruption.options.spot_to_spot,
    )
