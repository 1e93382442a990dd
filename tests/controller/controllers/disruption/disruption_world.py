"""Scenario builders for the disruption tests: every test runs the real operator in the
simulator and reads the outcome from the result (a plain module with a unique name, so
test modules can import it)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml
from joiner import testing
from joiner.api import labels as wk
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

ZONES = ["zone-a", "zone-b"]


def instance_type(
    name: str, cpu: str, memory: str, prices: dict[str, float], pods: int = 30
) -> dict[str, Any]:
    """``prices`` maps "zone/capacity-type" to a price."""
    return testing.scenario_instance_type(name, cpu, memory, prices, pods=pods)


def od(price: float, zone: str = "zone-a") -> dict[str, float]:
    return {f"{zone}/on-demand": price}


def nodepool(
    requirements: list[dict[str, Any]] | None = None,
    disruption: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    expire_after: str = "720h",
    name: str = "default",
) -> dict[str, Any]:
    """On-demand only, consolidating after 30 s when empty or underutilized."""
    return testing.nodepool(
        name,
        requirements=requirements or [testing.capacity_types("on-demand")],
        disruption=disruption
        or {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"},
        labels=labels,
        expire_after=expire_after,
    )


def types_pool(*types: str, disruption: dict[str, Any] | None = None) -> dict[str, Any]:
    """The default pool, limited to these instance types."""
    return nodepool(
        requirements=[testing.requirement("node.kubernetes.io/instance-type", "In", list(types))],
        disruption=disruption,
    )


def deployment(
    name: str,
    replicas: int,
    cpu: str,
    memory: str = "128Mi",
    annotations: dict[str, str] | None = None,
    anti_affinity: bool = False,
) -> dict[str, Any]:
    """``anti_affinity``: at most one of its pods per node."""
    pod_spec: dict[str, Any] = {}
    if anti_affinity:
        pod_spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": name}},
                        "topologyKey": wk.HOSTNAME,
                    }
                ]
            }
        }
    return testing.deployment(
        name, replicas, cpu, memory, annotations=annotations or {}, **pod_spec
    )


def scale(name: str, replicas: int) -> dict[str, Any]:
    return {
        "scale": {"kind": "Deployment", "name": name, "namespace": "default", "replicas": replicas}
    }


def simulate(
    instance_types: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    settings: dict[str, str] | None = None,
    prepare: Callable[[Simulation], None] | None = None,
) -> SimulationResult:
    document = testing.scenario(
        "disruption-test",
        instance_types,
        [testing.ec2nodeclass(), *copy.deepcopy(objects)],
        steps,
        zones=ZONES,
        settings=settings or {},
    )
    simulation = Simulation(load_scenario(yaml.safe_dump(document, sort_keys=False)))
    if prepare is not None:
        prepare(simulation)
    return simulation.run()


def disruptions(result: SimulationResult) -> list[tuple[float, str]]:
    """(time, message) of every DisruptionTerminating event, in order."""
    return [(e.time, e.message) for e in result.events if e.reason == "DisruptionTerminating"]


def live_types(result: SimulationResult) -> list[str]:
    return sorted(n.instance_type or "" for n in result.final.nodes if n.managed)
