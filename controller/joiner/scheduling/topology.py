"""Topology: spread constraints and pod (anti-)affinity, counted per domain [SPEC 3.8].

A ``TopologyGroup`` is one distinct constraint (kind, topology key, namespaces,
selector, skew settings). It counts, per domain (a value of the topology key),
the pods its selector matches, and for anti-affinity also where the pods that
*own* the term run, so a new pod matched by an existing pod's anti-affinity is
kept away from it. Domains come from the pools (requirements and offerings) and
the existing nodes. New NodeClaims are their own hostname domain; every other
topology key is pinned to one domain on a new NodeClaim when a constraint needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api.requirements import Requirements, labels_requirements
from joiner.scheduling import messages as msg
from joiner.scheduling.model import (
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    TOPOLOGY_SPREAD,
    ExistingNode,
)
from joiner.scheduling.pods import labels_of, namespace_of
from joiner.scheduling.selectors import Selector
from joiner.scheduling.taints import untolerated

SPREAD, AFFINITY, ANTI_AFFINITY = "spread", "affinity", "anti-affinity"
_CONSTRAINT_NAME = {
    SPREAD: TOPOLOGY_SPREAD,
    AFFINITY: POD_AFFINITY,
    ANTI_AFFINITY: POD_ANTI_AFFINITY,
}


@dataclass(eq=False, slots=True)
class TopologyGroup:
    kind: str
    key: str
    namespaces: frozenset[str] | None  # None: every namespace
    selector: Selector
    max_skew: int = 1
    min_domains: int | None = None
    honor_node_affinity: bool = True
    honor_taints: bool = False
    node_filter: NodeFilter | None = None  # spread: which nodes' pods count
    counts: dict[str, int] = field(default_factory=dict)
    owners: dict[str, int] = field(default_factory=dict)  # anti-affinity: owners' domains

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        in_namespace = self.namespaces is None or namespace in self.namespaces
        return in_namespace and self.selector.matches(labels)

    def counts_on(self, requirements: Requirements, taints: Sequence[Mapping[str, Any]]) -> bool:
        """Whether a matching pod on a node with these requirements (labels) and taints
        counts for the skew (always, unless the spread's node filter excludes the node)."""
        return self.node_filter is None or self.node_filter.admits(requirements, taints)

    @property
    def constraint(self) -> str:
        return _CONSTRAINT_NAME[self.kind]


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """The nodes whose pods a spread constraint counts, as kube-scheduler and Karpenter
    decide them: with nodeAffinityPolicy Honor, nodes compatible with the owner's
    nodeSelector and one of its required node-affinity terms (``terms``); with
    nodeTaintsPolicy Honor, nodes whose taints the owner tolerates (``tolerations``)."""

    terms: tuple[Requirements, ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] | None = None

    def admits(self, requirements: Requirements, taints: Sequence[Mapping[str, Any]]) -> bool:
        if self.terms and not any(requirements.is_compatible(term) for term in self.terms):
            return False
        return self.tolerations is None or untolerated(self.tolerations, taints, False) is None

    def identity(self) -> tuple:
        terms = tuple(repr(term.to_dicts()) for term in self.terms)
        return (terms, repr(self.tolerations))


@dataclass(slots=True)
class Rejection:
    constraint: str
    message: str
    permanent: bool  # cannot change while more pods of the same group are placed


class Topology:
    """All topology groups of one solve, with their domains and counts."""

    def __init__(
        self,
        domain_sources: Callable[[str], Mapping[str, Sequence[Sequence[Mapping[str, Any]]]]],
        nodes: Sequence[ExistingNode],
        new_nodes_possible: bool = True,
    ) -> None:
        # key -> domain -> taint lists of the pools/nodes offering that domain
        self._domain_sources = domain_sources
        self._nodes = nodes
        self._node_labels = [labels_requirements(node.labels) for node in nodes]
        # a new node is an empty hostname domain, so the hostname skew floor is 0
        self._new_nodes_possible = new_nodes_possible
        self._groups: dict[tuple, TopologyGroup] = {}
        self._universe: dict[str, Mapping[str, Sequence[Sequence[Mapping[str, Any]]]]] = {}
        self._eligible: dict[tuple, frozenset[str]] = {}
        self._selecting: dict[tuple, list[TopologyGroup]] = {}

    # --- building ----------------------------------------------------------------

    def group(
        self,
        kind: str,
        key: str,
        namespaces: frozenset[str] | None,
        selector: Selector,
        max_skew: int = 1,
        min_domains: int | None = None,
        honor_node_affinity: bool = True,
        honor_taints: bool = False,
        node_filter: NodeFilter | None = None,
    ) -> TopologyGroup:
        key = wk.normalize_key(key)
        identity = (
            kind,
            key,
            namespaces,
            selector.identity(),
            max_skew,
            min_domains,
            honor_node_affinity,
            honor_taints,
            node_filter.identity() if node_filter is not None else None,
        )
        found = self._groups.get(identity)
        if found is None:
            found = TopologyGroup(
                kind,
                key,
                namespaces,
                selector,
                max_skew,
                min_domains,
                honor_node_affinity,
                honor_taints,
                node_filter,
            )
            self._groups[identity] = found
            self._count_existing(found)
        return found

    def _count_existing(self, group: TopologyGroup) -> None:
        for node, labels in zip(self._nodes, self._node_labels, strict=True):
            domain = node_domain(node, group.key)
            if domain is None or not group.counts_on(labels, node.taints):
                continue
            for pod in node.pods:
                if group.selects(namespace_of(pod), labels_of(pod)):
                    group.counts[domain] = group.counts.get(domain, 0) + 1

    def record_owner(self, group: TopologyGroup, domains: Iterable[str], count: int) -> None:
        for domain in domains:
            group.owners[domain] = group.owners.get(domain, 0) + count

    # --- queries -------------------------------------------------------------------

    def selecting(self, namespace: str, labels: Mapping[str, str]) -> list[TopologyGroup]:
        """The groups whose selector matches a pod with these labels (cached: ask only
        once every group of the solve has been created)."""
        signature = (namespace, tuple(sorted(labels.items())))
        found = self._selecting.get(signature)
        if found is None:
            found = [g for g in self._groups.values() if g.selects(namespace, labels)]
            self._selecting[signature] = found
        return found

    def universe(self, key: str) -> Mapping[str, Sequence[Sequence[Mapping[str, Any]]]]:
        found = self._universe.get(key)
        if found is None:
            found = self._domain_sources(key)
            self._universe[key] = found
        return found

    def eligible(
        self,
        group: TopologyGroup,
        requirements: Requirements,
        signature: str,
        tolerations: Sequence[Mapping[str, Any]],
    ) -> frozenset[str]:
        """Domains counted for the skew of a pod with these requirements and tolerations:
        nodeAffinityPolicy Honor keeps the domains the pod's own requirement on the key
        allows; nodeTaintsPolicy Honor keeps domains offered by a pool or node whose
        taints the pod tolerates."""
        cache_key = (id(group), signature, id(tolerations))
        found = self._eligible.get(cache_key)
        if found is None:
            wanted = requirements.get(group.key)
            found = frozenset(
                domain
                for domain, sources in self.universe(group.key).items()
                if (not group.honor_node_affinity or wanted is None or wanted.has(domain))
                and (
                    not group.honor_taints
                    or any(untolerated(tolerations, taints, False) is None for taints in sources)
                )
            )
            self._eligible[cache_key] = found
        return found

    def allowed(
        self,
        group: TopologyGroup,
        candidates: Sequence[str],
        self_match: bool,
        eligible: frozenset[str],
    ) -> list[str] | Rejection:
        """The candidate domains a pod owning ``group`` may go to."""
        if group.kind == SPREAD:
            return self._allowed_spread(group, candidates, int(self_match), eligible)
        counts = group.counts
        if group.kind == AFFINITY:
            allowed = [d for d in candidates if counts.get(d, 0) > 0]
            if not allowed and self_match and not any(counts.values()):
                allowed = list(candidates)  # the first pod of a self-affine group
            if allowed:
                return allowed
            reason = msg.unsatisfiable_topology(POD_AFFINITY, group.key)
            return Rejection(POD_AFFINITY, msg.detailed(reason, "no matching pod"), False)
        allowed = [d for d in candidates if counts.get(d, 0) == 0]
        if allowed:
            return allowed
        reason = msg.unsatisfiable_topology(POD_ANTI_AFFINITY, group.key)
        return Rejection(
            POD_ANTI_AFFINITY,
            msg.detailed(reason, "a matching pod already runs in every domain"),
            group.key == wk.HOSTNAME,
        )

    def _allowed_spread(
        self,
        group: TopologyGroup,
        candidates: Sequence[str],
        step: int,
        eligible: frozenset[str],
    ) -> list[str] | Rejection:
        counts = group.counts
        hostname = group.key == wk.HOSTNAME
        if (hostname and self._new_nodes_possible) or (
            group.min_domains and len(eligible) < group.min_domains
        ):
            floor = 0
        else:
            floor = min((counts.get(d, 0) for d in eligible), default=0)
        allowed = [
            d
            for d in candidates
            if (hostname or d in eligible) and counts.get(d, 0) + step - floor <= group.max_skew
        ]
        if allowed:
            return allowed
        reason = msg.unsatisfiable_topology(TOPOLOGY_SPREAD, group.key)
        return Rejection(
            TOPOLOGY_SPREAD,
            msg.detailed(reason, f"maxSkew {group.max_skew} would be exceeded"),
            hostname and self._new_nodes_possible,
        )

    def blocked_by_owners(
        self, selecting_anti: Sequence[TopologyGroup], key: str, candidates: Sequence[str]
    ) -> list[str]:
        """Candidates not excluded by the anti-affinity of pods already placed."""
        groups = [g for g in selecting_anti if g.key == key]
        return [d for d in candidates if not any(g.owners.get(d) for g in groups)]

    def anti_affinity_keys(self, selecting_anti: Sequence[TopologyGroup]) -> set[str]:
        """Keys on which some placed pod's anti-affinity selects this pod."""
        return {g.key for g in selecting_anti if g.owners}

    def record(
        self,
        selecting: Sequence[TopologyGroup],
        domain_of: Callable[[str], list[str]],
        count: int,
        requirements: Requirements,
        taints: Sequence[Mapping[str, Any]],
    ) -> None:
        """Count ``count`` pods placed on a target whose possible domains per key are
        ``domain_of(key)`` and whose requirements (labels) and taints are these:
        anti-affinity in every possible domain (the pods may land in any of them); spread
        and affinity only where the domain is known, as Karpenter does (a pod on a
        NodeClaim whose domain is decided later is not counted), and for a spread only
        on the nodes its filter admits."""
        for group in selecting:
            domains = domain_of(group.key)
            if group.kind != ANTI_AFFINITY and len(domains) != 1:
                continue
            if not group.counts_on(requirements, taints):
                continue
            for domain in domains:
                group.counts[domain] = group.counts.get(domain, 0) + count


def node_domain(node: ExistingNode, key: str) -> str | None:
    if key == wk.HOSTNAME:
        return node.hostname
    return node.labels.get(key)
