"""One workload, two schedulers: the Karpenter oracle's input document as Joiner's
``solve`` inputs.

The oracle (``joiner.testing.oracle``) runs upstream Karpenter's scheduler on a JSON
document: instance types built with Karpenter's fake cloud provider, NodePool manifests,
pending pods, DaemonSets and existing nodes. ``solve_inputs`` reads the same document
into what ``joiner.scheduling.solver.solve`` takes, modelling the fake provider exactly
as the oracle builds it, so both schedulers see the same catalogue:

- capacity ``cpu``/``memory``/``pods`` (defaults 4, 4Gi, 110) plus ``resources``; a zero
  or missing cpu or memory takes the default, as the fake does;
- overhead: ``overhead`` as kube-reserved, the fake's 100m CPU and 10Mi when absent;
- offerings: as given (``available`` defaults to true), else spot in test-zone-1/2 and
  on-demand in test-zone-1/2/3, priced 0.1 per vCPU plus 0.1 per 10^9 bytes of memory
  (plus 1.0 per fake.com/vendor-a or vendor-b GPU);
- labels: instance type, ``arch`` (amd64), ``os`` (darwin, linux and windows), zone and
  capacity type of the available offerings, the fake's ``size`` (large above 4 CPUs and
  8Gi, else small), ``special`` (optional on large types, absent otherwise), ``integer``
  (whole CPUs, rounded up) and the document's ``labels``.

Existing nodes get the labels the fake provider gives a launched node (each single
value of the type's labels, then hostname, zone, capacity type, the nodepool labels and
the node's own ``labels``), the type's capacity and allocatable, and their bound pods.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool
from joiner.api.requirements import DOES_NOT_EXIST, IN, Requirement, Requirements
from joiner.cloudprovider.types import InstanceType, Offering, Overhead
from joiner.scheduling.model import ClusterSnapshot, DaemonSet, ExistingNode, Plan
from joiner.scheduling.solver import solve

# The labels Karpenter's fake cloud provider puts on every instance type (and registers
# as well-known, so pods may select them without a NodePool defining them).
SIZE, SPECIAL, INTEGER = "size", "special", "integer"
DEFAULT_ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
DEFAULT_OFFERINGS = (
    ("test-zone-1", wk.CAPACITY_TYPE_SPOT),
    ("test-zone-2", wk.CAPACITY_TYPE_SPOT),
    ("test-zone-1", wk.CAPACITY_TYPE_ON_DEMAND),
    ("test-zone-2", wk.CAPACITY_TYPE_ON_DEMAND),
    ("test-zone-3", wk.CAPACITY_TYPE_ON_DEMAND),
)
DEFAULT_OVERHEAD = {"cpu": "100m", "memory": "10Mi"}
DEFAULT_OS = ("darwin", "linux", "windows")
DEFAULT_PODS = 110
VENDOR_GPUS = ("fake.com/vendor-a", "fake.com/vendor-b")
_LARGE_CPU = res.milli("4")
_LARGE_MEMORY = res.milli("8Gi")


@dataclass(slots=True)
class SolveInputs:
    """The arguments of ``solve`` for one workload document."""

    pods: list[dict[str, Any]]
    nodepools: list[NodePool]
    instance_types: dict[str, list[InstanceType]]
    snapshot: ClusterSnapshot


def solve_inputs(document: Mapping[str, Any]) -> SolveInputs:
    types = [instance_type(raw) for raw in document.get("instanceTypes") or ()]
    by_name = {t.name: t for t in types}
    pools = [NodePool.from_dict(dict(raw)) for raw in document.get("nodePools") or ()]
    snapshot = ClusterSnapshot(
        nodes=[existing_node(raw, by_name) for raw in document.get("existingNodes") or ()],
        daemonsets=[daemonset(raw) for raw in document.get("daemonSets") or ()],
    )
    return SolveInputs(
        pods=[pending_pod(raw) for raw in document.get("pods") or ()],
        nodepools=pools,
        instance_types={pool.name: types for pool in pools},
        snapshot=snapshot,
    )


def solve_workload(document: Mapping[str, Any]) -> Plan:
    """Joiner's plan for the workload."""
    inputs = solve_inputs(document)
    return solve(inputs.pods, inputs.nodepools, inputs.instance_types, inputs.snapshot)


# --- instance types ------------------------------------------------------------------


