"""The CapacityBuffers of a NodePool, for ``joiner explain nodepool``: each buffer with
chunks held on the pool's nodes, or with chunks nothing holds that the pool could launch
for (the solver, asked to launch for one chunk with the pool alone, refuses it for no
taint or requirement of the pool). Held is where the controller's own placement puts
the chunks now (``Buffers.placement``); the Provisioning condition is the one the
controller wrote.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from joiner.api.capacitybuffer import KIND as CAPACITY_BUFFER
from joiner.api.conditions import get_condition
from joiner.api.nodepool import NodePool
from joiner.api.sparecapacity import SPARE_ANNOTATION
from joiner.buffers.chunks import buffer_of
from joiner.buffers.controller import PROVISIONING
from joiner.buffers.holding import Placement
from joiner.buffers.pools import pool_of
from joiner.buffers.resolution import Resolved, Unresolved
from joiner.explain.cluster import Cluster
from joiner.scheduling import model as m
from joiner.scheduling.solver import solve

# The constraints under which a chunk is not the pool's to launch for.
_NOT_THE_POOLS = (m.TAINTS, m.NODE_AFFINITY)


@dataclass
class Provisioning:
    """A buffer's Provisioning condition as its status holds it."""

    status: str
    reason: str
    message: str

    def describe(self) -> str:
        return f"Provisioning {self.status} {self.reason}: {self.message}"


@dataclass
class BufferNow:
    buffer: str  # namespace/name
    wanted: int  # the chunks it resolved to
    held: int  # held by the cluster's nodes
    held_here: int  # of those, on the pool's nodes
    provisioning: Provisioning | None  # None: the controller has not written it yet
    # A NodePool's joiner.sh/spare-capacity: what it expanded to (it has no status).
    expansion: str | None = None

    def describe(self) -> str:
        condition = self.provisioning.describe() if self.provisioning else "Provisioning: unset"
        if self.expansion is not None:
            condition = self.expansion
        return (
            f"{self.buffer}: {self.wanted} / {self.held} ({self.held_here} on this pool's "
            f"nodes); {condition}"
        )


def pool_buffers(cluster: Cluster, pool: NodePool) -> list[BufferNow]:
    placement = cluster.buffers.placement()
    nodes = {sn.name for sn in cluster.state.state_nodes() if sn.nodepool == pool.name}
    found = []
    for key, resolution in sorted(cluster.buffers.resolutions.items()):
        shorthand_of = pool_of(key)
        if shorthand_of is not None:
            if shorthand_of == pool.name:
                found.append(_shorthand(resolution, placement, nodes))
            continue
        if not isinstance(resolution, Resolved):
            continue
        here = _held_on(placement, key, nodes)
        unheld = [chunk for chunk in placement.unheld if buffer_of(chunk) == key]
        if here or (unheld and _launches_for(cluster, pool, unheld[0])):
            found.append(
                BufferNow(
                    key, resolution.replicas, placement.held(key), here, _condition(cluster, key)
                )
            )
    return found


def _shorthand(
    resolution: Resolved | Unresolved, placement: Placement, nodes: set[str]
) -> BufferNow:
    """The pool's own ``joiner.sh/spare-capacity`` and what it expanded to."""
    key = resolution.buffer.key
    if isinstance(resolution, Unresolved):
        expansion = f"{SPARE_ANNOTATION}: {resolution.reason}: {resolution.message}"
        return BufferNow(key, 0, 0, 0, None, expansion)
    requests = resolution.template["spec"]["containers"][0]["resources"]["requests"]
    shape = ", ".join(f"{name}={value}" for name, value in requests.items())
    expansion = f"{SPARE_ANNOTATION}: {resolution.replicas} chunk(s) of {shape}"
    held = placement.held(key)
    return BufferNow(
        key, resolution.replicas, held, _held_on(placement, key, nodes), None, expansion
    )


def _held_on(placement: Placement, key: str, nodes: set[str]) -> int:
    return sum(
        1
        for node, chunks in placement.by_node.items()
        if node in nodes
        for chunk in chunks
        if buffer_of(chunk) == key
    )


def _launches_for(cluster: Cluster, pool: NodePool, chunk: m.Pod) -> bool:
    if pool.is_static:  # a static pool launches nothing for chunks
        return False
    types = {pool.name: cluster.instance_types(pool)}
    # No node: a chunk that fits on another pool's node says nothing of this pool.
    launching_only = dataclasses.replace(cluster.state.snapshot(), nodes=[])
    plan = solve([chunk], [pool], types, launching_only)
    refused = plan.unplaceable.get(m.pod_key(chunk))
    return refused is None or refused.constraint not in _NOT_THE_POOLS


def _condition(cluster: Cluster, key: str) -> Provisioning | None:
    raw = cluster.state.objects[CAPACITY_BUFFER][key]
    found = get_condition((raw.get("status") or {}).get("conditions"), PROVISIONING)
    if found is None:
        return None
    return Provisioning(found.get("status", ""), found.get("reason", ""), found.get("message", ""))
