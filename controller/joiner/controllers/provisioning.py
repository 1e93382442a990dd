"""Provisioning [SPEC 3]: batch provisionable pods, solve, create NodeClaims.

What ``trigger``s a batch, as Karpenter's pod and node trigger controllers: a
provisionable pod, and a Node tainted ``karpenter.sh/disrupted`` (being disrupted or
deleted), whose pods need room before they are evicted, pending pods or not. The batch
closes when nothing new has arrived for ``batch_idle`` seconds, or ``batch_max`` after
it opened; then one scheduling pass places the pending pods and those of the nodes
going away on existing and in-flight capacity and opens NodeClaims for the rest. Then
the CapacityBuffers' chunks get what is left, and NodeClaims of their own where that is
not enough (``joiner.buffers.holding``); the buffer controller opens a batch when some
chunk is not held.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.conditions import is_true
from joiner.api.nodepool import NodePool, by_weight
from joiner.buffers.holding import Buffers, Chunks, plan_chunks
from joiner.clock import Clock
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.context import Controller, ControllerContext
from joiner.controllers.runtime import DONE, NOT_SYNCED, Result
from joiner.events import NORMAL, WARNING
from joiner.kube.api import ApiError
from joiner.ratelimit import TokenBucket
from joiner.scheduling.model import ClusterSnapshot, NodeClaimPlan, Plan, pod_key
from joiner.scheduling.solver import solve
from joiner.scheduling.taints import same_taint
from joiner.state.cluster import is_provisionable

log = logging.getLogger(__name__)

CREATED_REASON = "provisioning"  # the reason label of karpenter_nodeclaims_created_total

BATCH_KEY = "batch"
# Nominated Events are capped as Karpenter caps them (one limiter for every pod): a
# burst of a thousand pods is told in about ten Events rather than a thousand requests
# ahead of the next NodeClaim's; every nomination is still kept in the state.
NOMINATED_EVENTS_QPS, NOMINATED_EVENTS_BURST = 5.0, 10


class Batcher:
    """The batch window [SPEC 3.2]: idle timeout from the last new pod, capped by a
    maximum from the first; pods seen before do not extend it."""

    def __init__(self, clock: Clock, idle: float, maximum: float) -> None:
        self.clock, self.idle, self.maximum = clock, idle, maximum
        self._opened: float | None = None
        self._last: float = 0.0
        self._seen: set[str] = set()

    def trigger(self, key: str) -> bool:
        """Note a provisionable pod; True when this opened a new window."""
        now = self.clock.now()
        opened = self._opened is None
        if opened:
            self._opened, self._seen = now, set()
        if key not in self._seen:
            self._seen.add(key)
            self._last = now
        return opened

    def remaining(self) -> float | None:
        """Seconds until the window closes (0 when closed), None when no window is open."""
        if self._opened is None:
            return None
        closes = min(self._last + self.idle, self._opened + self.maximum)
        return max(0.0, closes - self.clock.now())

    def close(self) -> None:
        self._opened = None


class Provisioner(Controller):
    name = "provisioner"

    def __init__(
        self,
        ctx: ControllerContext,
        batch_idle: float = 1.0,
        batch_max: float = 10.0,
        creates_at_once: int = 1,
        buffers: Buffers | None = None,
    ) -> None:
        """``creates_at_once``: NodeClaims of one plan created concurrently, as Karpenter
        creates a batch's all at once (their API round trips overlap); one keeps the
        order of creation, which the simulator's reproducible runs need. ``buffers``: the
        CapacityBuffers whose chunks each pass holds capacity for."""
        if creates_at_once < 1:
            raise ValueError("creates_at_once must be >= 1")
        super().__init__(ctx)
        self.batcher = Batcher(ctx.clock, batch_idle, batch_max)
        self._creates_at_once = creates_at_once
        self.buffers = buffers
        self.last_plan: Plan | None = None
        self._nominated_events = TokenBucket(
            NOMINATED_EVENTS_QPS, NOMINATED_EVENTS_BURST, monotonic=ctx.clock.now
        )

    def on_pod(self, pod: dict[str, Any]) -> str | None:
        """Watch hook: returns the key to enqueue when the pod opens a batch."""
        return self._trigger(pod_key(pod)) if is_provisionable(pod) else None

    def on_node(self, node: dict[str, Any]) -> str | None:
        """Watch hook: returns the key to enqueue when the node, tainted for disruption,
        opens a batch (the module docstring says why)."""
        taints = (node.get("spec") or {}).get("taints") or ()
        if not any(same_taint(t, wk.DISRUPTED_TAINT) for t in taints):
            return None
        return self._trigger(f"Node/{node['metadata']['name']}")

    def on_buffers(self) -> str | None:
        """Some buffer chunk is not held: returns the key to enqueue when this opens a
        batch."""
        return self._trigger("CapacityBuffers")

    def _trigger(self, key: str) -> str | None:
        return BATCH_KEY if self.batcher.trigger(key) else None

    def reconcile(self, key: str) -> Result:
        remaining = self.batcher.remaining()
        if remaining is None:
            return DONE
        if remaining > 0:
            return Result(requeue_after=remaining)
        if not self.state.synced:
            return NOT_SYNCED
        # Closed once it is acted on: if creating a NodeClaim fails, the retry (the
        # runtime's backoff) finds the window still closing and provisions again.
        self.provision()
        self.batcher.close()
        return DONE

    def provision(self) -> Plan | None:
        """Plan for the pending pods together with the pods of the nodes going away
        [SCHED-3], as Karpenter's ``Provisioner.Schedule``: a drain held by a
        PodDisruptionBudget gets room for all its pods in one decision, not a node per
        eviction. Those nodes are out of the snapshot, so their pods do not stay put."""
        pending = self.state.provisionable_pods()
        self.metrics.pending_pods.set(len(pending))
        pods = pending + self.state.leaving_pods()
        buffers = self.buffers.groups() if self.buffers is not None else ()
        if not pods and not buffers:
            return None
        pools = self.ready_nodepools()
        instance_types = {pool.name: self._instance_types(pool) for pool in pools}
        snapshot = self.state.snapshot(exclude=self.state.marked_for_deletion)
        started = time.perf_counter()  # compute time for the metric, not a decision input
        plan = solve(pods, pools, instance_types, snapshot)
        self.metrics.scheduling_duration.observe(time.perf_counter() - started)
        self.metrics.unschedulable_pods.set(len(plan.unplaceable))
        by_key = {pod_key(p): p for p in pods}
        self._act_on(plan, by_key)
        self.last_plan = plan
        if buffers:
            self._hold_chunks(buffers, plan, by_key, snapshot, pools, instance_types)
        return plan

    def _hold_chunks(
        self,
        buffers: Sequence[Chunks],
        plan: Plan,
        pods: dict[str, dict[str, Any]],
        snapshot: ClusterSnapshot,
        pools: list[NodePool],
        instance_types: dict[str, Sequence[InstanceType]],
    ) -> None:
        """Launch what the buffers' chunks need beyond what the pending pods leave."""
        assert self.buffers is not None
        chunk_plan = plan_chunks(buffers, plan, pods, snapshot, pools, instance_types)
        created = [c for c in self._create_all(chunk_plan.nodeclaims) if isinstance(c, dict)]
        names = [c["metadata"]["name"] for c in created]
        self.buffers.planned(chunk_plan.unplaceable, names, self.clock.now())
        failures = len(chunk_plan.nodeclaims) - len(created)
        if failures:
            log.warning("%d NodeClaim(s) for buffer capacity not created", failures)

    def ready_nodepools(self) -> list[NodePool]:
        """NodePools the scheduler may launch for, in the order it tries them. Static ones
        never launch for pods, gate on or off, as upstream's [STATIC-1]."""
        ready = [pool for pool in self.state.nodepools.values() if not pool.is_static]
        return by_weight(p for p in ready if self.is_ready(p))

    def is_ready(self, pool: NodePool) -> bool:
        """Not being deleted, and its node class is ready."""
        return not pool.metadata.get("deletionTimestamp") and self._nodeclass_ready(pool)

    def _nodeclass_ready(self, pool: NodePool) -> bool:
        nodeclass = self.state.nodeclasses.get(pool.template.node_class_ref.name)
        return nodeclass is not None and is_true(nodeclass.status.get("conditions"), "Ready")

    def _instance_types(self, pool: NodePool) -> Sequence[InstanceType]:
        return self.cloud.get_instance_types(pool)

    def _act_on(self, plan: Plan, pods: dict[str, dict[str, Any]]) -> None:
        for key, node_name in plan.existing.items():
            self._nominate(pods[key], f"node/{node_name}", node_name)
        failures: list[ApiError] = []
        results = self._create_all(plan.nodeclaims)
        for claim_plan, created in zip(plan.nodeclaims, results, strict=True):
            if isinstance(created, ApiError):
                failures.append(created)
                continue
            name = created["metadata"]["name"]
            for key in claim_plan.pods:
                self._nominate(pods[key], f"nodeclaim/{name}", name)
        for key, why in plan.unplaceable.items():
            self.recorder.record(
                pods[key],
                WARNING,
                "FailedScheduling",
                f"Failed to schedule pod, {why.message}",
            )
        if failures:  # the pods of the NodeClaims created are nominated; the rest wait
            raise failures[0]

    def _create_all(self, plans: list[NodeClaimPlan]) -> list[dict[str, Any] | ApiError]:
        """Every planned NodeClaim, the created object or why not, in plan order."""

        def attempt(plan: NodeClaimPlan) -> dict[str, Any] | ApiError:
            try:
                return self._create_nodeclaim(plan)
            except ApiError as error:
                return error

        if self._creates_at_once == 1 or len(plans) < 2:
            return [attempt(p) for p in plans]
        with ThreadPoolExecutor(min(self._creates_at_once, len(plans))) as pool:
            return list(pool.map(attempt, plans))

    def _nominate(self, pod: dict[str, Any], target: str, node_name: str) -> None:
        self.state.nominate(pod_key(pod), node_name)
        if self._nominated_events.try_acquire():
            self.recorder.record(pod, NORMAL, "Nominated", f"Pod should schedule on: {target}")

    def _create_nodeclaim(self, plan: NodeClaimPlan) -> dict[str, Any]:
        pool = self.state.nodepools[plan.nodepool]
        manifest = nodeclaim_manifest(pool, plan)
        created = self.kube.create(manifest)
        self.metrics.nodeclaims_created.labels(plan.nodepool, CREATED_REASON).inc()
        log.info(
            "created nodeclaim",
            extra={
                "nodeclaim": created["metadata"]["name"],
                "nodepool": plan.nodepool,
                "instance_types": len(plan.instance_types),
                "pods": len(plan.pods),
            },
        )
        return created


