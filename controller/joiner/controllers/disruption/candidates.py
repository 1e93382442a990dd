"""Disruption candidates [DISR-3] and their cost [DISR-8].

A candidate is a managed, initialized node that is not being deleted, has not
been nominated for pods recently, carries no do-not-disrupt (on the node, or on
an active pod within its duration), and whose pods no PDB stops from leaving.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.duration import DurationError, parse_duration
from joiner.api.nodepool import NodePool
from joiner.clock import from_rfc3339
from joiner.identity import IdentityCache
from joiner.kube.selectors import selector_from_label_selector
from joiner.state.cluster import ClusterState
from joiner.state.node import StateNode

EVICTION_COST_CLAMP = 10.0
INT32_PATTERN = re.compile(r"[+-]?[0-9]+")


@dataclass
class Candidate:
    node: StateNode
    pool: NodePool
    instance_type: str
    capacity_type: str
    zone: str
    price: float
    pods: list[dict[str, Any]] = field(default_factory=list)  # reschedulable pods
    disruption_cost: float = 0.0

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def nodeclaim(self) -> str:
        assert self.node.nodeclaim is not None
        return self.node.nodeclaim.name

    @property
    def drifted(self) -> bool:
        claim = self.node.nodeclaim
        return claim is not None and claim.condition_true(nc.DRIFTED)


def eviction_cost(pod: dict[str, Any], *, deletion_cost_managed: bool) -> float:
    """1 + the pod's cost / 2^27 + priority / 2^25, clamped to [-10, 10], as upstream's.
    The cost is ``karpenter.sh/disruption-cost`` (an int32; a malformed one counts as 0);
    without it, ``controller.kubernetes.io/pod-deletion-cost``, unless Joiner writes that
    annotation itself (``deletion_cost_managed``): its own ranks would otherwise steer the
    order they were ranked by [PDC-6]."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if wk.DISRUPTION_COST in annotations:
        cost = _int32(annotations[wk.DISRUPTION_COST])
    elif not deletion_cost_managed:
        try:
            cost = float(annotations.get(wk.POD_DELETION_COST, 0))
        except ValueError:
            cost = 0.0
    else:
        cost = 0.0
    priority = float((pod.get("spec") or {}).get("priority") or 0)
    total = 1.0 + cost / 2**27 + priority / 2**25
    return max(-EVICTION_COST_CLAMP, min(EVICTION_COST_CLAMP, total))


def _int32(text: str) -> int:
    """A base-10 int32 as Go's ParseInt reads it (sign allowed, nothing else), else 0."""
    if not INT32_PATTERN.fullmatch(text):
        return 0
    value = int(text)
    return value if -(2**31) <= value < 2**31 else 0


def lifetime_remaining(node: StateNode, now: float) -> float:
    """The fraction of expireAfter still ahead of the node (1 when it never expires)."""
    claim = node.nodeclaim
    if claim is None:
        return 1.0
    expire = parse_duration(claim.expire_after)
    created = claim.metadata.get("creationTimestamp")
    if expire is None or not created or expire <= 0:
        return 1.0
    return max(0.0, min(1.0, 1.0 - (now - from_rfc3339(created)) / expire))


def do_not_disrupt_until(obj: dict[str, Any], started: float | None) -> float | None:
    """Until when the annotation protects the object: inf for "true", start + duration for a
    duration; None when absent or unparsable [API-2]."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(wk.DO_NOT_DISRUPT)
    if value is None:
        return None
    if value == "true":
        return float("inf")
    try:
        seconds = parse_duration(value)
    except DurationError:
        return None
    if seconds is None or started is None:
        return float("inf") if seconds is None else None
    return started + seconds


def pod_started(pod: dict[str, Any]) -> float | None:
    started = (pod.get("status") or {}).get("startTime") or (pod.get("metadata") or {}).get(
        "creationTimestamp"
    )
    return from_rfc3339(started) if started else None


def blocked_by(
    state: ClusterState, node: StateNode, pods: list[dict[str, Any]], now: float
) -> str | None:
    """Why this node may not be disrupted voluntarily, or None."""
    return _blocked(node, _annotated(pods), _blocking_pdb(state, pods), now)


def _blocked(
    node: StateNode, annotated: list[dict[str, Any]], pdb: str | None, now: float
) -> str | None:
    """``blocked_by`` from the node, its pods carrying do-not-disrupt, and the PDB that
    stops its pods from leaving (the first by key), if any."""
    if node.node is not None:
        until = do_not_disrupt_until(node.node, None)
        if until is not None and until > now:
            return f"do-not-disrupt on node {node.name}"
    for pod in annotated:
        until = do_not_disrupt_until(pod, pod_started(pod))
        if until is not None and until > now:
            meta = pod["metadata"]
            return f"do-not-disrupt pod {meta.get('namespace')}/{meta['name']}"
    if pdb is not None:
        return f"pdb {pdb} allows no disruption"
    return None


def _annotated(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        p for p in pods if wk.DO_NOT_DISRUPT in ((p.get("metadata") or {}).get("annotations") or {})
    ]


@dataclass(frozen=True)
class _PodFacts:
    """What a node's pods say about disrupting it, apart from the time."""

    annotated: list[dict[str, Any]]  # pods carrying do-not-disrupt
    pdb: str | None
    reschedulable: list[dict[str, Any]]
    eviction_cost: float  # summed over the reschedulable pods


