"""The planner: candidate targets, judged by the scheduler, the cheapest taken.

Three targets compete: ``STAY`` (nothing moves; pending pods get what the scheduler
launches for them), ``GREEDY`` (every movable pod placed again by the scheduler on the
pinned nodes and new ones: its bin packing and repack) and ``MILP`` (the packing
model's proposal: which nodes to keep). The proposal counts room in aggregate and knows
no affinity, spread, taint or volume rule, so ``solve`` places every pod that moves on
the nodes it keeps plus whatever new nodes it needs: a pod it cannot place refuses the
proposal, and new nodes beyond what the optimizer counted are noted and priced in. When
the proposal is refused or the optimizer runs out of time, the greedy target stands
in. Of the valid targets the cheapest wins, then the one evicting fewer pods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from joiner.cloudprovider.types import InstanceType
from joiner.controllers.disruption.candidates import annotated_pods, blocked_reason, blocking_pdb
from joiner.rebalance import packing
from joiner.rebalance.model import GREEDY, MILP, STAY, Cluster, RebalancePlan
from joiner.rebalance.moves import ordered_moves
from joiner.scheduling.catalog import Dimensions, pool_catalog
from joiner.scheduling.model import ClusterSnapshot, ExistingNode, Plan, Pod, pod_key
from joiner.scheduling.pods import pod_requests
from joiner.scheduling.solver import solve
from joiner.state.cluster import is_reschedulable

DEFAULT_TIME_LIMIT = 1.0  # seconds the optimizer may take
# The optimizer decides keep-or-drain for this many nodes, the least utilized; it keeps
# the others (their free room still takes pods). Each is a binary variable: a few
# hundred already take HiGHS past a second.
MAX_DRAIN_CANDIDATES = 100
# A verified plan may cost this much ($/hour) more than the optimizer counted: rounding.
PRICE_TOLERANCE = 1e-9


@dataclass
class _Target:
    method: str
    drained: list[str]
    placement: Plan  # where the moving and pending pods go
    cost: float
    evictions: int


def plan(cluster: Cluster, time_limit: float = DEFAULT_TIME_LIMIT) -> RebalancePlan:
    """The cheapest verified target for ``cluster`` and the moves to it. ``time_limit``
    bounds the optimizer; the scheduler's passes come on top."""
    cluster, stranded = _placeable_pending(cluster)
    nodes = cluster.snapshot.nodes
    pinned = _pinned(cluster)
    movable = {
        n.name: [p for p in n.pods if is_reschedulable(p)] for n in nodes if n.name not in pinned
    }
    targets = [_stay(cluster), _greedy(cluster, movable)]
    proposal, refused = _propose(cluster, movable, time_limit)
    if proposal is not None:
        verified, refused = _verify(cluster, movable, proposal)
        targets.append(verified)
    valid = [t for t in targets if t is not None]  # stay always is
    order = {STAY: 0, MILP: 1, GREEDY: 2}  # at equal cost and churn, the least change
    best = min(valid, key=lambda t: (round(t.cost, 9), t.evictions, order[t.method]))
    evicted = {name: [pod_key(p) for p in movable[name]] for name in best.drained}
    return RebalancePlan(
        method=best.method,
        current_cost=sum(cluster.prices[n.name] for n in nodes),
        target_cost=best.cost,
        kept=[n.name for n in nodes if n.name not in set(best.drained)],
        launch=list(best.placement.nodeclaims),
        moves=ordered_moves(best.drained, best.placement.nodeclaims, evicted, cluster.prices),
        pinned=pinned,
        notes=stranded + ([f"milp: {refused}"] if refused else []),
        considered={t.method: (t.cost, t.evictions) for t in valid},
    )


def _placeable_pending(cluster: Cluster) -> tuple[Cluster, list[str]]:
    """The cluster without the pending pods the scheduler cannot place as it is (no
    target moves them), and a note naming them."""
    placement = _place(cluster, list(cluster.pending), cluster.snapshot.nodes)
    if not placement.unplaceable:
        return cluster, []
    placeable = [p for p in cluster.pending if pod_key(p) not in placement.unplaceable]
    keys = ", ".join(sorted(placement.unplaceable))
    note = f"pending pods no target can place, left out: {keys}"
    return dataclasses.replace(cluster, pending=placeable), [note]


