"""``joiner explain nodepool NAME``: its limits (used / allowed), its disruption budgets
now (what each reason may disrupt, from the controller's budget rule), drift (which
of its NodeClaims drifted, and why), and its CapacityBuffers (``explain.buffers``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.api import nodeclaim as nc
from joiner.api import resources as res
from joiner.api.conditions import get_condition
from joiner.api.nodepool import NodePool
from joiner.controllers.disruption.budgets import DRIFTED, EMPTY, UNDERUTILIZED, budget_active
from joiner.explain.answer import NotFoundError
from joiner.explain.buffers import BufferNow, pool_buffers
from joiner.explain.cluster import Cluster

REASONS = (EMPTY, DRIFTED, UNDERUTILIZED)


@dataclass
class Limit:
    resource: str
    used: str
    allowed: str


@dataclass
class BudgetNow:
    nodes: str
    reasons: list[str] | None
    schedule: str | None
    active: bool


@dataclass
class NodePoolAnswer:
    nodepool: str
    ready: bool
    nodes: int
    limits: list[Limit] = field(default_factory=list)
    budgets: list[BudgetNow] = field(default_factory=list)
    allowed_now: dict[str, int] = field(default_factory=dict)  # reason -> disruptions
    drifted: dict[str, str] = field(default_factory=dict)  # nodeclaim -> drift reason
    buffers: list[BufferNow] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [
            f"nodepool {self.nodepool}: {'ready' if self.ready else 'not ready'}, "
            f"{self.nodes} node(s)"
        ]
        if self.limits:
            out.append("  limits (used / allowed):")
            out += [f"    {lim.resource}: {lim.used} / {lim.allowed}" for lim in self.limits]
        else:
            out.append("  limits: none")
        out.append(
            "  disruptions allowed now: "
            + ", ".join(f"{reason} {count}" for reason, count in self.allowed_now.items())
        )
        for budget in self.budgets:
            reasons = ", ".join(budget.reasons) if budget.reasons else "all reasons"
            schedule = f", schedule {budget.schedule}" if budget.schedule else ""
            state = "active" if budget.active else "inactive"
            out.append(f"    budget nodes={budget.nodes} ({reasons}{schedule}): {state}")
        if self.drifted:
            out.append("  drifted:")
            out += [f"    {name}: {why}" for name, why in self.drifted.items()]
        else:
            out.append("  drifted: none")
        if self.buffers:  # only where CapacityBuffers are used
            out.append("  buffers (chunks wanted / held):")
            out += [f"    {buffer.describe()}" for buffer in self.buffers]
        return out


def explain_nodepool(cluster: Cluster, name: str) -> NodePoolAnswer:
    pool = cluster.state.nodepools.get(name)
    if pool is None:
        raise NotFoundError(f"nodepool {name} not found")
    usage = cluster.state.nodepool_usage(name)
    now = cluster.clock.now()
    drifted = {}
    for claim in sorted(cluster.state.nodeclaims.values(), key=lambda c: c.name):
        condition = get_condition(claim.status.conditions, nc.DRIFTED)
        if claim.nodepool == name and claim.condition_true(nc.DRIFTED) and condition:
            drifted[claim.name] = condition.get("reason") or nc.DRIFTED
    return NodePoolAnswer(
        nodepool=name,
        ready=cluster.provisioner.is_ready(pool) or pool.is_static,
        nodes=usage.get(res.NODES, 0) // 1000,
        limits=pool_limits(cluster, pool),
        budgets=[
            BudgetNow(b.nodes, b.reasons, b.schedule, budget_active(b, now))
            for b in pool.disruption.budgets
        ],
        allowed_now={reason: cluster.disruption.allowed(name, reason) for reason in REASONS},
        drifted=drifted,
        buffers=pool_buffers(cluster, pool),
    )


def pool_limits(cluster: Cluster, pool: NodePool) -> list[Limit]:
    """Each limit of the pool with what its nodes (those leaving included) hold of it."""
    usage = cluster.state.nodepool_usage(pool.name)
    return [
        Limit(resource, _amount(resource, usage.get(resource, 0)), _amount(resource, amount))
        for resource, amount in sorted(pool.limits_milli.items())
    ]


def _amount(resource: str, milli: int) -> str:
    return res.format_resource_list({resource: milli})[resource]
