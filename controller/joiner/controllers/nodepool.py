"""NodePool status [SPEC 1]: resources and nodes of the pool, readiness conditions,
and the drift hash annotation [API-1]."""

from __future__ import annotations

import copy
from collections.abc import Callable

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool
from joiner.clock import Clock
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.metrics import Metrics
from joiner.state.cluster import ClusterState

Validator = Callable[[dict], list]


class NodePoolStatus:
    name = "nodepool.status"

    def __init__(
        self,
        kube: KubeAPI,
        state: ClusterState,
        clock: Clock,
        metrics: Metrics,
        validate: Validator,
    ) -> None:
        self.kube, self.state, self.clock, self.metrics = kube, state, clock, metrics
        self.validate = validate

    def reconcile(self, key: str) -> Result:
        try:
            raw = self.kube.get("NodePool", key)
        except NotFound:
            return DONE
        pool = self.state.nodepools.get(key)
        if pool is None:
            return Result(requeue_after=1.0)
        try:
            self._write_hash(raw, pool.template_hash())
            self._write_status(raw, key)
        except Conflict:
            return Result(requeue_after=0.0)
        return DONE

    def _write_hash(self, raw: dict, digest: str) -> None:
        annotations = raw["metadata"].setdefault("annotations", {})
        if annotations.get(wk.NODEPOOL_HASH) == digest:
            return
        annotations[wk.NODEPOOL_HASH] = digest
        raw["metadata"]["resourceVersion"] = self.kube.update(raw)["metadata"]["resourceVersion"]

    def _write_status(self, raw: dict, name: str) -> None:
        usage = self.state.nodepool_usage(name)
        nodes = usage.pop(res.NODES) // 1000
        status = copy.deepcopy(raw.get("status") or {})
        status["resources"] = res.format_resource_list(usage)
        status["nodes"] = nodes
        conditions = status.setdefault("conditions", [])
        now = self.clock.now()
        errors = self.validate(raw)
        valid = cond.TRUE if not errors else cond.FALSE
        cond.set_condition(
            conditions, "ValidationSucceeded", valid, now, message="; ".join(str(e) for e in errors)
        )
        class_ready = self._nodeclass_ready(raw)
        cond.set_condition(
            conditions,
            "NodeClassReady",
            cond.TRUE if class_ready else cond.FALSE,
            now,
            message="" if class_ready else "node class not found or not ready",
        )
        ready = cond.TRUE if not errors and class_ready else cond.FALSE
        cond.set_condition(conditions, "Ready", ready, now)
        self._export(name, usage, raw)
        if status != raw.get("status"):
            raw["status"] = status
            self.kube.update_status(raw)

    def _nodeclass_ready(self, raw: dict) -> bool:
        ref = ((raw.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeClassRef")
        nodeclass = self.state.nodeclasses.get((ref or {}).get("name", ""))
        return nodeclass is not None and cond.is_true(nodeclass.status.get("conditions"), "Ready")

    def _export(self, name: str, usage: res.ResourceList, raw: dict) -> None:
        for resource, amount in usage.items():
            self.metrics.nodepool_usage.labels(name, resource).set(amount / 1000)
        # as the scheduler applies them: a negative limit is 0, an unreadable one none
        limits = NodePool.from_dict(raw).limits_milli
        for resource, amount in limits.items():
            self.metrics.nodepool_limit.labels(name, resource).set(amount / 1000)