def _pinned(cluster: Cluster) -> dict[str, str]:
    """The nodes that stay as they are, and why: not eligible for disruption, or holding
    a pod with do-not-disrupt or one that a PDB allowing no eviction selects."""
    pinned = {}
    for node in cluster.snapshot.nodes:
        if node.name in cluster.fixed:
            pinned[node.name] = "not eligible for disruption"
            continue
        pods = [p for p in node.pods if is_reschedulable(p)]
        pdb = blocking_pdb(cluster.pdbs, pods)
        why = blocked_reason(node.name, None, annotated_pods(pods), pdb, cluster.now)
        if why is not None:
            pinned[node.name] = why
    return pinned


# --- the targets -------------------------------------------------------------------------


def _stay(cluster: Cluster) -> _Target:
    placement = _place(cluster, list(cluster.pending), cluster.snapshot.nodes)
    return _Target(STAY, [], placement, _cost(cluster, [], placement), 0)


def _greedy(cluster: Cluster, movable: Mapping[str, list[Pod]]) -> _Target | None:
    staying = [n for n in cluster.snapshot.nodes if n.name not in movable]
    pods = [p for pods in movable.values() for p in pods] + list(cluster.pending)
    placement = _place(cluster, pods, staying)
    if placement.unplaceable:
        return None
    drained = list(movable)
    return _Target(
        GREEDY, drained, placement, _cost(cluster, drained, placement), _evictions(movable, drained)
    )


def _verify(
    cluster: Cluster, movable: Mapping[str, list[Pod]], proposal: packing.Proposal
) -> tuple[_Target | None, str]:
    """The proposal as the scheduler places it, or None and why it refuses it."""
    kept = [n for n in cluster.snapshot.nodes if n.name in proposal.keep]
    drained = [name for name in movable if name not in proposal.keep]
    pods = [p for name in drained for p in movable[name]] + list(cluster.pending)
    # The scheduler is offered the types the proposal launches first: offered every type,
    # it puts pods that fit one node of a dearer type there (one big node, not the two
    # small ones the optimizer chose). Where that leaves a pod out, every type is offered
    # (the pools' types are topology domains too); the price check below holds the
    # launches to the proposal.
    placement = _place(cluster, pods, kept, launched_types(proposal))
    if placement.unplaceable:
        placement = _place(cluster, pods, kept)
    if placement.unplaceable:
        key, why = next(iter(placement.unplaceable.items()))
        return None, f"the scheduler cannot place pod {key} on its target: {why.message}"
    counted = proposal.cost - sum(cluster.prices[n.name] for n in kept)
    note = ""
    if placement.price > counted + PRICE_TOLERANCE:
        # The aggregate room (or a rule the model does not know) undercounted: the
        # scheduler's placement on the nodes kept still stands, at what it really costs.
        note = (
            f"the scheduler needs ${placement.price:.4f}/h of new nodes for its target, "
            f"the optimizer counted ${counted:.4f}/h"
        )
    cost = _cost(cluster, drained, placement)
    return _Target(MILP, drained, placement, cost, _evictions(movable, drained)), note


def launched_types(proposal: packing.Proposal) -> dict[str, set[str]]:
    """The instance types the proposal launches, by pool."""
    types: dict[str, set[str]] = {}
    for pool, instance_type in proposal.launch:
        types.setdefault(pool, set()).add(instance_type)
    return types


def _place(
    cluster: Cluster,
    pods: list[Pod],
    nodes: Sequence[ExistingNode],
    only: Mapping[str, set[str]] | None = None,
) -> Plan:
    """Where the scheduler puts ``pods`` when ``nodes`` are the cluster's nodes, launching
    only the types ``only`` names per pool (every type when None)."""
    if not pods:
        return Plan()
    snapshot = dataclasses.replace(cluster.snapshot, nodes=list(nodes), pool_usage=None)
    types = cluster.instance_types
    if only is not None:
        types = {pool: offered(listed, only.get(pool, set())) for pool, listed in types.items()}
    return solve(pods, cluster.nodepools, types, snapshot)


def offered(types: Sequence[InstanceType], names: set[str]) -> Sequence[InstanceType]:
    """The ``types`` named in ``names`` when they offer every zone and capacity type the
    others do, else all of them: the scheduler takes the topology domains of spread
    constraints from the offerings, and fewer domains would let it crowd pods into those
    left."""
    chosen = [it for it in types if it.name in names]
    return chosen if _domains(chosen) == _domains(types) else types


