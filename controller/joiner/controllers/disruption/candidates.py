"""Disruption candidates [DISR-3] and their cost [DISR-8].

A candidate is a managed, initialized node that is not being deleted, has not
been nominated for pods recently, carries no do-not-disrupt (on the node, or on
an active pod within its duration), and whose pods no PDB stops from leaving.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
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
    created = claim.metadata.get("creationTimestamp")
    return _fraction_left(
        parse_duration(claim.expire_after), from_rfc3339(created) if created else None, now
    )


def _fraction_left(expire: float | None, created: float | None, now: float) -> float:
    if expire is None or created is None or expire <= 0:
        return 1.0
    return max(0.0, min(1.0, 1.0 - (now - created) / expire))


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
    node_until = do_not_disrupt_until(node.node, None) if node.node is not None else None
    return blocked_reason(
        node.name,
        node_until,
        annotated_pods(pods),
        blocking_pdb(state.objects["PodDisruptionBudget"], pods),
        now,
    )


def blocked_reason(
    name: str,
    node_until: float | None,
    annotated: list[dict[str, Any]],
    pdb: str | None,
    now: float,
) -> str | None:
    """Why a node may not be disrupted voluntarily (``blocked_by``), from until when the
    node's do-not-disrupt protects it, its pods carrying do-not-disrupt, and the PDB that
    stops its pods from leaving (the first by key), if any."""
    if node_until is not None and node_until > now:
        return f"do-not-disrupt on node {name}"
    for pod in annotated:
        until = do_not_disrupt_until(pod, pod_started(pod))
        if until is not None and until > now:
            meta = pod["metadata"]
            return f"do-not-disrupt pod {meta.get('namespace')}/{meta['name']}"
    if pdb is not None:
        return f"pdb {pdb} allows no disruption"
    return None


def annotated_pods(pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
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


# By the node's pods (one tuple, the same object while they are) and the PDBs: passes run
# every 10 seconds, and a node's pods stay the same while other nodes' pods change.
_facts: IdentityCache[_PodFacts] = IdentityCache(20_000)


def _pod_facts(state: ClusterState, node_name: str) -> _PodFacts:
    pods = state.bound_pods(node_name)
    pdbs = state.objects["PodDisruptionBudget"]

    managed = state.deletion_cost_managed

    def compute() -> _PodFacts:
        reschedulable = state.reschedulable_pods([node_name])
        return _PodFacts(
            annotated=annotated_pods(pods),
            pdb=blocking_pdb(state.objects["PodDisruptionBudget"], pods),
            reschedulable=reschedulable,
            eviction_cost=sum(
                eviction_cost(p, deletion_cost_managed=managed) for p in reschedulable
            ),
        )

    return _facts.remember((pods, *pdbs.values()), compute, key=managed, slot=(node_name, managed))


def blocking_pdb(
    pdbs: Mapping[str, Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]
) -> str | None:
    """The key of the first PDB (by ``pdbs`` order) that allows no disruption and selects
    one of ``pods``, or None."""
    for key, pdb in pdbs.items():
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
    candidates, skipped, _ = candidates_until(state, prices, now)
    return candidates, skipped


def candidates_until(
    state: ClusterState, prices: dict[str, float], now: float
) -> tuple[list[Candidate], dict[str, str], float]:
    """``build_candidates``, and the time until which its answer holds while the state and
    its nominations stay the same: the first nomination or do-not-disrupt duration to run
    out, or ``now`` when a candidate's cost moves with time (a finite expireAfter)."""
    candidates: list[Candidate] = []
    skipped: dict[str, str] = {}
    until = math.inf
    for node in state.managed_nodes():
        machine = _machine_facts(node)
        nominated = state.nominated_until(machine.name)
        if nominated > now:
            until = min(until, nominated)
        if not _eligible(state, machine):
            continue  # starting, already going, or just chosen for pods: nothing to explain
        facts = _pod_facts(state, machine.name)
        why = blocked_reason(machine.name, machine.protected_until, facts.annotated, facts.pdb, now)
        until = min(until, _protection_ends(machine, facts, now))
        if why is not None:
            skipped[machine.name] = why
            continue
        if machine.expire_after is not None:
            until = now
        candidates.append(_candidate(state, node, machine, facts, prices, now))
    candidates.sort(key=lambda c: (c.disruption_cost, c.name))
    return candidates, skipped, until


