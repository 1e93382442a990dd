"""Where the buffers' chunks are held, and the capacity launched for those that are not.

``Buffers`` keeps each buffer's resolution and its chunks. The chunks are placed on the
cluster's nodes (in-flight NodeClaims included) after the real pods, whose requests
already count there, one buffer after the other, the oldest first (a new buffer never
takes the room an older one holds): ``placement`` says which node holds which chunk and
which chunks nothing holds. Consolidation reads the same placement, so a node holding
chunks is not empty and goes only if its chunks fit elsewhere
(``joiner.controllers.disruption``); the provisioner places the buffers' chunks after
the pending pods (``plan_chunks``) and launches NodeClaims for those with no room,
within the NodePools' limits. Real pods always come first: kube-scheduler never sees a
chunk, and in a plan the chunks only get what the pending pods leave.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool
from joiner.buffers.chunks import buffer_of, chunk_pods
from joiner.buffers.resolution import Resolved, Unresolved
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling.model import (
    ClusterSnapshot,
    ExistingNode,
    NodeClaimPlan,
    Plan,
    Pod,
    Unplaceable,
    pod_key,
)
from joiner.scheduling.solver import solve
from joiner.state.cluster import ClusterState

# How long a NodeClaim launched for chunks is awaited in the state before the chunks
# may ask for capacity again (its watch event normally comes within a second).
AWAIT_LAUNCHED = 30.0
NO_CHUNKS: tuple[Pod, ...] = ()

Chunks = tuple[Pod, ...]  # one buffer's


@dataclass(frozen=True)
class Placement:
    """Which node holds which chunks, and the chunks nothing holds."""

    by_node: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)
    unheld: tuple[Pod, ...] = ()

    def held(self, buffer: str) -> int:
        return sum(1 for pods in self.by_node.values() for p in pods if buffer_of(p) == buffer)


class Buffers:
    """The buffers' resolutions and chunks, and where the chunks are held."""

    def __init__(self, state: ClusterState, changed: Callable[[], None] = lambda: None) -> None:
        self.state = state
        self.changed = changed  # what a provisioning pass found differs: statuses to write
        self.resolutions: dict[str, Resolved | Unresolved] = {}
        self.version = 0  # bumps when the chunks change
        self._groups: tuple[Chunks, ...] = ()  # each buffer's chunks, the oldest first
        self._placement: tuple[tuple, Placement] = ((), Placement())
        # Why the chunks the last provisioning pass could not place were left (chunk key).
        self.unplaceable: dict[str, Unplaceable] = {}
        self._launched: dict[str, float] = {}  # NodeClaim name -> when it was created

    # --- resolutions ---------------------------------------------------------------

    def set(self, key: str, resolution: Resolved | Unresolved | None) -> bool:
        """Record a buffer's resolution (None: the buffer is gone); True when its chunks
        changed."""
        before = self.resolutions.get(key)
        if resolution is None:
            self.resolutions.pop(key, None)
        else:
            self.resolutions[key] = resolution
        if _chunks_of(before) == _chunks_of(resolution):
            return False
        oldest_first = sorted(self.resolutions.values(), key=lambda r: _age_order(r))
        groups = (_chunks_of(r) for r in oldest_first)
        self._groups = tuple(group for group in groups if group)
        self.version += 1
        return True

    def groups(self) -> tuple[Chunks, ...]:
        """Each buffer's chunks, the oldest buffer first."""
        return self._groups

    # --- where they are held ---------------------------------------------------------

    def placement(self) -> Placement:
        """The chunks on the nodes that can take pods, after the real pods bound there;
        worked out again only when the state or the chunks changed."""
        if not self._groups:
            return Placement()
        marked = frozenset(self.state.marked_for_deletion)
        basis = (self.state.generation, marked, self.version)
        if self._placement[0] != basis:
            snapshot = self.state.snapshot(exclude=marked)
            self._placement = (basis, place(self._groups, snapshot))
        return self._placement[1]

    def waiting(self) -> int:
        """Chunks nothing holds that a provisioning pass may still find room for (not
        those the last pass could not place)."""
        return sum(1 for p in self.placement().unheld if pod_key(p) not in self.unplaceable)

    def held_on(self, node_name: str) -> tuple[Pod, ...]:
        return self.placement().by_node.get(node_name, NO_CHUNKS)

    def with_held(self, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        """``snapshot`` with the chunks each node holds counted as its pods (copies of the
        nodes: the state's are shared)."""
        return with_pods(snapshot, self.placement().by_node)

    # --- launching for the rest ------------------------------------------------------

    def planned(
        self, unplaceable: Mapping[str, Unplaceable], launched: Sequence[str], now: float
    ) -> None:
        """A provisioning pass's outcome for the chunks: the NodeClaims it created for
        them, and why it could place none for the others."""
        self._launched.update((name, now) for name in launched)
        if launched or dict(unplaceable) != self.unplaceable:
            self.unplaceable = dict(unplaceable)
            self.changed()

    def awaiting_launch(self, now: float) -> bool:
        """True while a NodeClaim launched for chunks is not in the state yet."""
        self._launched = {
            name: at
            for name, at in self._launched.items()
            if name not in self.state.nodeclaims and now - at < AWAIT_LAUNCHED
        }
        return bool(self._launched)


def _chunks_of(resolution: Resolved | Unresolved | None) -> Chunks:
    return tuple(chunk_pods(resolution)) if isinstance(resolution, Resolved) else ()


def _age_order(resolution: Resolved | Unresolved) -> tuple[str, str]:
    return (resolution.buffer.created, resolution.buffer.key)


def place(groups: Sequence[Chunks], snapshot: ClusterSnapshot) -> Placement:
    """Each buffer's chunks, the oldest buffer first, on what the snapshot's nodes have
    left (no NodePool launches anything here)."""
    plan = _in_order(groups, snapshot, [], {})
    by_key = {pod_key(p): p for chunks in groups for p in chunks}
    by_node: dict[str, list[Pod]] = {}
    for key, node in plan.existing.items():
        by_node.setdefault(node, []).append(by_key[key])
    unheld = tuple(p for key, p in by_key.items() if key not in plan.existing)
    return Placement({node: tuple(pods) for node, pods in by_node.items()}, unheld)


def plan_chunks(
    groups: Sequence[Chunks],
    pending: Plan,
    pods: Mapping[str, Pod],
    snapshot: ClusterSnapshot,
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
) -> Plan:
    """Where the buffers' chunks go once the pending pods have their places (``pending``,
    for ``pods`` by key): on what the existing nodes and the pending pods' new NodeClaims
    have left, else on NodeClaims of their own."""
    placed: dict[str, list[Pod]] = {}
    for key, node in pending.existing.items():
        placed.setdefault(node, []).append(pods[key])
    snapshot = _launching(with_pods(snapshot, placed), pending.nodeclaims, pods, instance_types)
    return _in_order(groups, snapshot, nodepools, instance_types)


def _in_order(
    groups: Sequence[Chunks],
    snapshot: ClusterSnapshot,
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
) -> Plan:
    """One buffer after the other, each on what the ones before left."""
    combined = Plan()
    for chunks in groups:
        plan = solve(chunks, nodepools, instance_types, snapshot)
        by_key = {pod_key(p): p for p in chunks}
        placed: dict[str, list[Pod]] = {}
        for key, node in plan.existing.items():
            placed.setdefault(node, []).append(by_key[key])
        snapshot = _launching(with_pods(snapshot, placed), plan.nodeclaims, by_key, instance_types)
        combined.existing.update(plan.existing)
        combined.nodeclaims.extend(plan.nodeclaims)
        combined.unplaceable.update(plan.unplaceable)
    return combined


def with_pods(snapshot: ClusterSnapshot, by_node: Mapping[str, Sequence[Pod]]) -> ClusterSnapshot:
    """``snapshot`` with more pods on some nodes (copies of those nodes: the state's
    snapshot nodes are shared)."""
    if not by_node:
        return snapshot
    nodes = [
        dataclasses.replace(node, pods=[*node.pods, *by_node[node.name]])
        if node.name in by_node
        else node
        for node in snapshot.nodes
    ]
    return dataclasses.replace(snapshot, nodes=nodes)


def _launching(
    snapshot: ClusterSnapshot,
    claims: Sequence[NodeClaimPlan],
    pods: Mapping[str, Pod],
    instance_types: Mapping[str, Sequence[InstanceType]],
) -> ClusterSnapshot:
    """``snapshot`` with the NodeClaims being created as the nodes they will be, their
    capacity counted against their pools' limits."""
    nodes = [node for claim in claims if (node := _node_of(claim, pods, instance_types))]
    if not nodes:
        return snapshot
    usage = {pool: dict(used) for pool, used in (snapshot.pool_usage or {}).items()}
    if snapshot.pool_usage is None:
        usage = {}
        for node in snapshot.nodes:
            _count(usage, node)
    for node in nodes:
        _count(usage, node)
    return dataclasses.replace(snapshot, nodes=[*snapshot.nodes, *nodes], pool_usage=usage)


def _count(usage: dict[str, res.ResourceList], node: ExistingNode) -> None:
    pool = node.nodepool
    if pool is not None:
        used = res.add(node.capacity or node.allocatable, {res.NODES: 1000})
        usage[pool] = res.add(usage.get(pool, {}), used)


def _node_of(
    claim: NodeClaimPlan,
    pods: Mapping[str, Pod],
    instance_types: Mapping[str, Sequence[InstanceType]],
) -> ExistingNode | None:
    """A NodeClaim being created, as the node it will be: its cheapest candidate type
    (the one the cloud launches when it has it), still starting."""
    by_name = {it.name: it for it in instance_types.get(claim.nodepool, ())}
    cheapest = by_name.get(claim.instance_types[0]) if claim.instance_types else None
    if cheapest is None:
        return None
    labels = {
        **claim.labels,
        wk.NODEPOOL: claim.nodepool,
        wk.INSTANCE_TYPE: cheapest.name,
        wk.HOSTNAME: claim.hostname,
    }
    return ExistingNode(
        name=claim.hostname,
        labels=labels,
        allocatable=cheapest.allocatable,
        taints=list(claim.taints),
        pods=[pods[key] for key in claim.pods],
        initialized=False,
        startup_taints=list(claim.startup_taints),
        capacity=dict(cheapest.capacity),
    )
