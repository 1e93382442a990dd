"""NodePool (karpenter.sh/v1): typed view over the Kubernetes dict form.

``NodePool.from_dict`` applies the API defaults; ``to_dict`` gives back the
Kubernetes form. Validation lives in ``joiner.api.validation``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from croniter import croniter

from joiner.api import labels as wk
from joiner.api.duration import parse_duration
from joiner.api.quantity import QuantityError
from joiner.api.requirements import Requirements
from joiner.api.resources import ResourceList, milli
from joiner.api.serialize import manifest, optional_fields, stable_hash

KIND = "NodePool"
DEFAULT_EXPIRE_AFTER = "720h"
DEFAULT_CONSOLIDATION_POLICY = "WhenEmptyOrUnderutilized"
DEFAULT_CONSOLIDATE_AFTER = "0s"
DEFAULT_BUDGET_NODES = "10%"
# Balanced scores each consolidation move [DISR-10]; no feature gate, as upstream.
BALANCED = "Balanced"
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", BALANCED)
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")
# Budget schedules: cron in UTC, or one of these macros.
CRON_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def cron_expression(schedule: str) -> str | None:
    """The five-field cron expression of a budget schedule (a macro expanded), or None when
    Joiner cannot read it (the API server accepts any five words; croniter also reads the
    six and seven fields Karpenter does not)."""
    expression = CRON_MACROS.get(schedule, schedule)
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        return None
    return expression


@dataclass
class NodeClassRef:
    name: str
    group: str = wk.AWS_GROUP
    kind: str = "EC2NodeClass"

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> NodeClassRef:
        raw = raw or {}
        return cls(
            name=raw.get("name", ""),
            group=raw.get("group", wk.AWS_GROUP),
            kind=raw.get("kind", "EC2NodeClass"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "kind": self.kind, "name": self.name}


@dataclass
class Budget:
    nodes: str = DEFAULT_BUDGET_NODES
    schedule: str | None = None
    duration: str | None = None
    reasons: list[str] | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Budget:
        return cls(
            nodes=str(raw.get("nodes", DEFAULT_BUDGET_NODES)),
            schedule=raw.get("schedule"),
            duration=raw.get("duration"),
            reasons=list(raw["reasons"]) if raw.get("reasons") is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": self.nodes}
        if self.schedule is not None:
            out["schedule"] = self.schedule
        if self.duration is not None:
            out["duration"] = self.duration
        if self.reasons is not None:
            out["reasons"] = list(self.reasons)
        return out


@dataclass
class Disruption:
    consolidation_policy: str = DEFAULT_CONSOLIDATION_POLICY
    consolidate_after: str = DEFAULT_CONSOLIDATE_AFTER
    budgets: list[Budget] = field(default_factory=lambda: [Budget()])

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> Disruption:
        raw = raw or {}
        budgets = raw.get("budgets")
        return cls(
            consolidation_policy=raw.get("consolidationPolicy", DEFAULT_CONSOLIDATION_POLICY),
            consolidate_after=raw.get("consolidateAfter", DEFAULT_CONSOLIDATE_AFTER),
            budgets=[Budget.from_dict(b) for b in budgets] if budgets is not None else [Budget()],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "consolidationPolicy": self.consolidation_policy,
            "consolidateAfter": self.consolidate_after,
            "budgets": [b.to_dict() for b in self.budgets],
        }

    @property
    def consolidate_after_seconds(self) -> float | None:
        """None when consolidation is disabled (``Never``)."""
        return parse_duration(self.consolidate_after)


@dataclass
class NodeClaimTemplate:
    """``spec.template`` of a NodePool: what every NodeClaim of the pool gets."""

    node_class_ref: NodeClassRef
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requirements: list[dict[str, Any]] = field(default_factory=list)
    taints: list[dict[str, Any]] = field(default_factory=list)
    startup_taints: list[dict[str, Any]] = field(default_factory=list)
    expire_after: str = DEFAULT_EXPIRE_AFTER
    termination_grace_period: str | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> NodeClaimTemplate:
        raw = raw or {}
        meta, spec = raw.get("metadata") or {}, raw.get("spec") or {}
        return cls(
            node_class_ref=NodeClassRef.from_dict(spec.get("nodeClassRef")),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            requirements=copy.deepcopy(list(spec.get("requirements") or [])),
            taints=copy.deepcopy(list(spec.get("taints") or [])),
            startup_taints=copy.deepcopy(list(spec.get("startupTaints") or [])),
            expire_after=spec.get("expireAfter", DEFAULT_EXPIRE_AFTER),
            termination_grace_period=spec.get("terminationGracePeriod"),
        )

    def to_dict(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self.labels:
            meta["labels"] = dict(self.labels)
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        spec: dict[str, Any] = {
            "nodeClassRef": self.node_class_ref.to_dict(),
            "requirements": copy.deepcopy(self.requirements),
            "expireAfter": self.expire_after,
        }
        optional_fields(
            spec,
            taints=self.taints,
            startupTaints=self.startup_taints,
            terminationGracePeriod=self.termination_grace_period,
        )
        out: dict[str, Any] = {"spec": spec}
        if meta:
            out["metadata"] = meta
        return out

    def requirements_with_labels(self) -> Requirements:
        """Template requirements intersected with template labels [SPEC 3.6]."""
        return Requirements.from_node_selector_requirements(self.requirements).add(
            *Requirements.from_labels(self.labels).values()
        )

    @property
    def expire_after_seconds(self) -> float | None:
        return parse_duration(self.expire_after)

    @property
    def termination_grace_period_seconds(self) -> float | None:
        if self.termination_grace_period is None:
            return None
        return parse_duration(self.termination_grace_period)


@dataclass
class NodePool:
    metadata: dict[str, Any]
    template: NodeClaimTemplate
    disruption: Disruption = field(default_factory=Disruption)
    limits: dict[str, Any] = field(default_factory=dict)
    weight: int | None = None
    replicas: int | None = None  # a static NodePool keeps exactly this many nodes [STATIC-1]
    status: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> NodePool:
        spec = raw.get("spec") or {}
        return cls(
            metadata=copy.deepcopy(raw.get("metadata") or {}),
            template=NodeClaimTemplate.from_dict(spec.get("template")),
            disruption=Disruption.from_dict(spec.get("disruption")),
            limits=dict(spec.get("limits") or {}),
            weight=spec.get("weight"),
            replicas=spec.get("replicas"),
            status=copy.deepcopy(raw.get("status") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "template": self.template.to_dict(),
            "disruption": self.disruption.to_dict(),
        }
        optional_fields(spec, limits=self.limits, weight=self.weight, replicas=self.replicas)
        return manifest(wk.API_VERSION, KIND, self.metadata, spec, self.status)

    @property
    def name(self) -> str:
        return self.metadata.get("name", "")

    @property
    def is_static(self) -> bool:
        """``replicas`` is set: the pool keeps a node count, pods or not [STATIC-1]."""
        return self.replicas is not None

    @property
    def limits_milli(self) -> ResourceList:
        """The limits as Joiner applies them: a negative one is 0 (no capacity), one Joiner
        cannot read (an exponent beyond e+-1000, which the API server accepts) none."""
        limits: ResourceList = {}
        for name, value in self.limits.items():
            try:
                limits[name] = max(0, milli(value))
            except QuantityError:
                continue
        return limits

    def template_hash(self) -> str:
        """Static drift hash [API-1]: over ``spec.template`` without its requirements
        (requirement drift is checked against the requirements themselves)."""
        template = self.template.to_dict()
        template["spec"].pop("requirements", None)
        return stable_hash(template)

    def requirements(self) -> Requirements:
        """Everything a node of this pool is known to satisfy: template requirements and
        labels, plus its own nodepool label."""
        return self.template.requirements_with_labels().add(
            *Requirements.from_labels({wk.NODEPOOL: self.name}).values()
        )


class _Weighted(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int | None: ...


W = TypeVar("W", bound=_Weighted)


def by_weight(pools: Iterable[W]) -> list[W]:
    """Pools in the order the scheduler tries them, as Karpenter's ``OrderByWeight``:
    highest weight first, equal weights by name descending."""
    by_name = sorted(pools, key=lambda pool: pool.name, reverse=True)
    return sorted(by_name, key=lambda pool: -(pool.weight or 0))
