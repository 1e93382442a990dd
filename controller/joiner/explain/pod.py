"""``joiner explain pod NS/NAME``: why a pod is pending, or where it landed and why.

Pending: each NodePool, in the order the provisioner tries them, is asked on its own
with the real solver (the pod alone, against the cluster as it is): its answer is the
constraint that excludes the pool, in the solver's (Karpenter's) words, or the
NodeClaim it would launch. Where the pod is too big (or the pool's limits leave no room
for a big enough type), the instance types closest to fitting, with by how much each
falls short. Placed: the node, its pool, and the value of each label the pod requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool, by_weight
from joiner.api.requirements import Requirements
from joiner.cloudprovider.types import InstanceType
from joiner.explain.answer import NotFoundError, format_price
from joiner.explain.cluster import Cluster
from joiner.explain.nodepool import Limit, pool_limits
from joiner.scheduling import model as m
from joiner.scheduling.catalog import Dimensions, PoolCatalog
from joiner.scheduling.pods import pod_requests
from joiner.scheduling.solver import solve

CLOSEST_SHOWN = 3
# The solver's constraints under which no type the pool allows has an offering left.
_NO_OFFERING = (m.NO_INSTANCE_TYPE, m.NO_OFFERING)
STATIC = "static"  # a pool that launches no nodes for pods
NOT_READY = "not ready"
LAUNCHES = "launches"
EXISTING = "existing node"


@dataclass
class Closest:
    """An instance type the pod does not fit, and what it lacks (resource -> amount)."""

    instance_type: str
    short: dict[str, str]
    needs: dict[str, str]
    allocatable: dict[str, str]

    def describe(self) -> str:
        parts = [
            f"{name} short by {amount} (needs {self.needs[name]}, has {self.allocatable[name]})"
            for name, amount in self.short.items()
        ]
        return f"{self.instance_type}: {', '.join(parts)}"


@dataclass
class PoolVerdict:
    """What one NodePool says to the pod: ``outcome`` is the solver's constraint (e.g.
    ``taints``), or ``launches`` / ``existing node`` / ``static`` / ``not ready``."""

    nodepool: str
    outcome: str
    message: str
    closest: list[Closest] = field(default_factory=list)  # too big: the nearest types
    limits: list[Limit] = field(default_factory=list)  # at its limits: used / allowed
    unavailable: list[str] = field(default_factory=list)  # types it allows, out of capacity


@dataclass
class PodAnswer:
    pod: str
    status: str  # pending, placed, waiting (not yet marked unschedulable by kube-scheduler)
    node: str | None = None
    nodepool: str | None = None
    nodeclaim: str | None = None
    requirements_met: dict[str, str] = field(default_factory=dict)  # label -> node's value
    pools: list[PoolVerdict] = field(default_factory=list)

    def lines(self) -> list[str]:
        if self.status == "placed":
            out = [f"pod {self.pod} is placed on node {self.node}"]
            out.append(f"  nodepool: {self.nodepool or '(none: not a Joiner node)'}")
            if self.nodeclaim:
                out.append(f"  nodeclaim: {self.nodeclaim}")
            if self.requirements_met:
                out.append("  requirements met:")
                out += [f"    {key}={value}" for key, value in self.requirements_met.items()]
            return out
        out = [f"pod {self.pod} is {self.status}"]
        for verdict in self.pools:
            out.append(f"  nodepool {verdict.nodepool}: {verdict.outcome}: {verdict.message}")
            if verdict.closest:
                out.append("    closest instance types:")
                out += [f"      {closest.describe()}" for closest in verdict.closest]
            if verdict.limits:
                out.append(
                    "    limits (used / allowed): "
                    + ", ".join(
                        f"{lim.resource} {lim.used} / {lim.allowed}" for lim in verdict.limits
                    )
                )
            if verdict.unavailable:
                out.append("    no offering available: " + ", ".join(verdict.unavailable))
        if not self.pools:
            out.append("  no NodePool")
        return out


def explain_pod(cluster: Cluster, key: str) -> PodAnswer:
    namespace, _, name = key.partition("/")
    if not name:
        namespace, name = "default", namespace
    pod = cluster.state.pods.get(f"{namespace}/{name}")
    if pod is None:
        raise NotFoundError(f"pod {namespace}/{name} not found")
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        return _placed(cluster, pod, f"{namespace}/{name}", node_name)
    unschedulable = any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )
    return PodAnswer(
        pod=f"{namespace}/{name}",
        status="pending" if unschedulable else "waiting for the kube-scheduler",
        pools=[
            _verdict(cluster, pod, pool) for pool in by_weight(cluster.state.nodepools.values())
        ],
    )


def _placed(cluster: Cluster, pod: dict[str, Any], key: str, node_name: str) -> PodAnswer:
    state_node = cluster.state.state_node(node_name)
    labels = state_node.labels if state_node is not None else {}
    required = Requirements.for_pod(pod)
    return PodAnswer(
        pod=key,
        status="placed",
        node=node_name,
        nodepool=labels.get(wk.NODEPOOL),
        nodeclaim=state_node.nodeclaim.name
        if state_node is not None and state_node.nodeclaim
        else None,
        requirements_met={k: labels.get(k, "(absent)") for k in sorted(required)},
    )


def _verdict(cluster: Cluster, pod: dict[str, Any], pool: NodePool) -> PoolVerdict:
    if pool.is_static:
        return PoolVerdict(pool.name, STATIC, "a static NodePool launches no nodes for pods")
    if not cluster.provisioner.is_ready(pool):
        why = f"its node class {pool.template.node_class_ref.name} is not Ready"
        if pool.metadata.get("deletionTimestamp"):
            why = "it is being deleted"
        return PoolVerdict(pool.name, NOT_READY, why)
    types = cluster.instance_types(pool)
    plan = solve([pod], [pool], {pool.name: types}, cluster.state.snapshot())
    key = m.pod_key(pod)
    if key in plan.unplaceable:
        refused = plan.unplaceable[key]
        verdict = PoolVerdict(pool.name, refused.constraint, refused.message)
        if refused.constraint == m.RESOURCES:
            verdict.closest = _closest(cluster, pod, pool, types)
        elif refused.constraint == m.POOL_LIMITS:
            verdict.limits = pool_limits(cluster, pool)
        elif refused.constraint in _NO_OFFERING:
            verdict.unavailable = _out_of_capacity(pool, types)
        return verdict
    if key in plan.existing:
        node = plan.existing[key]
        return PoolVerdict(pool.name, EXISTING, f"fits on node {node} as the cluster is now")
    claim = plan.nodeclaims[0]
    names = ", ".join(claim.instance_types[:CLOSEST_SHOWN])
    more = len(claim.instance_types) - CLOSEST_SHOWN
    names += f" and {more} more" if more > 0 else ""
    return PoolVerdict(
        pool.name, LAUNCHES, f"would launch a node ({names}) from {format_price(claim.price)}"
    )


def _closest(
    cluster: Cluster, pod: dict[str, Any], pool: NodePool, types: Sequence[InstanceType]
) -> list[Closest]:
    """The pool's types (those its requirements allow) closest to holding the pod and
    the daemonsets that would run beside it: fewest resources short, then least short."""
    allowed = pool.requirements()
    compatible = [it for it in types if it.requirements.is_intersecting(allowed)]
    needs = res.add(pod_requests(pod, {}), _daemon_overhead(cluster, pool, compatible))
    ranked = []
    for it in compatible:
        short = {
            name: amount - it.allocatable.get(name, 0)
            for name, amount in needs.items()
            if amount > it.allocatable.get(name, 0)
        }
        if short:
            relative = sum(amount / needs[name] for name, amount in short.items())
            ranked.append(((len(short), relative, it.name), it, short))
    ranked.sort(key=lambda entry: entry[0])
    return [_shortfall(it, short, needs) for _, it, short in ranked[:CLOSEST_SHOWN]]


def _out_of_capacity(pool: NodePool, types: Sequence[InstanceType]) -> list[str]:
    """The types the pool's requirements allow that have no available offering left."""
    allowed = pool.requirements()
    return [
        it.name
        for it in types
        if it.requirements.is_intersecting(allowed) and not it.available_offerings()
    ]


def _daemon_overhead(
    cluster: Cluster, pool: NodePool, types: Sequence[InstanceType]
) -> res.ResourceList:
    """What the daemonsets that would run on the pool's nodes request (the catalogue's
    own reckoning, as the solver counts it)."""
    daemonsets = [
        (daemonset, pod_requests(daemonset.pod_template, {}))
        for daemonset in cluster.state.snapshot().daemonsets
    ]
    names = list(dict.fromkeys(name for _, requests in daemonsets for name in requests))
    catalog = PoolCatalog(pool, types, Dimensions(names), daemonsets)
    return catalog.overhead_for(pool.requirements())


def _shortfall(it: InstanceType, short: Mapping[str, int], needs: Mapping[str, int]) -> Closest:
    def fmt(values: Mapping[str, int]) -> dict[str, str]:
        return res.format_resource_list({name: values.get(name, 0) for name in short})

    return Closest(it.name, fmt(short), fmt(needs), fmt(it.allocatable))
