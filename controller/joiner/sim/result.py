"""What a simulation produced: the data model of ``joiner simulate --output json``.

The JSON form is a public contract (docs/scenario.md, version 1): ``to_dict`` emits
exactly the documented fields in the documented order. Times are seconds since the
start of the run, CPU in cores, memory in bytes, prices in USD per hour.

``StepRecord.name``, ``StepRecord.failures`` and ``SimulationResult.failures`` are for
the human renderers (table, report) and the exit code; the JSON contract has no field
for them, so ``to_dict`` leaves them out. Of ``StepRecord.unsettled`` the JSON has
``settled`` (on settle steps only, added within version 1: old readers ignore it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from joiner.api import resources as res

RESULT_VERSION = 1

ResourceView = dict[str, float | int]


def resource_view(resources: Mapping[str, int]) -> ResourceView:
    """Milli-unit resources as the result shows them: CPU in cores (float), memory and
    storage in bytes, countable resources (pods, GPUs, ...) as integers when whole."""
    view: ResourceView = {}
    for name, amount_milli in sorted(resources.items()):
        value = res.to_float(name, amount_milli)
        if name == res.CPU:
            view[name] = value
        elif value.is_integer():
            view[name] = int(value)
        else:
            view[name] = value
    return view


@dataclass
class NodeView:
    """One Node in a snapshot (managed: launched by the controller)."""

    name: str
    managed: bool
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price: float | None
    ready: bool
    nodepool: str | None = None
    nodeclaim: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    allocatable: ResourceView = field(default_factory=dict)
    requested: ResourceView = field(default_factory=dict)
    pods: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "managed": self.managed,
            "nodepool": self.nodepool,
            "nodeclaim": self.nodeclaim,
            "instanceType": self.instance_type,
            "zone": self.zone,
            "capacityType": self.capacity_type,
            "price": self.price,
            "ready": self.ready,
            "labels": dict(self.labels),
            "taints": [dict(t) for t in self.taints],
            "allocatable": dict(self.allocatable),
            "requested": dict(self.requested),
            "pods": list(self.pods),
        }


@dataclass
class PendingPod:
    """A pod that is not bound, with the constraint that keeps it from being placed."""

    name: str  # namespace/name
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class BufferView:
    """A CapacityBuffer: the chunks it resolved to and those the cluster holds, with its
    Provisioning reason and, when short, the scheduler's word on why. ``wanted`` is None
    for a buffer that does not resolve (``reason`` and ``why`` then say why not)."""

    name: str  # namespace/name
    wanted: int | None
    held: int
    reason: str
    why: str = ""


@dataclass
class Snapshot:
    time: float
    cost_per_hour: float
    nodes: list[NodeView] = field(default_factory=list)
    pending_pods: list[PendingPod] = field(default_factory=list)
    # For the table and the report; not in the JSON form (version 1 has no field for it).
    buffers: list[BufferView] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": float(self.time),
            "costPerHour": self.cost_per_hour,
            "nodes": [n.to_dict() for n in self.nodes],
            "pendingPods": [p.to_dict() for p in self.pending_pods],
        }

    @property
    def managed_nodes(self) -> list[NodeView]:
        return [n for n in self.nodes if n.managed]

    @property
    def pods_running(self) -> int:
        """Pods bound to a node."""
        return sum(len(n.pods) for n in self.nodes)


def cost_per_hour(nodes: Iterable[NodeView]) -> float:
    """The hourly price of these nodes; nodes whose price is unknown count as free."""
    return sum(n.price for n in nodes if n.price is not None)


@dataclass
class StepRecord:
    """The state right after one scenario step completed."""

    index: int
    action: str
    time: float
    snapshot: Snapshot
    name: str | None = None
    failures: list[str] = field(default_factory=list)  # expect steps only
    # settle steps only: what was still in flight when the bound was reached, as
    # "spec.steps[1]: settle: did not settle within 10m: pending pods: 3"; None if settled
    unsettled: str | None = None

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "index": self.index,
            "action": self.action,
            "time": float(self.time),
        }
        if self.action == "settle":
            record["settled"] = self.unsettled is None
        record["snapshot"] = self.snapshot.to_dict()
        return record


@dataclass
class NodeClaimRecord:
    """The life of one NodeClaim; a time is None until that stage was reached."""

    name: str
    nodepool: str
    created_at: float
    instance_types: list[str] = field(default_factory=list)  # candidates, cheapest first
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    price: float | None = None
    launched_at: float | None = None
    registered_at: float | None = None
    initialized_at: float | None = None
    deleted_at: float | None = None
    disruption_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodepool": self.nodepool,
            "instanceType": self.instance_type,
            "zone": self.zone,
            "capacityType": self.capacity_type,
            "price": self.price,
            "instanceTypes": list(self.instance_types),
            "createdAt": float(self.created_at),
            "launchedAt": _optional_time(self.launched_at),
            "registeredAt": _optional_time(self.registered_at),
            "initializedAt": _optional_time(self.initialized_at),
            "deletedAt": _optional_time(self.deleted_at),
            "disruptionReason": self.disruption_reason,
        }

    def exists_at(self, time: float) -> bool:
        """Created at or before ``time`` and not yet deleted then."""
        return self.created_at <= time and (self.deleted_at is None or self.deleted_at > time)


@dataclass
class EventRecord:
    """One event, or every repeat of it: the same object, reason and message."""

    time: float  # the first time it happened
    kind: str  # the kind of the object the event is about
    name: str
    reason: str
    message: str
    count: int = 1  # how many times it happened
    last_time: float | None = None  # the last time (None: only at ``time``)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": float(self.time),
            "kind": self.kind,
            "name": self.name,
            "reason": self.reason,
            "message": self.message,
            "count": self.count,
            "lastTime": float(self.time if self.last_time is None else self.last_time),
        }


@dataclass
class Totals:
    cost: float = 0.0  # USD: costPerHour integrated over the run
    nodeclaims_created: int = 0
    nodeclaims_deleted: int = 0
    evictions: int = 0
    pod_pending_seconds: float = 0.0
    restarts: int = 0  # of the operator (restart steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cost": self.cost,
            "nodeclaimsCreated": self.nodeclaims_created,
            "nodeclaimsDeleted": self.nodeclaims_deleted,
            "evictions": self.evictions,
            "podPendingSeconds": float(self.pod_pending_seconds),
            "restarts": self.restarts,
        }


@dataclass
class SimulationResult:
    scenario: str
    steps: list[StepRecord]
    final: Snapshot
    nodeclaims: list[NodeClaimRecord] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    version: int = RESULT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "scenario": self.scenario,
            "steps": [s.to_dict() for s in self.steps],
            "final": self.final.to_dict(),
            "nodeclaims": [c.to_dict() for c in self.nodeclaims],
            "events": [e.to_dict() for e in self.events],
            "totals": self.totals.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @property
    def failures(self) -> list[str]:
        """Every failed expectation, in step order (non-empty means exit 1)."""
        return [failure for step in self.steps for failure in step.failures]

    @property
    def unsettled(self) -> list[str]:
        """Every settle step that reached its bound unsettled (non-empty means exit 2)."""
        return [step.unsettled for step in self.steps if step.unsettled is not None]


def _optional_time(value: float | None) -> float | None:
    return None if value is None else float(value)