def instance_type(raw: Mapping[str, Any]) -> InstanceType:
    name = raw["name"]
    capacity = _capacity(raw)
    offerings = _offerings(raw, capacity)
    available = [o for o in offerings if o.available]
    os_values = raw.get("os", DEFAULT_OS)
    requirements = Requirements(
        [
            Requirement.new(wk.INSTANCE_TYPE, IN, [name]),
            Requirement.new(wk.ARCH, IN, [raw.get("arch") or "amd64"]),
            Requirement.new(wk.OS, IN, [os_values] if isinstance(os_values, str) else os_values),
            Requirement.new(wk.ZONE, IN, sorted({o.zone for o in available})),
            Requirement.new(wk.CAPACITY_TYPE, IN, sorted({o.capacity_type for o in available})),
            Requirement.new(INTEGER, IN, [str(math.ceil(Fraction(capacity[res.CPU], 1000)))]),
            *_size_requirements(capacity),
            *(Requirement.new(k, IN, [v]) for k, v in (raw.get("labels") or {}).items()),
        ]
    )
    overhead = raw.get("overhead", DEFAULT_OVERHEAD)
    return InstanceType(
        name=name,
        requirements=requirements,
        offerings=offerings,
        capacity=capacity,
        overhead=Overhead(kube_reserved=res.parse_resource_list(overhead)),
    )


def _capacity(raw: Mapping[str, Any]) -> res.ResourceList:
    capacity = res.parse_resource_list(
        {"cpu": raw.get("cpu", "4"), "memory": raw.get("memory", "4Gi")}
    )
    capacity[res.CPU] = capacity[res.CPU] or res.milli("4")
    capacity[res.MEMORY] = capacity[res.MEMORY] or res.milli("4Gi")
    capacity[res.PODS] = res.milli(raw.get("pods", DEFAULT_PODS)) or res.milli(DEFAULT_PODS)
    capacity.update(res.parse_resource_list(raw.get("resources")))
    return capacity


def _size_requirements(capacity: Mapping[str, int]) -> list[Requirement]:
    if capacity[res.CPU] > _LARGE_CPU and capacity[res.MEMORY] > _LARGE_MEMORY:
        return [Requirement.new(SIZE, IN, ["large"]), Requirement.new(SPECIAL, IN, ["optional"])]
    return [Requirement.new(SIZE, IN, ["small"]), Requirement.new(SPECIAL, DOES_NOT_EXIST)]


def fake_price(capacity: Mapping[str, int]) -> float:
    """Karpenter's ``fake.PriceFromResources``."""
    price = 0.1 * capacity.get(res.CPU, 0) / 1000 + 0.1 * capacity.get(res.MEMORY, 0) / 1000 / 1e9
    return price + sum(1.0 for gpu in VENDOR_GPUS if gpu in capacity)


def _offerings(raw: Mapping[str, Any], capacity: Mapping[str, int]) -> list[Offering]:
    given = raw.get("offerings")
    if not given:
        price = fake_price(capacity)
        return [Offering(zone, ct, price) for zone, ct in DEFAULT_OFFERINGS]
    return [
        Offering(o["zone"], o["capacityType"], float(o["price"]), bool(o.get("available", True)))
        for o in given
    ]


def type_labels(it: InstanceType) -> dict[str, str]:
    """The labels the fake cloud provider gives a node of this type: the first value of
    each ``In`` requirement."""
    return {
        key: sorted(r.values)[0]
        for key, r in it.requirements.items()
        if not r.complement and r.values and not r.absent
    }


# --- pods, daemonsets, nodes ---------------------------------------------------------


def pending_pod(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The pod with the oracle's defaults: namespace ``default``, uid
    ``oracle-<namespace>-<name>``."""
    pod = dict(raw)
    meta = dict(pod.get("metadata") or {})
    meta.setdefault("namespace", "default")
    meta.setdefault("uid", f"oracle-{meta['namespace']}-{meta.get('name', '')}")
    pod["metadata"] = meta
    return pod


def daemonset(raw: Mapping[str, Any]) -> DaemonSet:
    meta = raw.get("metadata") or {}
    template = (raw.get("spec") or {}).get("template") or {}
    return DaemonSet(
        name=f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}",
        pod_template={"metadata": template.get("metadata") or {}, "spec": template.get("spec")},
    )


def existing_node(raw: Mapping[str, Any], types: Mapping[str, InstanceType]) -> ExistingNode:
    it = types[raw["instanceType"]]
    labels = type_labels(it)
    labels[wk.HOSTNAME] = raw["name"]
    labels[wk.ZONE] = raw["zone"]
    labels[wk.CAPACITY_TYPE] = raw["capacityType"]
    if raw.get("nodePool"):
        labels[wk.NODEPOOL] = raw["nodePool"]
        labels[wk.NODE_REGISTERED] = labels[wk.NODE_INITIALIZED] = "true"
    labels.update(raw.get("labels") or {})
    return ExistingNode(
        name=raw["name"],
        labels=labels,
        allocatable=dict(it.allocatable),
        taints=[dict(t) for t in raw.get("taints") or ()],
        pods=[pending_pod(p) for p in raw.get("pods") or ()],
        marked_for_deletion=bool(raw.get("markedForDeletion")),
        capacity=dict(it.capacity),
    )