# By the node's pods and the PDBs: passes run every 10 seconds, and a node's pods stay the
# same objects until they change while other nodes' pods do.
_facts: IdentityCache[_PodFacts] = IdentityCache(20_000)


def _pod_facts(state: ClusterState, node_name: str) -> _PodFacts:
    pods = state.pods_on(node_name)
    pdbs = state.objects["PodDisruptionBudget"]

    managed = state.deletion_cost_managed

    def compute() -> _PodFacts:
        reschedulable = state.reschedulable_pods([node_name])
        return _PodFacts(
            annotated=_annotated(pods),
            pdb=_blocking_pdb(state, pods),
            reschedulable=reschedulable,
            eviction_cost=sum(
                eviction_cost(p, deletion_cost_managed=managed) for p in reschedulable
            ),
        )

    return _facts.remember(
        (*pods, *pdbs.values()), compute, key=(len(pods), managed), slot=(node_name, managed)
    )


def _blocking_pdb(state: ClusterState, pods: list[dict[str, Any]]) -> str | None:
    for key, pdb in state.objects["PodDisruptionBudget"].items():
        if ((pdb.get("status") or {}).get("disruptionsAllowed", 1)) > 0:
            continue
        selector = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
        namespace = pdb["metadata"].get("namespace")
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("namespace") == namespace and selector.matches(meta.get("labels") or {}):
                return key
    return None


def build_candidates(
    state: ClusterState, prices: dict[str, float], now: float
) -> tuple[list[Candidate], dict[str, str]]:
    """Candidates sorted by disruption cost (cheapest to disrupt first), and why the other
    managed nodes are not candidates (node name -> reason)."""
    candidates: list[Candidate] = []
    skipped: dict[str, str] = {}
    for node in state.managed_nodes():
        if not _eligible(state, node):
            continue  # starting, already going, or just chosen for pods: nothing to explain
        facts = _pod_facts(state, node.name)
        why = _blocked(node, facts.annotated, facts.pdb, now)
        if why is not None:
            skipped[node.name] = why
            continue
        candidates.append(_candidate(state, node, facts, prices, now))
    candidates.sort(key=lambda c: (c.disruption_cost, c.name))
    return candidates, skipped


def _eligible(state: ClusterState, node: StateNode) -> bool:
    """Initialized, not being deleted or disrupted, not nominated for pending pods, and
    its pool still exists."""
    return (
        node.initialized
        and not state.leaving(node)
        and not state.recently_nominated(node.name)
        and node.nodepool in state.nodepools
    )


def _candidate(
    state: ClusterState,
    node: StateNode,
    facts: _PodFacts,
    prices: dict[str, float],
    now: float,
) -> Candidate:
    labels = node.labels
    cost = facts.eviction_cost * lifetime_remaining(node, now)
    return Candidate(
        node=node,
        pool=state.nodepools[node.nodepool or ""],
        instance_type=labels.get(wk.INSTANCE_TYPE, ""),
        capacity_type=labels.get(wk.CAPACITY_TYPE, ""),
        zone=labels.get(wk.ZONE, ""),
        price=prices.get(node.name, 0.0),
        pods=list(facts.reschedulable),
        disruption_cost=cost,
    )