def nodeclaim_manifest(pool: NodePool, plan: NodeClaimPlan) -> dict[str, Any]:
    """The NodeClaim for one plan entry: the pool's template plus what the plan decided,
    stamped with the pool's hash for drift detection (the cloud provider stamps its node
    class's hash when it launches)."""
    template = pool.template
    labels = {
        **template.labels,
        **plan.labels,
        wk.NODEPOOL: pool.name,
        wk.EC2NODECLASS: template.node_class_ref.name,
    }
    spec: dict[str, Any] = {
        "nodeClassRef": template.node_class_ref.to_dict(),
        "requirements": plan.requirements,
        "resources": {"requests": res.format_resource_list(plan.requests)},
        "expireAfter": template.expire_after,
    }
    if plan.taints:
        spec["taints"] = plan.taints
    if plan.startup_taints:
        spec["startupTaints"] = plan.startup_taints
    if template.termination_grace_period is not None:
        spec["terminationGracePeriod"] = template.termination_grace_period
    return {
        "apiVersion": wk.API_VERSION,
        "kind": "NodeClaim",
        "metadata": {
            "generateName": f"{pool.name}-",
            "labels": labels,
            "annotations": {
                **template.annotations,
                wk.NODEPOOL_HASH: pool.template_hash(),
            },
            "finalizers": [wk.TERMINATION_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": wk.API_VERSION,
                    "kind": "NodePool",
                    "name": pool.name,
                    "uid": pool.metadata.get("uid", ""),
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }
