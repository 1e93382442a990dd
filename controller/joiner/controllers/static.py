"""Static NodePools [STATIC] (gate ``StaticCapacity``): a NodePool with ``spec.replicas``
keeps exactly that many NodeClaims, whatever the pods. Pods land on its nodes as on any
other; the dynamic provisioner never launches for it and consolidation never removes its
nodes. Drift and expiration still replace them (drift in ``disruption``; expiration
deletes, and this controller launches the replacement).

Scale-up creates NodeClaims from the pool's template, up to ``limits.nodes`` counting
every NodeClaim of the pool that still exists. Scale-down is the user's decision, so it
does not wait for the pool's disruption budgets (as upstream's): it deletes the NodeClaims
over ``replicas`` at once, and their drain honours PodDisruptionBudgets. Which go first,
as upstream's: NodeClaims not launched yet, then empty nodes, then the rest, those with
``do-not-disrupt`` pods last, then by ``karpenter.sh/deprovisioning-priority`` (higher
first), then by disruption cost [STATIC-4].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass

from joiner.api import resources as res
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.context import Controller, ControllerContext
from joiner.controllers.disruption.candidates import (
    do_not_disrupt_until,
    eviction_cost,
    lifetime_remaining,
    pod_started,
)
from joiner.controllers.disruption.orchestration import replacements_by_target
from joiner.controllers.provisioning import CREATED_REASON, nodeclaim_manifest
from joiner.controllers.runtime import DONE, NOT_SYNCED, Result
from joiner.events import NORMAL, WARNING
from joiner.kube.api import NotFound
from joiner.scheduling.model import NodeClaimPlan
from joiner.scheduling.nodeclaims import MAX_INSTANCE_TYPES, pinned_labels, requirement_dicts

RESYNC = 60.0  # seconds: looked at again even without an event, as upstream's
IN_FLIGHT_TTL = 60.0  # seconds a created NodeClaim counts before the watch shows it
AT_LIMIT_RETRY = 30.0
DEPROVISIONING_PRIORITY = "karpenter.sh/deprovisioning-priority"


class StaticCapacity(Controller):
    """Keyed by NodePool name; woken by the pool's changes and its NodeClaims'."""

    name = "static.capacity"

    def __init__(self, ctx: ControllerContext, is_ready: Callable[[NodePool], bool]) -> None:
        super().__init__(ctx)
        self._is_ready = is_ready
        self._in_flight: dict[str, dict[str, float]] = {}  # pool -> created name -> when

    def reconcile(self, key: str) -> Result:
        pool = self.state.nodepools.get(key)
        if pool is None or not pool.is_static or pool.metadata.get("deletionTimestamp"):
            return DONE
        if not self.state.synced:
            return NOT_SYNCED
        claims = pool_claims(self.state.nodeclaims.values(), pool.name)
        active = active_claims(claims, self.state.marked_for_deletion)
        unseen = self._unseen(pool.name, claims)
        wanted = pool.replicas or 0
        if len(active) + unseen > wanted:
            self._scale_down(pool, active, len(active) + unseen - wanted)
        elif len(active) + unseen < wanted:
            return self._scale_up(pool, wanted - len(active) - unseen, len(claims) + unseen)
        return Result(requeue_after=RESYNC)

    def _unseen(self, pool: str, claims: list[NodeClaim]) -> int:
        """NodeClaims this process created that the watch has not brought yet (for at most
        ``IN_FLIGHT_TTL``): a reconcile woken by an older event must not create them again."""
        seen = {c.name for c in claims}
        now = self.clock.now()
        flying = {
            name: at
            for name, at in self._in_flight.get(pool, {}).items()
            if name not in seen and now - at < IN_FLIGHT_TTL
        }
        self._in_flight[pool] = flying
        return len(flying)

    # --- scale up ------------------------------------------------------------------------

    def _scale_up(self, pool: NodePool, missing: int, existing: int) -> Result:
        if not self._is_ready(pool):
            return Result(requeue_after=RESYNC)
        count = min(missing, node_room(pool, existing))
        if count <= 0:
            self._at_limit(pool)
            return Result(requeue_after=AT_LIMIT_RETRY)
        plan = template_plan(pool, self.cloud.get_instance_types(pool))
        if plan is None:
            self._no_types(pool)
            return Result(requeue_after=RESYNC)
        for _ in range(count):
            created = self.kube.create(nodeclaim_manifest(pool, plan))
            flying = self._in_flight.setdefault(pool.name, {})
            flying[created["metadata"]["name"]] = self.clock.now()
            self.metrics.nodeclaims_created.labels(pool.name, CREATED_REASON).inc()
            self.recorder.record(
                created,
                NORMAL,
                "Provisioned",
                f"static NodePool {pool.name} keeps {pool.replicas} node(s)",
            )
        return Result(requeue_after=RESYNC)

    def _at_limit(self, pool: NodePool) -> None:
        raw = self.state.objects["NodePool"].get(pool.name)
        if raw is not None:
            self.recorder.record(
                raw,
                WARNING,
                "NodePoolNodeLimitReached",
                f"limits.nodes {node_limit(pool)} leaves no room for the {pool.replicas} replicas",
            )

    def _no_types(self, pool: NodePool) -> None:
        raw = self.state.objects["NodePool"].get(pool.name)
        if raw is not None:
            self.recorder.record(
                raw, WARNING, "NoCompatibleInstanceTypes", "no instance type meets the template"
            )

    # --- scale down ----------------------------------------------------------------------

    def _scale_down(self, pool: NodePool, active: list[NodeClaim], extra: int) -> None:
        for claim in self._deprovision_order(pool, active)[:extra]:
            raw = self.state.objects["NodeClaim"].get(claim.name) or claim.to_dict()
            self.recorder.record(
                raw,
                NORMAL,
                "DisruptionTerminating",
                f"Disrupting NodeClaim: Overprovisioned (nodepool {pool.name} replicas "
                f"{pool.replicas})",
            )
            try:
                self.kube.delete("NodeClaim", claim.name)
            except NotFound:
                continue

    def _deprovision_order(self, pool: NodePool, claims: list[NodeClaim]) -> list[NodeClaim]:
        now = self.clock.now()
        nodes = {
            sn.nodeclaim.name: sn.name
            for sn in self.state.state_nodes()
            if sn.nodeclaim is not None
        }

        def rank(claim: NodeClaim) -> tuple:
            priority = deprovisioning_priority(claim)
            node = nodes.get(claim.name)
            if not claim.status.provider_id or node is None:
                return (0, -priority, 0.0, claim.name)
            pods = self.state.reschedulable_pods([node])
            protected = any(
                (until := do_not_disrupt_until(p, pod_started(p))) is not None and until > now
                for p in self.state.pods_on(node)
            )
            if not pods and not protected:
                return (1, 0, 0.0, claim.name)
            state_node = self.state.state_node(node)
            remaining = lifetime_remaining(state_node, now) if state_node is not None else 1.0
            managed = self.state.deletion_cost_managed
            cost = sum(eviction_cost(p, deletion_cost_managed=managed) for p in pods) * remaining
            return (3 if protected else 2, -priority, cost, claim.name)

        return sorted(claims, key=rank)


@dataclass(frozen=True)
class _Typed:
    instance_type: InstanceType
    price: float


def pool_claims(claims: Iterable[NodeClaim], pool: str) -> list[NodeClaim]:
    return [c for c in claims if c.nodepool == pool]


def active_claims(claims: Iterable[NodeClaim], marked: Set[str]) -> list[NodeClaim]:
    """The NodeClaims that count towards ``replicas``: not being deleted, and not being
    replaced by a disruption command whose replacement is already there (until it is,
    the node it replaces still counts, so the pool is not refilled twice)."""
    live = [c for c in claims if not c.metadata.get("deletionTimestamp")]
    replaced = replacements_by_target(live)
    return [c for c in live if c.name not in marked or c.name not in replaced]


def node_limit(pool: NodePool) -> int | None:
    """``limits.nodes`` as a count, or None without one."""
    limit = pool.limits_milli.get(res.NODES)
    return None if limit is None else limit // 1000


def node_room(pool: NodePool, existing: int) -> int:
    """How many more NodeClaims ``limits.nodes`` allows over the ``existing`` ones (those
    being deleted count: they hold their capacity until gone)."""
    limit = node_limit(pool)
    return 2**31 if limit is None else max(0, limit - existing)


def deprovisioning_priority(claim: NodeClaim) -> int:
    """``karpenter.sh/deprovisioning-priority``: higher goes first; 0 when absent or not
    an integer, as upstream's."""
    try:
        return int((claim.metadata.get("annotations") or {}).get(DEPROVISIONING_PRIORITY, 0))
    except ValueError:
        return 0


def template_plan(pool: NodePool, instance_types: Sequence[InstanceType]) -> NodeClaimPlan | None:
    """A NodeClaim of the pool's template with no pods: every instance type the template
    allows that has an offering, cheapest first (at most 60), or None when none does."""
    requirements = pool.requirements()
    typed = sorted(
        (
            _Typed(it, price)
            for it in instance_types
            if requirements.is_compatible(it.requirements)
            and (price := it.cheapest_price(requirements)) is not None
        ),
        key=lambda t: (t.price, t.instance_type.name),
    )[:MAX_INSTANCE_TYPES]
    if not typed:
        return None
    names = [t.instance_type.name for t in typed]
    return NodeClaimPlan(
        nodepool=pool.name,
        hostname="",
        requirements=requirement_dicts(requirements, names),
        instance_types=names,
        requests={},
        daemonset_overhead={},
        taints=[dict(t) for t in pool.template.taints],
        startup_taints=[dict(t) for t in pool.template.startup_taints],
        labels=pinned_labels(requirements),
        pods=[],
        price=typed[0].price,
    )
