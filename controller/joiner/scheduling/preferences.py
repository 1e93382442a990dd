"""A pod's scheduling constraints and their relaxation order [SPEC 3.6, 3.7].

Preferences start out as requirements. ``relax`` removes one, in this order:
the next required node-affinity term (terms are ORed), the heaviest preferred pod
affinity term, the heaviest preferred pod anti-affinity term, the heaviest
preferred node-affinity term, a ScheduleAnyway spread constraint, and last
PreferNoSchedule taints become tolerated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from joiner.api.requirements import Requirements, node_affinity_required_terms
from joiner.identity import IdentityCache
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
    terms = _terms_of(pod)
    # groups are created in the pod's order of terms (spreads, then affinity terms)
    made = [(role, topology.group(*args, **options)) for role, args, options in terms.groups]

    def groups(*roles: str) -> tuple[TopologyGroup, ...]:
        return tuple(group for role in roles for r, group in made if r == role)

    constraints = PodConstraints(
        node_terms=terms.node_terms,
        term_index=0,
        preferred_node=terms.preferred_node,
        volume_requirements=volume_requirements,
        required_topology=groups(_SPREAD, _REQUIRED_AFFINITY, _REQUIRED_ANTI),
        preferred_affinity=groups(_PREFERRED_AFFINITY),
        preferred_anti_affinity=groups(_PREFERRED_ANTI),
        schedule_anyway=groups(_ANYWAY),
    )
    if not volume_requirements:  # the node side is the pod's alone: the same every solve
        if not terms.node_side:
            terms.node_side.update((name, getattr(constraints, name)) for name in _NODE_SIDE)
        constraints.__dict__.update(terms.node_side)
    return constraints


# PodConstraints' memoised values that depend on its node terms and volumes only
_NODE_SIDE = (
    "node_requirements",
    "requirements",
    "signature",
    "strict_requirements",
    "strict_signature",
)


# the roles of a pod's topology terms, in the order their groups are created
_SPREAD, _ANYWAY = "spread", "anyway"
_REQUIRED_AFFINITY, _REQUIRED_ANTI = "required affinity", "required anti-affinity"
_PREFERRED_AFFINITY, _PREFERRED_ANTI = "preferred affinity", "preferred anti-affinity"


@dataclass(frozen=True, slots=True)
class _PodTerms:
    """A pod's scheduling terms as parsed, before they meet a solve's topology: its node
    requirements and, per topology term, its role and the arguments of its group."""

    node_terms: tuple[Requirements, ...]
    preferred_node: tuple[Requirements, ...]
    groups: tuple[tuple[str, tuple, dict[str, Any]], ...]
    # the unrelaxed constraints' values of _NODE_SIDE without volumes, once worked out
    node_side: dict[str, Any] = field(default_factory=dict)


# Parsed terms of pod objects seen recently, by identity: the controller's state hands
# the same (never edited) pending pods to every scheduling pass until they change. The
# parsed values are read, never edited.
_parsed: IdentityCache[_PodTerms] = IdentityCache(20_000)


def _terms_of(pod: Pod) -> _PodTerms:
    return _parsed.remember((pod,), lambda: _parse_terms(pod))


def _parse_terms(pod: Pod) -> _PodTerms:
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
    groups = _spread_terms(spec, namespace, labels_of(pod), node_terms)
    pod_affinity = affinity.get("podAffinity") or {}
    pod_anti = affinity.get("podAntiAffinity") or {}
    for role, kind, terms_of_kind, required in (
        (_REQUIRED_AFFINITY, AFFINITY, pod_affinity, True),
        (_REQUIRED_ANTI, ANTI_AFFINITY, pod_anti, True),
        (_PREFERRED_AFFINITY, AFFINITY, pod_affinity, False),
        (_PREFERRED_ANTI, ANTI_AFFINITY, pod_anti, False),
    ):
        groups += [
            (role, _affinity_term_args(kind, term, namespace), {})
            for term in _affinity_terms(terms_of_kind, required)
        ]
    return _PodTerms(node_terms, preferred_node, tuple(groups))


def _heaviest_first(preferred: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    return sorted(preferred or (), key=lambda p: -int(p.get("weight", 0)))


def _affinity_terms(affinity: Mapping[str, Any], required: bool) -> list[Mapping[str, Any]]:
    if required:
        return list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
    return [
        p.get("podAffinityTerm") or {}
        for p in _heaviest_first(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ]


def affinity_term_group(
    kind: str, term: Mapping[str, Any], namespace: str, topology: Topology
) -> TopologyGroup:
    return topology.group(*_affinity_term_args(kind, term, namespace))


def _affinity_term_args(
    kind: str, term: Mapping[str, Any], namespace: str
) -> tuple[str, str, frozenset[str] | None, Selector]:
    # A namespaceSelector selects namespaces by their labels, which the snapshot does not
    # carry: any namespaceSelector is taken as "all namespaces" (the usual `{}` case).
    if term.get("namespaceSelector") is not None:
        namespaces = None
    else:
        namespaces = frozenset(term.get("namespaces") or (namespace,))
    selector = Selector.from_dict(term.get("labelSelector"))
    return kind, term.get("topologyKey", ""), namespaces, selector


def _spread_terms(
    spec: Mapping[str, Any],
    namespace: str,
    labels: Mapping[str, str],
    node_terms: tuple[Requirements, ...],
) -> list[tuple[str, tuple, dict[str, Any]]]:
    terms: list[tuple[str, tuple, dict[str, Any]]] = []
    for constraint in spec.get("topologySpreadConstraints") or ():
        extra = {k: labels[k] for k in constraint.get("matchLabelKeys") or () if k in labels}
        honor_node_affinity = constraint.get("nodeAffinityPolicy", "Honor") == "Honor"
        honor_taints = constraint.get("nodeTaintsPolicy", "Ignore") == "Honor"
        args = (
            SPREAD,
            constraint.get("topologyKey", ""),
            frozenset([namespace]),
            Selector.from_dict(constraint.get("labelSelector"), extra),
        )
        options = {
            "max_skew": int(constraint.get("maxSkew", 1)),
            "min_domains": constraint.get("minDomains"),
            "honor_node_affinity": honor_node_affinity,
            "honor_taints": honor_taints,
            "node_filter": _node_filter(spec, node_terms, honor_node_affinity, honor_taints),
        }
        anyway = constraint.get("whenUnsatisfiable") == "ScheduleAnyway"
        terms.append((_ANYWAY if anyway else _SPREAD, args, options))
    return terms


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
