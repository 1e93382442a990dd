"""Scenario builders for the disruption tests: every test runs the real operator in the
simulator and reads the outcome from the result (a plain module with a unique name, so
test modules can import it)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

ZONES = ["zone-a", "zone-b"]


def instance_type(
    name: str, cpu: str, memory: str, prices: dict[str, float], pods: int = 30
) -> dict[str, Any]:
    """``prices`` maps "zone/capacity-type" to a price."""
    offerings = []
    for key, price in prices.items():
        zone, capacity_type = key.split("/")
        offerings.append({"zone": zone, "capacityType": capacity_type, "price": price})
    return {"name": name, "cpu": cpu, "memory": memory, "pods": pods, "offerings": offerings}


def od(price: float, zone: str = "zone-a") -> dict[str, float]:
    return {f"{zone}/on-demand": price}


def nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "NodeRole",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        },
    }


def nodepool(
    requirements: list[dict[str, Any]] | None = None,
    disruption: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    expire_after: str = "720h",
    name: str = "default",
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": requirements
            or [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "expireAfter": expire_after,
        }
    }
    if labels:
        template["metadata"] = {"labels": labels}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": template,
            "disruption": disruption
            or {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"},
        },
    }


def deployment(
    name: str,
    replicas: int,
    cpu: str,
    memory: str = "128Mi",
    annotations: dict[str, str] | None = None,
    anti_affinity: bool = False,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "app",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ]
    }
    if anti_affinity:
        pod_spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": name}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                "spec": pod_spec,
            },
        },
    }


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
    document = {
        "apiVersion": "joiner.sim/v1",
        "kind": "Scenario",
        "metadata": {"name": "disruption-test"},
        "spec": {
            "cluster": {"name": "test", "region": "us-east-1", "zones": ZONES},
            "cloud": {"provider": "fake", "instanceTypes": instance_types},
            "settings": settings or {},
            "objects": [nodeclass(), *copy.deepcopy(objects)],
            "steps": steps,
        },
    }
    simulation = Simulation(load_scenario(yaml.safe_dump(document, sort_keys=False)))
    if prepare is not None:
        prepare(simulation)
    return simulation.run()


def disruptions(result: SimulationResult) -> list[tuple[float, str]]:
    """(time, message) of every DisruptionTerminating event, in order."""
    return [(e.time, e.message) for e in result.events if e.reason == "DisruptionTerminating"]


def live_types(result: SimulationResult) -> list[str]:
    return sorted(n.instance_type or "" for n in result.final.nodes if n.managed)
