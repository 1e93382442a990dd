"""What ``joiner top`` shows, independent of where it came from: a live cluster
(``joiner.top.snapshot``) or a simulation (``joiner.sim.table``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

STATIC_POOL = "(static)"  # a node no NodePool launched

# A line's status: a NodeClaim without a Node yet, a Node (ready or not), one being deleted.
LAUNCHING = "Launching"
READY = "Ready"
NOT_READY = "NotReady"
DELETING = "Deleting"


@dataclass(frozen=True)
class Usage:
    """Requests against allocatable, in cores (CPU) or bytes (memory); allocatable is 0
    while a node has not reported it."""

    requested: float = 0.0
    allocatable: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.requested + other.requested, self.allocatable + other.allocatable)

    @property
    def share(self) -> float | None:
        return self.requested / self.allocatable if self.allocatable else None


@dataclass(frozen=True)
class NodeLine:
    """One node, or one NodeClaim that has no node yet."""

    name: str
    pool: str  # STATIC_POOL for a node no NodePool launched
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price: float | None  # USD per hour; None when unknown
    status: str
    pods: int
    cpu: Usage
    memory: Usage


@dataclass(frozen=True)
class PoolTotal:
    """The sums over a pool's lines (or the whole cluster's). A launching NodeClaim is
    not a node yet, but its instance is paid for: it counts in the price only."""

    pool: str
    nodes: int
    pods: int
    price: float  # lines of unknown price count as free
    cpu: Usage
    memory: Usage


def total(pool: str, lines: Sequence[NodeLine]) -> PoolTotal:
    return PoolTotal(
        pool=pool,
        nodes=sum(1 for line in lines if line.status != LAUNCHING),
        pods=sum(line.pods for line in lines),
        price=sum(line.price for line in lines if line.price is not None),
        cpu=sum((line.cpu for line in lines), Usage()),
        memory=sum((line.memory for line in lines), Usage()),
    )


def pool_totals(lines: Sequence[NodeLine], pools: Iterable[str] = ()) -> list[PoolTotal]:
    """One total per pool of a line or in ``pools`` (a NodePool with no node yet), by
    name, static nodes last."""
    names = {line.pool for line in lines} | set(pools)
    pools = sorted(names, key=lambda pool: (pool == STATIC_POOL, pool))
    return [total(pool, [line for line in lines if line.pool == pool]) for pool in pools]
