"""``joiner explain node NAME`` / ``nodeclaim NAME``: why this instance type, zone and
capacity type, and why the node is or is not being disrupted now.

The alternatives are the instance types its NodeClaim allowed, each at its cheapest
offering the NodeClaim's requirements allow, cheapest first (the order the launch tried
them in). The disruption answer is the controller's own pass, run on the snapshot: the
candidates (``build_candidates``: do-not-disrupt, PDBs) and the decision with the reason
each node was passed over; each method's budget comes from the pool's budgets now; the
replacement is where the pass's simulation would put the node's pods. The CapacityBuffer
chunks a node holds count among its pods, as the pass counts them: a node holding only
chunks is kept for its buffers, not empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.duration import format_duration
from joiner.api.nodepool import NodePool
from joiner.buffers.chunks import buffer_of
from joiner.controllers.disruption.budgets import DRIFTED, EMPTY, UNDERUTILIZED
from joiner.controllers.disruption.candidates import Candidate
from joiner.controllers.disruption.expiration import expiry
from joiner.explain.answer import NotFoundError, format_price
from joiner.explain.cluster import Cluster
from joiner.state.node import StateNode

ALTERNATIVES_SHOWN = 5
WHEN_EMPTY = "WhenEmpty"


@dataclass
class Offer:
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    chosen: bool = False

    def describe(self) -> str:
        mark = "  <- this node" if self.chosen else ""
        price = format_price(self.price)
        return f"{self.instance_type} {self.zone} {self.capacity_type} {price}{mark}"


@dataclass
class Method:
    """One way the node could go: whether it applies, its budget now (None: no budget
    applies), and what the pass made of it."""

    method: str
    applies: bool
    why: str
    budget: int | None = None


@dataclass
class Replacement:
    instance_types: list[str]
    price: float


@dataclass
class NodeAnswer:
    node: str
    nodeclaim: str | None
    nodepool: str | None
    instance_type: str | None
    zone: str | None
    capacity_type: str | None
    price: float | None
    alternatives: list[Offer] = field(default_factory=list)
    buffer_chunks: dict[str, int] = field(default_factory=dict)  # buffer -> chunks held here
    disrupted_now: str | None = None  # the pass's command when it takes this node
    blocked: str | None = None  # why no voluntary method may take it
    passed_over: str | None = None  # why the pass did not take it
    methods: list[Method] = field(default_factory=list)
    replacement: Replacement | None = None

    def lines(self) -> list[str]:
        out = [
            f"node {self.node} (nodeclaim {self.nodeclaim or '-'}, nodepool "
            f"{self.nodepool or '-'}): {self.instance_type} {self.zone} {self.capacity_type} "
            f"{format_price(self.price)}"
        ]
        if self.alternatives:
            out.append("  compatible offerings, cheapest first:")
            out += [f"    {offer.describe()}" for offer in self.alternatives]
        if self.buffer_chunks:
            held = ", ".join(f"{key} {count}" for key, count in self.buffer_chunks.items())
            out.append(f"  buffer chunks held: {held}")
        out.append(f"  disrupted now: {self.disrupted_now or 'no'}")
        if self.blocked:
            out.append(f"  blocked: {self.blocked}")
        if self.passed_over:
            out.append(f"  passed over: {self.passed_over}")
        for method in self.methods:
            budget = "" if method.budget is None else f" (budget now: {method.budget})"
            state = "applies" if method.applies else "does not apply"
            out.append(f"  {method.method}: {state}{budget}: {method.why}")
        if self.replacement is not None:
            types = ", ".join(self.replacement.instance_types[:ALTERNATIVES_SHOWN])
            out.append(
                f"  replacement its pods would need: {types} from "
                f"{format_price(self.replacement.price)} (this node: {format_price(self.price)})"
            )
        return out


def explain_nodeclaim(cluster: Cluster, name: str) -> NodeAnswer:
    found = next(
        (sn for sn in cluster.state.state_nodes() if sn.nodeclaim and sn.nodeclaim.name == name),
        None,
    )
    if found is None:
        raise NotFoundError(f"nodeclaim {name} not found")
    return _explain(cluster, found)


def explain_node(cluster: Cluster, name: str) -> NodeAnswer:
    found = next(
        (sn for sn in cluster.state.state_nodes() if sn.node is not None and sn.name == name),
        None,
    )
    if found is None:
        raise NotFoundError(f"node {name} not found")
    return _explain(cluster, found)


def _explain(cluster: Cluster, sn: StateNode) -> NodeAnswer:
    labels = sn.labels
    pool = cluster.state.nodepools.get(sn.nodepool or "")
    prices = cluster.disruption.prices_now()
    answer = NodeAnswer(
        node=sn.name,
        nodeclaim=sn.nodeclaim.name if sn.nodeclaim else None,
        nodepool=sn.nodepool,
        instance_type=labels.get(wk.INSTANCE_TYPE),
        zone=labels.get(wk.ZONE),
        capacity_type=labels.get(wk.CAPACITY_TYPE),
        price=prices.get(sn.name),
        alternatives=_alternatives(cluster, sn, pool),
        buffer_chunks=_buffer_chunks(cluster, sn),
    )
    if pool is None or not sn.managed:
        answer.passed_over = "not a NodePool's node: Joiner does not disrupt it"
        return answer
    _disruption(cluster, sn, pool, answer)
    return answer


def _alternatives(cluster: Cluster, sn: StateNode, pool: NodePool | None) -> list[Offer]:
    if sn.nodeclaim is None or pool is None:
        return []
    requirements = sn.nodeclaim.requirement_set()
    allowed = set(sn.nodeclaim.instance_type_candidates())
    labels = sn.labels
    offers = []
    for it in cluster.instance_types(pool):
        if allowed and it.name not in allowed:
            continue
        for o in it.compatible_offerings(requirements):
            chosen = (it.name, o.zone, o.capacity_type) == (
                labels.get(wk.INSTANCE_TYPE),
                labels.get(wk.ZONE),
                labels.get(wk.CAPACITY_TYPE),
            )
            offers.append(Offer(it.name, o.zone, o.capacity_type, o.price, chosen))
    offers.sort(key=lambda o: (o.price, o.instance_type, o.zone, o.capacity_type))
    shown = offers[:ALTERNATIVES_SHOWN]
    shown += [o for o in offers[ALTERNATIVES_SHOWN:] if o.chosen]
    return shown


def _buffer_chunks(cluster: Cluster, sn: StateNode) -> dict[str, int]:
    """The chunks of each buffer the node holds (namespace/name -> count), by name."""
    counts: dict[str, int] = {}
    for chunk in cluster.buffers.held_on(sn.name):
        key = buffer_of(chunk) or ""
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _disruption(cluster: Cluster, sn: StateNode, pool: NodePool, answer: NodeAnswer) -> None:
    disruption = cluster.disruption
    candidates, skipped = disruption.candidates_now()
    candidate = next((c for c in candidates if c.name == sn.name), None)
    command, method, passed_over = cluster.decision
    if command is not None and any(c.name == sn.name for c in command.candidates):
        answer.disrupted_now = f"{method}: {command.describe()}"
    answer.blocked = skipped.get(sn.name)
    if candidate is None and answer.blocked is None:
        answer.blocked = "not a candidate: not initialized, being deleted, or just nominated"
    answer.passed_over = None if answer.blocked else passed_over.get(sn.name)
    answer.methods = [
        _emptiness(cluster, sn, pool, candidate),
        _drift(cluster, sn, pool),
        _consolidation(cluster, sn, pool, candidate),
        _expiration(cluster, sn),
    ]
    if candidate is not None and candidate.pods:
        plan = disruption.simulate_without([candidate])
        if plan.nodeclaims:
            claim = plan.nodeclaims[0]
            answer.replacement = Replacement(claim.instance_types, claim.price)


def _consolidatable(sn: StateNode, pool: NodePool) -> str | None:
    """Why consolidation may not look at the node yet, or None."""
    if sn.nodeclaim is not None and sn.nodeclaim.condition_true(nc.CONSOLIDATABLE):
        return None
    after = pool.disruption.consolidate_after
    return f"not consolidatable yet (consolidateAfter {after} since its pods last changed)"


def _emptiness(
    cluster: Cluster, sn: StateNode, pool: NodePool, candidate: Candidate | None
) -> Method:
    budget = cluster.disruption.allowed(pool.name, EMPTY)
    pods = len(cluster.state.reschedulable_pods([sn.name]))
    if pods:
        return Method("emptiness", False, f"{pods} pod(s) would have to move", budget)
    chunks = len(cluster.buffers.held_on(sn.name))
    if chunks:
        why = f"not empty: it holds {chunks} CapacityBuffer chunk(s)"
        return Method("emptiness", False, why, budget)
    why = _consolidatable(sn, pool) or "empty"
    return Method("emptiness", why == "empty", why, budget)


def _drift(cluster: Cluster, sn: StateNode, pool: NodePool) -> Method:
    budget = cluster.disruption.allowed(pool.name, DRIFTED)
    claim = sn.nodeclaim
    if claim is None or not claim.condition_true(nc.DRIFTED):
        return Method("drift", False, "not drifted", budget)
    drifted = next(c for c in claim.status.conditions if c.get("type") == nc.DRIFTED)
    return Method("drift", True, f"drifted ({drifted.get('reason') or 'Drifted'})", budget)


def _consolidation(
    cluster: Cluster, sn: StateNode, pool: NodePool, candidate: Candidate | None
) -> Method:
    budget = cluster.disruption.allowed(pool.name, UNDERUTILIZED)
    policy = pool.disruption.consolidation_policy
    if policy == WHEN_EMPTY:
        return Method("consolidation", False, "consolidationPolicy WhenEmpty", budget)
    if candidate is not None and not candidate.pods:
        return Method("consolidation", False, "empty: emptiness's", budget)
    why = _consolidatable(sn, pool)
    return Method("consolidation", why is None, why or f"consolidationPolicy {policy}", budget)


def _expiration(cluster: Cluster, sn: StateNode) -> Method:
    claim = cluster.state.objects["NodeClaim"].get(sn.nodeclaim.name) if sn.nodeclaim else None
    expires = expiry(claim) if claim is not None else None
    if expires is None:
        return Method("expiration", False, "never expires (expireAfter Never)")
    left = expires - cluster.clock.now()
    expire_after = sn.nodeclaim.expire_after if sn.nodeclaim else ""
    if left <= 0:
        return Method("expiration", True, f"expired (expireAfter {expire_after}), budgets aside")
    return Method(
        "expiration",
        False,
        f"expires in {format_duration(left)} (expireAfter {expire_after}), budgets aside",
    )