def _protection_ends(machine: _MachineFacts, facts: _PodFacts, now: float) -> float:
    """The first do-not-disrupt duration, of the node or its pods, to end after ``now``."""
    ends = [machine.protected_until] + [
        do_not_disrupt_until(pod, pod_started(pod)) for pod in facts.annotated
    ]
    return min((end for end in ends if end is not None and end > now), default=math.inf)


@dataclass(frozen=True)
class _MachineFacts:
    """What a node's Node and NodeClaim say about disrupting it, apart from the time."""

    name: str
    claim: str | None
    initialized: bool
    deleting: bool
    nodepool: str | None
    instance_type: str
    capacity_type: str
    zone: str
    protected_until: float | None  # do-not-disrupt on the Node
    expire_after: float | None
    created: float | None


# By the StateNode object: the state hands out the same ones until a Node or NodeClaim
# changes, and every pass asks about every node.
_machines: IdentityCache[_MachineFacts] = IdentityCache(20_000)


def _machine_facts(node: StateNode) -> _MachineFacts:
    def compute() -> _MachineFacts:
        claim = node.nodeclaim
        labels = node.labels
        created = claim.metadata.get("creationTimestamp") if claim is not None else None
        return _MachineFacts(
            name=node.name,
            claim=claim.name if claim is not None else None,
            initialized=node.initialized,
            deleting=node.deleting,
            nodepool=node.nodepool,
            instance_type=labels.get(wk.INSTANCE_TYPE, ""),
            capacity_type=labels.get(wk.CAPACITY_TYPE, ""),
            zone=labels.get(wk.ZONE, ""),
            protected_until=do_not_disrupt_until(node.node, None) if node.node else None,
            expire_after=parse_duration(claim.expire_after) if claim is not None else None,
            created=from_rfc3339(created) if created else None,
        )

    return _machines.remember((node,), compute, slot=node.name)


def _eligible(state: ClusterState, machine: _MachineFacts) -> bool:
    """Initialized, not being deleted or disrupted, not nominated for pending pods, and
    its pool still exists (``ClusterState.leaving`` from the remembered facts)."""
    marked = state.marked_for_deletion
    return (
        machine.initialized
        and not machine.deleting
        and machine.name not in marked
        and machine.claim not in marked
        and not state.recently_nominated(machine.name)
        and machine.nodepool in state.nodepools
    )


def _remaining(machine: _MachineFacts, now: float) -> float:
    """``lifetime_remaining`` from the remembered facts."""
    return _fraction_left(machine.expire_after, machine.created, now)


# The candidate made last time for a node, by what it was made from: reused while all
# of it is the same (candidates are never changed once made).
_made: IdentityCache[Candidate] = IdentityCache(20_000)


def _candidate(
    state: ClusterState,
    node: StateNode,
    machine: _MachineFacts,
    facts: _PodFacts,
    prices: dict[str, float],
    now: float,
) -> Candidate:
    pool = state.nodepools[machine.nodepool or ""]
    price = prices.get(machine.name, 0.0)
    cost = facts.eviction_cost * _remaining(machine, now)
    return _made.remember(
        (node, pool, facts),
        lambda: Candidate(
            node=node,
            pool=pool,
            instance_type=machine.instance_type,
            capacity_type=machine.capacity_type,
            zone=machine.zone,
            price=price,
            pods=list(facts.reschedulable),
            disruption_cost=cost,
        ),
        key=(price, cost),
        slot=machine.name,
    )
