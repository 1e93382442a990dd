"""Termination [SPEC 6.2]: a deleted NodeClaim (or its Node) is drained, its
instance terminated, and only then are the finalizers removed.

Drain order, one tier at a time: non-critical pods, non-critical daemonset pods,
critical pods, critical daemonset pods. Mirror pods and pods that tolerate the
disrupted taint are left alone. Evictions go through the Eviction API, so PDBs
hold them back (429 -> try again later); once ``terminationGracePeriod`` has
passed since deletion, remaining pods are deleted regardless.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.duration import parse_duration
from joiner.api.nodeclaim import NodeClaim
from joiner.clock import from_rfc3339
from joiner.cloudprovider.types import NodeClaimNotFoundError
from joiner.controllers.context import Controller
from joiner.controllers.runtime import DONE, Result
from joiner.events import NORMAL, WARNING
from joiner.kube.api import Conflict, KubeAPI, NotFound, TooManyRequests
from joiner.scheduling.taints import tolerates
from joiner.state.cluster import MIRROR_POD_ANNOTATION, ClusterState, is_terminal

log = logging.getLogger(__name__)

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
DRAIN_POLL = 1.0
EVICTION_BACKOFF = 5.0
TERMINATION_POLL = 5.0


def _is_daemon(pod: dict[str, Any]) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "DaemonSet" for o in owners)


def drain_tier(pod: dict[str, Any]) -> int:
    """0 non-critical, 1 non-critical daemonset, 2 critical, 3 critical daemonset."""
    critical = (pod.get("spec") or {}).get("priorityClassName") in CRITICAL_PRIORITY_CLASSES
    return 2 * critical + _is_daemon(pod)


def needs_drain(pod: dict[str, Any]) -> bool:
    """Pods that must leave before the instance goes."""
    meta = pod.get("metadata") or {}
    if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}) or is_terminal(pod):
        return False
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    return not any(tolerates(t, wk.DISRUPTED_TAINT) for t in tolerations)


class Termination(Controller):
    name = "nodeclaim.termination"

    def reconcile(self, key: str) -> Result:
        raw = self.fresh("NodeClaim", key)
        if raw is None:
            return DONE
        meta = raw["metadata"]
        if not meta.get("deletionTimestamp") or wk.TERMINATION_FINALIZER not in (
            meta.get("finalizers") or ()
        ):
            return DONE
        try:
            return self._terminate(NodeClaim.from_dict(raw), raw)
        except Conflict:
            return Result(requeue_after=0.0)

    def _terminate(self, claim: NodeClaim, raw: dict[str, Any]) -> Result:
        node = self.state.node_by_provider_id(claim.status.provider_id)
        if node is not None and not self._instance_gone_and_not_ready(claim, node):
            self._taint(node)
            if not self._termination_timestamp_passed(claim):
                waiting = self._drain(claim, node)
                if waiting is not None:
                    return waiting
                self._set_condition(raw, nc.DRAINED)
        if not self._instance_gone(claim):
            self._set_condition(raw, nc.INSTANCE_TERMINATING)
            return Result(requeue_after=TERMINATION_POLL)
        if node is not None:
            self._release_node(node)
        self._remove_finalizer("NodeClaim", raw)
        self.metrics.nodeclaims_terminated.labels(claim.nodepool or "").inc()
        self.recorder.record(raw, NORMAL, "Terminated", "Instance terminated, NodeClaim removed")
        return DONE

    # --- drain -----------------------------------------------------------------------

    def _drain(self, claim: NodeClaim, node: dict[str, Any]) -> Result | None:
        """Evict the current tier; None once nothing is left to drain."""
        pods = [p for p in self.state.pods_on(node["metadata"]["name"]) if needs_drain(p)]
        if not pods:
            return None
        if self._grace_period_over(claim):
            for pod in pods:
                self._force_delete(pod)
            return Result(requeue_after=DRAIN_POLL)
        tier = min(drain_tier(p) for p in pods)
        blocked = False
        for pod in pods:
            if drain_tier(pod) != tier or pod["metadata"].get("deletionTimestamp"):
                continue
            blocked |= not self._evict(pod)
        return Result(requeue_after=EVICTION_BACKOFF if blocked else DRAIN_POLL)

    def _evict(self, pod: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        try:
            self.kube.evict(meta["name"], meta.get("namespace") or "default")
        except TooManyRequests as err:
            self.recorder.record(pod, WARNING, "FailedDraining", f"Eviction blocked: {err}")
            return False
        except NotFound:
            return True
        self.recorder.record(pod, NORMAL, "Evicted", "Evicted pod: node is being terminated")
        return True

    def _force_delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(NotFound):
            self.kube.delete("Pod", meta["name"], meta.get("namespace") or "default")
        self.recorder.record(pod, WARNING, "Deleted", "terminationGracePeriod elapsed")

    def _grace_period_over(self, claim: NodeClaim) -> bool:
        if claim.termination_grace_period is None:
            return False
        grace = parse_duration(claim.termination_grace_period)
        deleted = from_rfc3339(claim.metadata["deletionTimestamp"])
        return grace is not None and self.clock.now() >= deleted + grace

    def _termination_timestamp_passed(self, claim: NodeClaim) -> bool:
        """Node repair stamps the time by which the node must go [REPAIR-5]: past it, the
        node is not drained (its pods are left to the pod garbage collector)."""
        stamp = (claim.metadata.get("annotations") or {}).get(wk.NODECLAIM_TERMINATION_TIMESTAMP)
        if not stamp:
            return False
        try:
            return self.clock.now() >= from_rfc3339(stamp)
        except ValueError:
            return False

    # --- instance and node -------------------------------------------------------------

    def _instance_gone(self, claim: NodeClaim) -> bool:
        if not claim.status.provider_id:
            return True  # never launched
        try:
            self.cloud.delete(claim)
        except NodeClaimNotFoundError:
            return True
        return False

    def _instance_gone_and_not_ready(self, claim: NodeClaim, node: dict[str, Any]) -> bool:
        """A NotReady node whose instance is gone is finalized without a drain."""
        ready = cond.is_true((node.get("status") or {}).get("conditions"), "Ready")
        if ready or not claim.status.provider_id:
            return False
        try:
            self.cloud.get(claim.status.provider_id)
        except NodeClaimNotFoundError:
            return True
        return False

    def _taint(self, node: dict[str, Any]) -> None:
        taints = (node.get("spec") or {}).get("taints") or []
        if any(t.get("key") == wk.DISRUPTED_TAINT_KEY for t in taints):
            return
        node = copy.deepcopy(node)  # the state's object: never edited in place
        node.setdefault("spec", {})["taints"] = [*taints, dict(wk.DISRUPTED_TAINT)]
        self.kube.update(node)

    def _release_node(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        with contextlib.suppress(NotFound):
            self.kube.delete("Node", name)
            self._remove_finalizer("Node", self.kube.get("Node", name))

    def _remove_finalizer(self, kind: str, obj: dict[str, Any]) -> None:
        finalizers = obj["metadata"].get("finalizers") or []
        if wk.TERMINATION_FINALIZER not in finalizers:
            return
        obj["metadata"]["finalizers"] = [f for f in finalizers if f != wk.TERMINATION_FINALIZER]
        with contextlib.suppress(NotFound):
            self.kube.update(obj)

    def _set_condition(self, raw: dict[str, Any], type_: str) -> None:
        conditions = raw.setdefault("status", {}).setdefault("conditions", [])
        if cond.set_condition(conditions, type_, cond.TRUE, self.clock.now()):
            updated = self.kube.update_status(raw)
            raw["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]


class NodeFinalizer:
    """A Node deleted directly (e.g. ``kubectl delete node``) takes its NodeClaim with it;
    the NodeClaim's termination then drains and releases the Node."""

    name = "node.termination"

    def __init__(self, kube: KubeAPI, state: ClusterState) -> None:
        self.kube, self.state = kube, state

    def reconcile(self, key: str) -> Result:
        node = self.state.nodes.get(key)
        if node is None or not node["metadata"].get("deletionTimestamp"):
            return DONE
        claim = self.state.nodeclaim_by_provider_id((node.get("spec") or {}).get("providerID"))
        if claim is not None:
            with contextlib.suppress(NotFound):
                self.kube.delete("NodeClaim", claim.name)
        return DONE
