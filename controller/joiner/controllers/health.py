"""Node repair [REPAIR-2..6] (gate ``NodeRepair``): a managed node whose conditions match
one of the cloud provider's repair policies for longer than the policy tolerates is
force-terminated: its NodeClaim is stamped with a termination timestamp of now, so
termination does not drain it, and deleted. Its pods, orphaned, are recreated by their
workloads and provisioned as usual.

No node of a NodePool is repaired while more than 20% of the pool's nodes (rounded up)
match a policy, however recently: a failure that hits many nodes at once is more likely
the cluster's (a bad AMI, a network outage) than the nodes', and replacing them would
not help. The node, its NodeClaim and the NodePool then get a ``NodeRepairBlocked``
event, the NodePool the status condition ``Unhealthy`` (True, as upstream's PR #1831
named it; removed once a node of the pool is looked at with the pool back under 20%),
and the node is looked at again five minutes later.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.nodeclaim import NodeClaim
from joiner.clock import from_rfc3339, to_rfc3339
from joiner.cloudprovider.types import RepairPolicy
from joiner.controllers.context import Controller
from joiner.controllers.runtime import DONE, Result
from joiner.events import WARNING
from joiner.kube.api import Conflict, NotFound

UNHEALTHY = "Unhealthy"  # the DisruptionReason, the disrupted-metric reason, the condition
UNHEALTHY_THRESHOLD = 0.20  # of a NodePool's nodes, rounded up
BLOCKED_REQUEUE = 5 * 60.0
NODEPOOL_GATE = "nodepool"  # the gate label of the blocked metric, as upstream's


@dataclass(frozen=True)
class Unhealthy:
    """A node condition a repair policy matches, and since when it has held."""

    condition: str
    status: str
    since: float
    toleration: float

    @property
    def repair_at(self) -> float:
        return self.since + self.toleration

    def describe(self) -> str:
        return f"{self.condition}={self.status}"


def unhealthy_condition(node: dict[str, Any], policies: Sequence[RepairPolicy]) -> Unhealthy | None:
    """The node's condition that a policy matches and whose toleration ends first, or
    None when the node is healthy [REPAIR-2]."""
    found: Unhealthy | None = None
    for policy in policies:
        condition = _matching(node, policy)
        if condition is None:
            continue
        since = _transition_time(condition)
        candidate = Unhealthy(
            policy.condition_type, policy.condition_status, since, policy.toleration
        )
        if found is None or candidate.repair_at < found.repair_at:
            found = candidate
    return found


def _matching(node: dict[str, Any], policy: RepairPolicy) -> dict[str, Any] | None:
    condition = cond.get_condition(
        (node.get("status") or {}).get("conditions"), policy.condition_type
    )
    if condition is None or condition.get("status") != policy.condition_status:
        return None
    return condition


def _transition_time(condition: dict[str, Any]) -> float:
    """When the condition took its status; a condition without one counts from the epoch
    (it has held at least as long as anyone can tell)."""
    stamp = condition.get("lastTransitionTime")
    return from_rfc3339(stamp) if stamp else 0.0


def is_unhealthy(node: dict[str, Any], policies: Sequence[RepairPolicy]) -> bool:
    """A policy matches one of its conditions, however recently [REPAIR-4]."""
    return any(_matching(node, policy) is not None for policy in policies)


def unhealthy_allowance(total: int) -> int:
    """How many of a pool's ``total`` nodes may be unhealthy with repair still going on:
    20%, rounded up as a PodDisruptionBudget's percentages are (one of three nodes may)."""
    return math.ceil(total * UNHEALTHY_THRESHOLD)


