"""The NodePool, NodeClaim, EC2NodeClass, NodeOverlay and CapacityBuffer schemas: the one
source of truth for the CRDs (``joiner.api.crds``), defaulting and validation
(``joiner.api.validation``).

Each CEL rule sits next to its Python twin and shares its message [SPEC 1].

Layout: ``common`` (shared pieces), ``nodepool`` (NodePool, NodeClaim),
``ec2nodeclass``, ``nodeoverlay``, ``capacitybuffer``; this module assembles the served kinds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joiner.api import capacitybuffer as cb
from joiner.api import ec2nodeclass as ec2
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import nodeoverlay as no
from joiner.api import nodepool as np
from joiner.api.definitions.capacitybuffer import capacitybuffer_spec, capacitybuffer_status
from joiner.api.definitions.ec2nodeclass import ec2nodeclass_spec, ec2nodeclass_status
from joiner.api.definitions.nodeoverlay import nodeoverlay_spec, nodeoverlay_status
from joiner.api.definitions.nodepool import (
    nodeclaim_spec,
    nodeclaim_status,
    nodepool_spec,
    nodepool_status,
)
from joiner.api.schema import Schema, free_object, obj, string

__all__ = [
    "CAPACITYBUFFER",
    "EC2NODECLASS",
    "JOINER_GROUPS",
    "KINDS",
    "NODECLAIM",
    "NODEOVERLAY",
    "NODEPOOL",
    "Kind",
    "Scale",
]


def root(spec: Schema, status: Schema) -> Schema:
    """``metadata`` is ObjectMeta, which the API server checks itself
    (``joiner.api.objectmeta`` does the same for Joiner)."""
    return obj(
        properties={
            "apiVersion": string(),
            "kind": string(),
            "metadata": free_object(),
            "spec": spec,
            "status": status,
        },
        required=("spec",),
    )


@dataclass(frozen=True)
class Scale:
    """The scale subresource: ``kubectl scale`` sets ``spec`` (an int32 on the server)."""

    spec_replicas_path: str
    status_replicas_path: str


@dataclass(frozen=True)
class Kind:
    """A served kind: its names, printer columns and schema."""

    group: str
    kind: str
    plural: str
    short_names: tuple[str, ...]
    schema: Schema
    printer_columns: tuple[dict[str, Any], ...]
    scale: Scale | None = None
    version: str = "v1"
    namespaced: bool = False
    categories: tuple[str, ...] = ("karpenter",)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


def _column(name: str, path: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


_READY = _column("Ready", '.status.conditions[?(@.type=="Ready")].status')
_AGE = _column("Age", ".metadata.creationTimestamp", "date")

NODEPOOL = Kind(
    group=wk.KARPENTER_GROUP,
    kind=np.KIND,
    plural="nodepools",
    short_names=(),
    schema=root(nodepool_spec(), nodepool_status()),
    printer_columns=(
        _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        _column("Nodes", ".status.resources.nodes"),
        _READY,
        _AGE,
        _column("Weight", ".spec.weight", "integer", priority=1),
        _column("CPU", ".status.resources.cpu", priority=1),
        _column("Memory", ".status.resources.memory", priority=1),
    ),
    # as upstream's NodePool (static pools), so the API server checks replicas the same way
    scale=Scale(".spec.replicas", ".status.nodes"),
)

NODECLAIM = Kind(
    group=wk.KARPENTER_GROUP,
    kind=nc.KIND,
    plural="nodeclaims",
    short_names=(),
    schema=root(nodeclaim_spec(for_template=False), nodeclaim_status()),
    printer_columns=(
        _column("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
        _column("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
        _column("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
        _column("Node", ".status.nodeName"),
        _READY,
        _AGE,
        _column("ImageID", ".status.imageID", priority=1),
        _column("ID", ".status.providerID", priority=1),
        _column("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
        _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
    ),
)

EC2NODECLASS = Kind(
    group=wk.AWS_GROUP,
    kind=ec2.KIND,
    plural="ec2nodeclasses",
    short_names=("ec2nc", "ec2ncs"),
    schema=root(ec2nodeclass_spec(), ec2nodeclass_status()),
    printer_columns=(_READY, _AGE, _column("Role", ".spec.role", priority=1)),
)

NODEOVERLAY = Kind(
    group=wk.KARPENTER_GROUP,
    kind=no.KIND,
    plural="nodeoverlays",
    short_names=("overlays",),
    schema=root(nodeoverlay_spec(), nodeoverlay_status()),
    printer_columns=(_READY, _AGE, _column("Weight", ".spec.weight", "integer", priority=1)),
    version=no.VERSION,
)

# Upstream's CRD (SIG Autoscaling's API, which Karpenter ships): namespaced, in the
# autoscaling category, with its printer columns.
CAPACITYBUFFER = Kind(
    group=cb.GROUP,
    kind=cb.KIND,
    plural="capacitybuffers",
    short_names=("cb",),
    schema=root(capacitybuffer_spec(), capacitybuffer_status()),
    printer_columns=(
        _column("Strategy", ".spec.provisioningStrategy"),
        _column("PodTemplate", ".status.podTemplateRef.name"),
        _column("Replicas", ".status.replicas", "integer"),
        _column("ConditionsType", ".status.conditions[*].type"),
        _column("ConditionsStatus", ".status.conditions[*].status"),
        _column("ConditionsReason", ".status.conditions[*].reason"),
        _AGE,
    ),
    version=cb.VERSION,
    namespaced=True,
    categories=("autoscaling",),
)

KINDS: tuple[Kind, ...] = (NODEPOOL, NODECLAIM, EC2NODECLASS, NODEOVERLAY, CAPACITYBUFFER)
JOINER_GROUPS = frozenset(k.group for k in KINDS)
