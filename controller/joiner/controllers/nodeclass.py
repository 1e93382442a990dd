"""EC2NodeClass status and termination.

The cloud provider resolves selectors (subnets, security groups, AMIs, instance
profile) into status and conditions; this controller writes them and the static
drift hash. It looks again every 5 minutes, and at the moment a capacity reservation of
the class goes expiring or ends, so its status says so at that moment. A class carries a
finalizer: when it is deleted, it stays until no NodeClaim uses it, then the provider
removes what it created for it (launch templates, instance profiles), so nothing is left
behind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import Clock
from joiner.cloudprovider.aws.capacityreservations import next_change
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.state.cluster import ClusterState

# (nodeclass) -> the complete status dict, including its conditions.
Resolver = Callable[[EC2NodeClass], dict[str, Any]]
Finalizer = Callable[[EC2NodeClass], None]

RESOLVE_INTERVAL = 300.0  # selectors can match new resources: look again periodically
TERMINATION_POLL = 10.0


class NodeClassStatus:
    name = "nodeclass.status"

    def __init__(
        self,
        kube: KubeAPI,
        state: ClusterState,
        clock: Clock,
        resolve: Resolver,
        finalize: Finalizer,
    ) -> None:
        self.kube, self.state, self.clock = kube, state, clock
        self.resolve, self.finalize = resolve, finalize

    def reconcile(self, key: str) -> Result:
        try:
            raw = self.kube.get("EC2NodeClass", key)
        except NotFound:
            return DONE
        nodeclass = EC2NodeClass.from_dict(raw)
        try:
            if raw["metadata"].get("deletionTimestamp"):
                return self._terminate(raw, nodeclass)
            self._ensure_finalizer(raw)
            self._write_hash(raw, nodeclass.static_hash())
            status = self.resolve(nodeclass)
            if status != raw.get("status"):
                raw["status"] = status
                self.kube.update_status(raw)
        except Conflict:
            return Result(requeue_after=0.0)
        return Result(requeue_after=self._next_look(status))

    def _next_look(self, status: dict[str, Any]) -> float:
        now = self.clock.now()
        change = next_change(status.get("capacityReservations") or [], now)
        return RESOLVE_INTERVAL if change is None else min(RESOLVE_INTERVAL, change - now)

    def _terminate(self, raw: dict[str, Any], nodeclass: EC2NodeClass) -> Result:
        users = [
            c.name
            for c in self.state.nodeclaims.values()
            if c.node_class_ref.name == nodeclass.name
        ]
        if users:
            return Result(requeue_after=TERMINATION_POLL)  # their instances still need it
        self.finalize(nodeclass)
        finalizers = raw["metadata"].get("finalizers") or []
        raw["metadata"]["finalizers"] = [f for f in finalizers if f != wk.NODECLASS_FINALIZER]
        self.kube.update(raw)
        return DONE

    def _ensure_finalizer(self, raw: dict[str, Any]) -> None:
        finalizers = raw["metadata"].setdefault("finalizers", [])
        if wk.NODECLASS_FINALIZER not in finalizers:
            finalizers.append(wk.NODECLASS_FINALIZER)
            updated = self.kube.update(raw)
            raw["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]

    def _write_hash(self, raw: dict[str, Any], digest: str) -> None:
        annotations = raw["metadata"].setdefault("annotations", {})
        if annotations.get(wk.EC2NODECLASS_HASH) == digest:
            return
        annotations[wk.EC2NODECLASS_HASH] = digest
        raw["metadata"]["resourceVersion"] = self.kube.update(raw)["metadata"]["resourceVersion"]