class NodeHealth(Controller):
    """Keyed by Node name; woken by every change of a Node."""

    name = "node.health"

    def reconcile(self, key: str) -> Result:
        node = self.state.nodes.get(key)
        if node is None or node["metadata"].get("deletionTimestamp"):
            return DONE
        claim = self.state.nodeclaim_by_provider_id((node.get("spec") or {}).get("providerID"))
        if claim is None:
            return DONE  # not a node Joiner launched
        policies = self.cloud.repair_policies()
        unhealthy = unhealthy_condition(node, policies)
        pool = claim.nodepool or ""
        now = self.clock.now()
        if unhealthy is None or now < unhealthy.repair_at:
            self._clear_pool_condition(pool, policies)
            return DONE if unhealthy is None else Result(requeue_after=unhealthy.repair_at - now)
        if self._pool_unhealthy(pool, policies):
            self._blocked(node, claim, pool)
            return Result(requeue_after=BLOCKED_REQUEUE)
        self._clear_pool_condition(pool, policies)
        try:
            self._repair(claim.name, node, unhealthy)
        except Conflict:
            return Result(requeue_after=0.0)
        return DONE

    # --- the 20% guard ---------------------------------------------------------------

    def _pool_unhealthy(self, pool: str, policies: Sequence[RepairPolicy]) -> bool:
        """More of the pool's nodes are unhealthy than may be [REPAIR-4]."""
        nodes = [
            n
            for n in self.state.nodes.values()
            if (n["metadata"].get("labels") or {}).get(wk.NODEPOOL) == pool
        ]
        unhealthy = sum(is_unhealthy(n, policies) for n in nodes)
        return unhealthy > unhealthy_allowance(len(nodes))

    def _blocked(self, node: dict[str, Any], claim: NodeClaim, pool: str) -> None:
        message = f'more than {UNHEALTHY_THRESHOLD:.0%} of nodes in nodepool "{pool}" are unhealthy'
        involved = [node, self.state.objects["NodeClaim"].get(claim.name) or claim.to_dict()]
        nodepool = self.state.objects["NodePool"].get(pool)
        if nodepool is not None:
            involved.append(nodepool)
        for obj in involved:
            self.recorder.record(obj, WARNING, "NodeRepairBlocked", message)
        self.metrics.node_repair_blocked.labels(pool, NODEPOOL_GATE).inc()
        self._write_pool_condition(pool, message)

    # --- the NodePool's Unhealthy condition ------------------------------------------------

    def _clear_pool_condition(self, pool: str, policies: Sequence[RepairPolicy]) -> None:
        """Remove ``Unhealthy`` from a pool that has it and is back under 20%; the cached
        pool says whether it has it, so a healthy cluster costs no call."""
        cached = self.state.objects["NodePool"].get(pool) or {}
        if cond.get_condition((cached.get("status") or {}).get("conditions"), UNHEALTHY) is None:
            return
        if not self._pool_unhealthy(pool, policies):
            self._write_pool_condition(pool, None)

    def _write_pool_condition(self, pool: str, message: str | None) -> None:
        """``Unhealthy`` True with ``message``, or removed when None; a conflict with
        another status write is left to the next look (every 5 minutes while blocked)."""
        raw = self.fresh("NodePool", pool)
        if raw is None:
            return
        conditions = raw.setdefault("status", {}).setdefault("conditions", [])
        if message is None:
            changed = cond.remove_condition(conditions, UNHEALTHY)
        else:
            now = self.clock.now()
            changed = cond.set_condition(
                conditions, UNHEALTHY, cond.TRUE, now, reason=UNHEALTHY, message=message
            )
        if changed:
            with contextlib.suppress(Conflict, NotFound):
                self.kube.update_status(raw)

    # --- the repair ---------------------------------------------------------------------

    def _repair(self, name: str, node: dict[str, Any], unhealthy: Unhealthy) -> None:
        """Stamp the termination timestamp (termination then skips the drain), say why,
        delete [REPAIR-3, REPAIR-5]. A NodeClaim something else is deleting is stamped
        only, so its drain does not hold the unhealthy node either."""
        raw = self.fresh("NodeClaim", name)
        if raw is None:
            return
        now = self.clock.now()
        annotations = raw["metadata"].setdefault("annotations", {})
        if wk.NODECLAIM_TERMINATION_TIMESTAMP not in annotations:
            annotations[wk.NODECLAIM_TERMINATION_TIMESTAMP] = to_rfc3339(now)
            raw = self.kube.update(raw)
        if raw["metadata"].get("deletionTimestamp"):
            return
        conditions = raw.setdefault("status", {}).setdefault("conditions", [])
        cond.set_condition(conditions, nc.DISRUPTION_REASON, cond.TRUE, now, reason=UNHEALTHY)
        raw = self.kube.update_status(raw)
        self.recorder.record(
            raw,
            WARNING,
            "DisruptionTerminating",
            f"Disrupting NodeClaim: {UNHEALTHY} ({unhealthy.describe()} for longer than "
            f"{unhealthy.toleration / 60:g}m)",
        )
        try:
            self.kube.delete("NodeClaim", name)
        except NotFound:
            return
        self._count(raw, node, unhealthy, now)

    def _count(
        self, raw: dict[str, Any], node: dict[str, Any], unhealthy: Unhealthy, now: float
    ) -> None:
        labels = node["metadata"].get("labels") or {}
        pool = labels.get(wk.NODEPOOL, "")
        image = (raw.get("status") or {}).get("imageID", "")
        self.metrics.nodeclaims_disrupted.labels(pool, UNHEALTHY).inc()
        self.metrics.nodeclaims_unhealthy_disrupted.labels(
            unhealthy.condition, pool, labels.get(wk.CAPACITY_TYPE, ""), image
        ).inc()
        self.metrics.node_repair_unhealthy_duration.labels(pool, unhealthy.condition).observe(
            now - unhealthy.since
        )
