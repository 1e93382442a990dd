"""What the planner reads (the cluster) and what it returns (a plan of moves)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api.nodepool import NodePool
from joiner.cloudprovider.types import InstanceType
from joiner.scheduling.model import ClusterSnapshot, NodeClaimPlan, Pod

# Methods a plan's target comes from.
MILP = "milp"  # the optimizer's proposal, verified by the scheduler
GREEDY = "greedy"  # every movable pod placed again by the scheduler (its repack)
STAY = "stay"  # nothing moves: no target is cheaper than the cluster as it is


@dataclass
class Cluster:
    """The cluster as the planner sees it.

    ``snapshot.nodes`` are the current nodes with every pod bound there (their labels
    say pool, instance type, zone and capacity type); ``prices`` what each costs per
    hour; ``fixed`` the nodes not eligible for disruption (not managed, being deleted,
    do-not-disrupt on the node, ...), kept as they are; ``pdbs`` the
    PodDisruptionBudgets by ``namespace/name`` (their ``status.disruptionsAllowed``
    counts); ``pending`` the pods waiting for a node; ``nodepools`` and
    ``instance_types`` (pool name -> available types) what may be launched. ``now``
    (seconds since the epoch) ends do-not-disrupt durations."""

    snapshot: ClusterSnapshot
    prices: Mapping[str, float]
    nodepools: Sequence[NodePool]
    instance_types: Mapping[str, Sequence[InstanceType]]
    pending: Sequence[Pod] = ()
    fixed: frozenset[str] = frozenset()
    pdbs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    now: float = 0.0


@dataclass
class Move:
    """One step: launch ``launch``, and once they are ready drain ``drain``, evicting
    ``evicts`` (pod keys). ``saving`` is $/hour: the drained nodes' prices less the
    launched ones' (negative for a launch that only serves pending pods)."""

    launch: list[NodeClaimPlan]
    drain: list[str]
    evicts: list[str]
    saving: float

    def describe(self) -> str:
        launched = ", ".join(f"{c.nodepool}/{c.instance_types[0]}" for c in self.launch)
        steps = [f"launch {launched}"] if launched else []
        if self.drain:
            steps.append(f"drain {', '.join(self.drain)}")
        return f"{'; then '.join(steps)}: saves ${self.saving:.4f}/h, evicts {len(self.evicts)}"


@dataclass
class RebalancePlan:
    """From the cluster to its ``target``: the nodes ``kept`` and the NodeClaims to
        ``launch``, through ``moves`` (largest saving first). ``method`` says where the
        target comes from (``MILP``, ``GREEDY`` or ``STAY``), ``pinned`` which nodes stay
        and why, ``notes`` what the scheduler found wrong with the optimizer's proposal, and
    ``considered`` what each valid target would cost and evict."""

    method: str
    current_cost: float
    target_cost: float
    kept: list[str]
    launch: list[NodeClaimPlan]
    moves: list[Move]
    pinned: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # every valid target, by method: ($/hour, pods evicted)
    considered: dict[str, tuple[float, int]] = field(default_factory=dict)

    @property
    def saving(self) -> float:
        return self.current_cost - self.target_cost

    @property
    def evictions(self) -> int:
        return sum(len(move.evicts) for move in self.moves)
