"""A pod's scheduling constraints and their relaxation order [SPEC 3.6, 3.7].

Preferences start out as requirements. ``relax`` removes one, in this order:
the next required node-affinity term (terms are ORed), the heaviest preferred pod
affinity term, the heaviest preferred pod anti-affinity term, the heaviest
preferred node-affinity term, a ScheduleAnyway spread constraint, and last
PreferNoSchedule taints become tolerated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from joiner.api.requirements import Requirements, node_affinity_required_terms
from joiner.scheduling.model import Pod
from joiner.scheduling.pods import labels_of, namespace_of
from joiner.scheduling.selectors import Selector
from joiner.scheduling.topology import (
    AFFINITY,
    ANTI_AFFINITY,
    SPREAD,
    NodeFilter,
    Topology,
    TopologyGroup,
)

T = TypeVar("T")


class _memoized(Generic[T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes one on every
    first access, a tenth of a small solve): the first access computes and stores the
    value in the instance's ``__dict__``, which answers every later access."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        value = self.compute(instance)
        instance.__dict__[self.name] = value
        return value


@dataclass(frozen=True)
class PodConstraints:
    node_terms: tuple[Requirements, ...]  # nodeSelector + each required term (ORed)
    term_index: int
    preferred_node: tuple[Requirements, ...]  # heaviest first; the first acts as required
    volume_requirements: Requirements
    required_topology: tuple[TopologyGroup, ...]
    preferred_affinity: tuple[TopologyGroup, ...]  # heaviest first
    preferred_anti_affinity: tuple[TopologyGroup, ...]
    schedule_anyway: tuple[TopologyGroup, ...]
    honor_prefer_no_schedule: bool = True

    @_memoized
    def node_requirements(self) -> Requirements:
        """What a node must satisfy, without the volume topology."""
        requirements = self.node_terms[self.term_index].copy()
        if self.preferred_node:
            requirements.add(*self.preferred_node[0].values())
        return requirements

    @_memoized
    def requirements(self) -> Requirements:
        return self.node_requirements.copy().add(*self.volume_requirements.values())

    @_memoized
    def signature(self) -> str:
        return repr(self.requirements.to_dicts())

    @_memoized
    def strict_requirements(self) -> Requirements:
        """What a node must satisfy without the preferred term: the domains a spread
        constraint of the pod spreads over (kube-scheduler's and Karpenter's)."""
        requirements = self.node_terms[self.term_index].copy()
        return requirements.add(*self.volume_requirements.values())

    @_memoized
    def strict_signature(self) -> str:
        return repr(self.strict_requirements.to_dicts())

    @_memoized
    def topology(self) -> tuple[TopologyGroup, ...]:
        return (
            self.required_topology
            + self.preferred_affinity
            + self.preferred_anti_affinity
            + self.schedule_anyway
        )

    def relax(self) -> tuple[PodConstraints, str] | None:
        """One step looser, with what was relaxed; None when nothing is left to relax."""
        if self.term_index + 1 < len(self.node_terms):
            return replace(self, term_index=self.term_index + 1), "required node affinity term"
        if self.preferred_affinity:
            return replace(self, preferred_affinity=self.preferred_affinity[1:]), (
                "preferred pod affinity"
            )
        if self.preferred_anti_affinity:
            return replace(self, preferred_anti_affinity=self.preferred_anti_affinity[1:]), (
                "preferred pod anti-affinity"
            )
        if self.preferred_node:
            return replace(self, preferred_node=self.preferred_node[1:]), (
                "preferred node affinity"
            )
        if self.schedule_anyway:
            return replace(self, schedule_anyway=self.schedule_anyway[1:]), (
                "ScheduleAnyway topology spread"
            )
        if self.honor_prefer_no_schedule:
            return replace(self, honor_prefer_no_schedule=False), "PreferNoSchedule taints"
        return None


def build_constraints(
    pod: Pod, volume_requirements: Requirements, topology: Topology
) -> PodConstraints:
    spec = pod.get("spec") or {}
    selector = Requirements.from_labels(spec.get("nodeSelector"))
    terms = node_affinity_required_terms(pod)
    node_terms = tuple(
        selector.copy().add(
            *Requirements.from_node_selector_requirements(t.get("matchExpressions")).values()
        )
        for t in terms
    ) or (selector,)
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    preferred_node = tuple(
        Requirements.from_node_selector_requirements(
            (p.get("preference") or {}).get("matchExpressions")
        )
        for p in _heaviest_first(
            node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
        )
    )
    namespace = namespace_of(pod)
    required, schedule_anyway = _spread_groups(
        spec, namespace, labels_of(pod), node_terms, topology
    )
    pod_affinity = affinity.get("podAffinity") or {}
    pod_anti = affinity.get("podAntiAffinity") or {}
    required += _term_groups(AFFINITY, pod_affinity, namespace, topology, required=True)
    required += _term_groups(ANTI_AFFINITY, pod_anti, namespace, topology, required=True)
    return PodConstraints(
        node_terms=node_terms,
        term_index=0,
        preferred_node=preferred_node,
        volume_requirements=volume_requirements,
        required_topology=required,
        preferred_affinity=_term_groups(AFFINITY, pod_affinity, namespace, topology, False),
        preferred_anti_affinity=_term_groups(ANTI_AFFINITY, pod_anti, namespace, topology, False),
        schedule_anyway=schedule_anyway,
    )


def _heaviest_first(preferred: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    return sorted(preferred or (), key=lambda p: -int(p.get("weight", 0)))


def _term_groups(
    kind: str, affinity: Mapping[str, Any], namespace: str, topology: Topology, required: bool
) -> tuple[TopologyGroup, ...]:
    if required:
        terms = list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
    else:
        terms = [
            p.get("podAffinityTerm") or {}
            for p in _heaviest_first(
                affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
            )
        ]
    return tuple(affinity_term_group(kind, term, namespace, topology) for term in terms)


def affinity_term_group(
    kind: str, term: Mapping[str, Any], namespace: str, topology: Topology
) -> TopologyGroup:
    # A namespaceSelector selects namespaces by their labels, which the snapshot does not
    # carry: any namespaceSelector is taken as "all namespaces" (the usual `{}` case).
    if term.get("namespaceSelector") is not None:
        namespaces = None
    else:
        namespaces = frozenset(term.get("namespaces") or (namespace,))
    selector = Selector.from_dict(term.get("labelSelector"))
    return topology.group(kind, term.get("topologyKey", ""), namespaces, selector)


def _spread_groups(
    spec: Mapping[str, Any],
    namespace: str,
    labels: Mapping[str, str],
    node_terms: tuple[Requirements, ...],
    topology: Topology,
) -> tuple[tuple[TopologyGroup, ...], tuple[TopologyGroup, ...]]:
    required: list[TopologyGroup] = []
    anyway: list[TopologyGroup] = []
    for constraint in spec.get("topologySpreadConstraints") or ():
        extra = {k: labels[k] for k in constraint.get("matchLabelKeys") or () if k in labels}
        honor_node_affinity = constraint.get("nodeAffinityPolicy", "Honor") == "Honor"
        honor_taints = constraint.get("nodeTaintsPolicy", "Ignore") == "Honor"
        group = topology.group(
            SPREAD,
            constraint.get("topologyKey", ""),
            frozenset([namespace]),
            Selector.from_dict(constraint.get("labelSelector"), extra),
            max_skew=int(constraint.get("maxSkew", 1)),
            min_domains=constraint.get("minDomains"),
            honor_node_affinity=honor_node_affinity,
            honor_taints=honor_taints,
            node_filter=_node_filter(spec, node_terms, honor_node_affinity, honor_taints),
        )
        target = anyway if constraint.get("whenUnsatisfiable") == "ScheduleAnyway" else required
        target.append(group)
    return tuple(required), tuple(anyway)


def _node_filter(
    spec: Mapping[str, Any],
    node_terms: tuple[Requirements, ...],
    honor_node_affinity: bool,
    honor_taints: bool,
) -> NodeFilter | None:
    """Which nodes' pods a spread constraint of this pod counts (None: every node)."""
    terms = node_terms if honor_node_affinity and all(node_terms) else ()  # empty: any node
    tolerations = tuple(spec.get("tolerations") or ()) if honor_taints else None
    if not terms and tolerations is None:
        return None
    return NodeFilter(terms, tolerations)