def _domains(types: Sequence[InstanceType]) -> set[tuple[str, str]]:
    return {(o.zone, o.capacity_type) for it in types for o in it.offerings if o.available}


def _cost(cluster: Cluster, drained: Sequence[str], placement: Plan) -> float:
    gone = set(drained)
    kept = sum(cluster.prices[n.name] for n in cluster.snapshot.nodes if n.name not in gone)
    return kept + placement.price


def _evictions(movable: Mapping[str, list[Pod]], drained: Sequence[str]) -> int:
    return sum(len(movable[name]) for name in drained)


# --- the optimizer's model ----------------------------------------------------------------


def _propose(
    cluster: Cluster, movable: Mapping[str, list[Pod]], time_limit: float
) -> tuple[packing.Proposal | None, str]:
    snapshot: ClusterSnapshot = cluster.snapshot
    runtime = snapshot.runtime_classes
    requests = [pod_requests(p, runtime) for pods in movable.values() for p in pods]
    requests += [pod_requests(p, runtime) for p in cluster.pending]
    dims = Dimensions(sorted({name for r in requests for name in r}))
    index: dict[tuple[int, ...], int] = {}
    for r in requests:
        index.setdefault(tuple(dims.vector(r).tolist()), len(index))
    shapes = np.array(list(index), dtype=float).reshape(len(index), len(dims.names))

    def counts(pods: Sequence[Pod]) -> np.ndarray:
        out = np.zeros(len(index))
        for p in pods:
            out[index[tuple(dims.vector(pod_requests(p, runtime)).tolist())]] += 1
        return out

    rooms = {n.name: _free(n, dims, runtime) for n in snapshot.nodes}
    candidates = _least_utilized(snapshot.nodes, movable, rooms, dims)
    holders = [
        packing.Holder(
            name=n.name,
            price=cluster.prices[n.name],
            room=rooms[n.name],
            movable=counts(movable[n.name] if n.name in candidates else ()),
            fixed=n.name not in candidates,
        )
        for n in snapshot.nodes
    ]
    options = _options(cluster, dims)
    return packing.propose(shapes, counts(cluster.pending), holders, options, time_limit)


def _least_utilized(
    nodes: Sequence[ExistingNode],
    movable: Mapping[str, list[Pod]],
    rooms: Mapping[str, np.ndarray],
    dims: Dimensions,
) -> set[str]:
    """The ``MAX_DRAIN_CANDIDATES`` movable nodes whose fullest dimension is least used."""

    def used(node: ExistingNode) -> float:
        allocatable = np.maximum(dims.vector(node.allocatable).astype(float), 1.0)
        return float(np.max(1.0 - rooms[node.name] / allocatable, initial=0.0))

    ranked = sorted((n for n in nodes if n.name in movable), key=lambda n: (used(n), n.name))
    return {n.name for n in ranked[:MAX_DRAIN_CANDIDATES]}


def _free(node: ExistingNode, dims: Dimensions, runtime: Mapping) -> np.ndarray:
    used = sum(
        (dims.vector(pod_requests(p, runtime)) for p in node.pods),
        np.zeros(len(dims.names), dtype=np.int64),
    )
    return (dims.vector(node.allocatable) - used).astype(float)


def _options(cluster: Cluster, dims: Dimensions) -> list[packing.Option]:
    """Every instance type a pool may launch, at its cheapest offering the pool allows,
    with its room after the daemonsets that would run there."""
    runtime = cluster.snapshot.runtime_classes
    daemonsets = [(d, pod_requests(d.pod_template, runtime)) for d in cluster.snapshot.daemonsets]
    options = []
    for pool in cluster.nodepools:
        types = cluster.instance_types.get(pool.name)
        if not types:
            continue
        catalog = pool_catalog(pool, types, dims, daemonsets)
        signature = repr(catalog.requirements.to_dicts())
        compatible = catalog.compatible_types(catalog.requirements, signature)
        prices = catalog.type_prices(catalog.requirements, signature)
        for t in np.nonzero(compatible)[0].tolist():
            room = catalog.free[t].astype(float)
            options.append(packing.Option(pool.name, catalog.names[t], room, float(prices[t])))
    return options
