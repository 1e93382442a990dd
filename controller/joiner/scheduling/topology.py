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
from joiner.api.requirements import Requirements
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
    counts: dict[str, int] = field(default_factory=dict)
    owners: dict[str, int] = field(default_factory=dict)  # anti-affinity: owners' domains

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        in_namespace = self.namespaces is None or namespace in self.namespaces
        return in_namespace and self.selector.matches(labels)

    @property
    def constraint(self) -> str:
        return _CONSTRAINT_NAME[self.kind]

    def describe(self) -> str:
        return f"{self.kind} on {self.key}"


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
            )
            self._groups[identity] = found
            self._count_existing(found)
        return found

    def _count_existing(self, group: TopologyGroup) -> None:
        for node in self._nodes:
            domain = node_domain(node, group.key)
            if domain is None:
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
        pending: int = 0,
    ) -> list[str] | Rejection:
        """The candidate domains a pod owning ``group`` may go to; ``pending`` matching
        pods already on the target land in the same domain."""
        if group.kind == SPREAD:
            return self._allowed_spread(group, candidates, int(self_match) + pending, eligible)
        counts = group.counts
        if group.kind == AFFINITY:
            allowed = [d for d in candidates if counts.get(d, 0) > 0]
            if not allowed and self_match and not any(counts.values()):
                allowed = list(candidates)  # the first pod of a self-affine group
            if allowed:
                return allowed
            return Rejection(POD_AFFINITY, f"no matching pod in this {group.key} domain", False)
        allowed = [d for d in candidates if counts.get(d, 0) == 0]
        if allowed:
            return allowed
        return Rejection(
            POD_ANTI_AFFINITY,
            f"a matching pod already runs in this {group.key} domain",
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
        return Rejection(
            TOPOLOGY_SPREAD,
            f"maxSkew {group.max_skew} on {group.key} would be exceeded",
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
        pending: dict[TopologyGroup, int] | None = None,
    ) -> None:
        """Count ``count`` pods placed on a target whose possible domains per key are
        ``domain_of(key)``: anti-affinity in every possible domain (the pod may land in any
        of them); spread and affinity where the domain is known, else in ``pending`` until
        the target is pinned to one domain (see ``settle``)."""
        for group in selecting:
            domains = domain_of(group.key)
            if group.kind != ANTI_AFFINITY and len(domains) != 1:
                if pending is not None:
                    pending[group] = pending.get(group, 0) + count
                continue
            for domain in domains:
                group.counts[domain] = group.counts.get(domain, 0) + count

    @staticmethod
    def settle(pending: dict[TopologyGroup, int], domain_of: Callable[[str], list[str]]) -> None:
        """Count the pending pods of every group whose key now has a single domain."""
        for group in [g for g in pending if len(domain_of(g.key)) == 1]:
            domain = domain_of(group.key)[0]
            group.counts[domain] = group.counts.get(domain, 0) + pending.pop(group)


def node_domain(node: ExistingNode, key: str) -> str | None:
    if key == wk.HOSTNAME:
        return node.hostname
    return node.labels.get(key)
