"""What the scheduler reads (a cluster snapshot) and what it returns (a plan) [SPEC 3].

Everything here is plain data so the state layer can build a snapshot cheaply and
callers can read a plan without knowing the solver. Pods and daemonset pod
templates stay Kubernetes dicts; resource lists are ``dict[str, int]`` in milli-units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api.resources import ResourceList

Pod = Mapping[str, Any]

# The constraint an unplaceable pod failed, as named in its reason [SPEC 3].
RESOURCES = "resources"
TAINTS = "taints"
NODE_AFFINITY = "node affinity"
POD_AFFINITY = "pod affinity"
POD_ANTI_AFFINITY = "pod anti-affinity"
TOPOLOGY_SPREAD = "topology spread"
HOST_PORTS = "host ports"
VOLUME_LIMITS = "volume limits"
VOLUME_ZONES = "volume zones"
POOL_LIMITS = "pool limits"
NO_INSTANCE_TYPE = "no compatible instance type"
NO_OFFERING = "no compatible offering"
MIN_VALUES = "minValues"
NO_NODEPOOL = "no nodepool"
INVALID_SPEC = "invalid pod spec"


@dataclass(slots=True)
class ExistingNode:
    """A node (or an in-flight NodeClaim) the scheduler may place pods on.

    ``pods`` are the pods already bound or nominated there (their requests,
    host ports, volumes and labels count). ``initialized`` is False for a node
    still starting (in-flight NodeClaim): such nodes are tried after initialized
    ones and their ``startup_taints`` and the ephemeral start-up taints are ignored.
    ``capacity`` (defaults to allocatable) counts against its pool's limits.
    ``volume_limits`` maps CSI driver -> attachable volumes (from CSINode).
    """

    name: str
    labels: dict[str, str]
    allocatable: ResourceList
    taints: list[dict[str, Any]] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    initialized: bool = True
    marked_for_deletion: bool = False
    startup_taints: list[dict[str, Any]] = field(default_factory=list)
    capacity: ResourceList | None = None
    volume_limits: dict[str, int] = field(default_factory=dict)

    @property
    def hostname(self) -> str:
        return self.labels.get(wk.HOSTNAME, self.name)

    @property
    def nodepool(self) -> str | None:
        return self.labels.get(wk.NODEPOOL)


@dataclass(slots=True)
class DaemonSet:
    """A daemonset as its pod template (a pod dict: ``spec`` is what matters), named
    ``namespace/name``."""

    name: str
    pod_template: Pod


@dataclass(slots=True)
class VolumeCatalog:
    """PVCs (``namespace/name`` -> dict), PVs and StorageClasses (name -> dict)."""

    claims: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    volumes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    storage_classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class ClusterSnapshot:
    """The cluster as the scheduler sees it. ``runtime_classes`` maps a RuntimeClass
    name to its pod overhead (used when a pod names one but carries no ``spec.overhead``)."""

    nodes: list[ExistingNode] = field(default_factory=list)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    volumes: VolumeCatalog = field(default_factory=VolumeCatalog)
    runtime_classes: Mapping[str, ResourceList] = field(default_factory=dict)
    # What each NodePool's nodes hold against its limits, when the caller knows more
    # nodes than ``nodes`` (those leaving still count); None: the sum over ``nodes``.
    pool_usage: Mapping[str, ResourceList] | None = None


@dataclass(slots=True)
class NodeClaimPlan:
    """One NodeClaim to create. ``requirements`` is the k8s list form; its
    instance-type ``In`` values are the candidates, cheapest first (also in
    ``instance_types``). ``requests`` = the pods' requests + ``daemonset_overhead``.
    ``hostname`` is the placeholder name topology used for this node."""

    nodepool: str
    hostname: str
    requirements: list[dict[str, Any]]
    instance_types: list[str]
    requests: ResourceList
    daemonset_overhead: ResourceList
    taints: list[dict[str, Any]]
    startup_taints: list[dict[str, Any]]
    labels: dict[str, str]
    pods: list[str]
    price: float


@dataclass(frozen=True, slots=True)
class Unplaceable:
    """A pod the plan cannot place: ``constraint`` is one of the names above,
    ``message`` says what exactly failed (shown to users)."""

    pod: str
    constraint: str
    message: str


@dataclass(slots=True)
class Plan:
    existing: dict[str, str] = field(default_factory=dict)  # pod key -> node name
    nodeclaims: list[NodeClaimPlan] = field(default_factory=list)
    unplaceable: dict[str, Unplaceable] = field(default_factory=dict)  # pod key -> reason

    @property
    def price(self) -> float:
        """$/hour of the new NodeClaims at their cheapest candidate offering."""
        return sum(nodeclaim.price for nodeclaim in self.nodeclaims)


def pod_key(pod: Pod) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
