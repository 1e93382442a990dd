"""Builders for small, exact scheduling scenarios."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from joiner.api.nodepool import NodePool
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.scheduling.model import ClusterSnapshot, Plan
from joiner.scheduling.solver import solve


def pod(
    name: str,
    cpu: str = "100m",
    memory: str = "100Mi",
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    created: str = "2026-01-01T00:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    container: dict[str, Any] = {"name": "main", "resources": {"requests": requests}}
    if "extra" in spec:
        container["resources"]["requests"].update(spec.pop("extra"))
    if "ports" in spec:
        container["ports"] = spec.pop("ports")
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": dict(labels or {}),
            "creationTimestamp": created,
        },
        "spec": {"containers": [container], **spec},
    }


def nodepool(
    name: str = "default",
    requirements: Sequence[Mapping[str, Any]] = (),
    weight: int | None = None,
    limits: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    startup_taints: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
) -> NodePool:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": dict(labels or {})},
            "spec": {
                "nodeClassRef": {"name": "default"},
                "requirements": [dict(r) for r in requirements],
                "taints": [dict(t) for t in taints],
                "startupTaints": [dict(t) for t in startup_taints],
            },
        }
    }
    if weight is not None:
        spec["weight"] = weight
    if limits:
        spec["limits"] = dict(limits)
    return NodePool.from_dict({"metadata": {"name": name}, "spec": spec})


def catalogue() -> list[InstanceType]:
    """small (2 CPU, 4Gi), medium (4 CPU, 8Gi), large (8 CPU, 16Gi): spot and on-demand
    in three zones, priced from size."""
    return [
        new_instance_type("small", cpu="2", memory="4Gi", pods=10),
        new_instance_type("medium", cpu="4", memory="8Gi", pods=20),
        new_instance_type("large", cpu="8", memory="16Gi", pods=40),
    ]


def on_demand(zones: Sequence[str], price: float) -> list[Offering]:
    return [Offering(z, "on-demand", price) for z in zones]


def run(
    pods: Sequence[Mapping[str, Any]],
    pools: Sequence[NodePool] | None = None,
    types: Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]] | None = None,
    snapshot: ClusterSnapshot | None = None,
) -> Plan:
    pools = list(pools) if pools is not None else [nodepool()]
    if types is None or not isinstance(types, Mapping):
        chosen = list(types) if types is not None else catalogue()
        types = {p.name: chosen for p in pools}
    return solve(pods, pools, types, snapshot)


def layout(plan: Plan) -> list[tuple[str, list[str]]]:
    """(cheapest candidate type, sorted pod names) per NodeClaim, in plan order."""
    return [
        (nc.instance_types[0], sorted(k.split("/", 1)[1] for k in nc.pods))
        for nc in plan.nodeclaims
    ]


def reasons(plan: Plan) -> dict[str, str]:
    return {k.split("/", 1)[1]: u.constraint for k, u in plan.unplaceable.items()}
