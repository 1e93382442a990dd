"""NodeClaim (karpenter.sh/v1): one launched (or launching) machine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api.nodepool import DEFAULT_EXPIRE_AFTER, NodeClassRef
from joiner.api.requirements import Requirements
from joiner.api.resources import ResourceList, parse_resource_list
from joiner.api.serialize import manifest, optional_fields
from joiner.jsoncopy import deep_copy

KIND = "NodeClaim"

# Condition types
LAUNCHED = "Launched"
REGISTERED = "Registered"
INITIALIZED = "Initialized"
READY = "Ready"
CONSOLIDATABLE = "Consolidatable"
DRIFTED = "Drifted"
DRAINED = "Drained"
INSTANCE_TERMINATING = "InstanceTerminating"
DISRUPTION_REASON = "DisruptionReason"


@dataclass
class NodeClaimStatus:
    node_name: str | None = None
    provider_id: str | None = None
    image_id: str | None = None
    capacity: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    last_pod_event_time: str | None = None
    conditions: list[dict[str, Any]] = field(default_factory=list)

    _FIELDS = (
        ("node_name", "nodeName"),
        ("provider_id", "providerID"),
        ("image_id", "imageID"),
        ("last_pod_event_time", "lastPodEventTime"),
    )

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> NodeClaimStatus:
        raw = raw or {}
        status = cls(
            capacity=dict(raw.get("capacity") or {}),
            allocatable=dict(raw.get("allocatable") or {}),
            conditions=deep_copy(list(raw.get("conditions") or [])),
        )
        for attr, key in cls._FIELDS:
            setattr(status, attr, raw.get(key))
        return status

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            key: getattr(self, attr) for attr, key in self._FIELDS if getattr(self, attr)
        }
        if self.capacity:
            out["capacity"] = dict(self.capacity)
        if self.allocatable:
            out["allocatable"] = dict(self.allocatable)
        if self.conditions:
            out["conditions"] = deep_copy(self.conditions)
        return out


@dataclass
class NodeClaim:
    metadata: dict[str, Any]
    node_class_ref: NodeClassRef
    requirements: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[str, Any] = field(default_factory=dict)  # {"requests": {...}}
    taints: list[dict[str, Any]] = field(default_factory=list)
    startup_taints: list[dict[str, Any]] = field(default_factory=list)
    expire_after: str = DEFAULT_EXPIRE_AFTER
    termination_grace_period: str | None = None
    status: NodeClaimStatus = field(default_factory=NodeClaimStatus)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> NodeClaim:
        spec = raw.get("spec") or {}
        return cls(
            metadata=deep_copy(raw.get("metadata") or {}),
            node_class_ref=NodeClassRef.from_dict(spec.get("nodeClassRef")),
            requirements=deep_copy(list(spec.get("requirements") or [])),
            resources=deep_copy(spec.get("resources") or {}),
            taints=deep_copy(list(spec.get("taints") or [])),
            startup_taints=deep_copy(list(spec.get("startupTaints") or [])),
            expire_after=spec.get("expireAfter", DEFAULT_EXPIRE_AFTER),
            termination_grace_period=spec.get("terminationGracePeriod"),
            status=NodeClaimStatus.from_dict(raw.get("status")),
        )

    def to_dict(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "nodeClassRef": self.node_class_ref.to_dict(),
            "requirements": deep_copy(self.requirements),
            "resources": deep_copy(self.resources),
            "expireAfter": self.expire_after,
        }
        optional_fields(
            spec,
            taints=self.taints,
            startupTaints=self.startup_taints,
            terminationGracePeriod=self.termination_grace_period,
        )
        return manifest(wk.API_VERSION, KIND, self.metadata, spec, self.status.to_dict())

    @property
    def name(self) -> str:
        return self.metadata.get("name", "")

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.setdefault("labels", {})

    @property
    def nodepool(self) -> str | None:
        return (self.metadata.get("labels") or {}).get(wk.NODEPOOL)

    def requirement_set(self) -> Requirements:
        return Requirements.from_node_selector_requirements(self.requirements)

    @property
    def requests_milli(self) -> ResourceList:
        return parse_resource_list(self.resources.get("requests"))

    def instance_type_candidates(self) -> list[str]:
        """Candidate instance types in the order the scheduler wrote them (cheapest first)."""
        for requirement in self.requirements:
            if requirement.get("key") == wk.INSTANCE_TYPE and requirement.get("operator") == "In":
                return list(requirement.get("values") or [])
        return []

    def condition_true(self, type_: str) -> bool:
        return cond.is_true(self.status.conditions, type_)
