"""An emulated kube-scheduler: binds pending pods to Ready nodes where they fit,
and marks the rest Unschedulable (which is what wakes the provisioner).

It reuses the scheduler's own predicates (resources, taints, selectors and
affinity, topology spread, host ports, volumes) by solving with existing nodes
only, so "fits" means the same thing to both.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from joiner.api import resources as res
from joiner.clock import Clock
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.scheduling.model import ClusterSnapshot, ExistingNode, VolumeCatalog, pod_key
from joiner.scheduling.solver import solve
from joiner.sim.podindex import PodIndex, is_pending

KEY = "schedule"


# kube-scheduler's defaults (podInitialBackoffSeconds, podMaxBackoffSeconds): a pod that
# did not fit is tried again after 1 s, 2 s, 4 s ... at most 10 s, and only once
# something it depends on changed since its last attempt.
INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0


@dataclasses.dataclass(slots=True)
class _Failed:
    """The last unsuccessful attempt at a pending pod."""

    attempts: int
    retry_at: float  # the end of its backoff
    generation: int  # the scheduler's generations when it was tried
    bound_generation: int
    constrained: bool  # it has topology spread or pod (anti-)affinity terms


class KubeScheduler:
    """Binds pending pods in passes. A pass tries the pods never tried and the pods
    that failed whose backoff is over and for which something changed since: a node
    came, went or changed what it offers, a bound pod went away (room freed) or, for
    pods with topology spread or pod affinity terms, a pod was bound. Pods that still
    do not fit keep their condition unless its message changed. The engine runs a pass
    once the other work of the instant is done, so a burst of nodes joining together
    is one pass, not one per node."""

    name = "sim.kube-scheduler"

    def __init__(
        self,
        kube: KubeAPI,
        clock: Clock,
        pods: PodIndex,
        nodes: Callable[[], list[dict[str, Any]]],
    ) -> None:
        self.kube, self.clock, self.pods = kube, clock, pods
        self.nodes = nodes  # the Nodes as the world's watch last delivered them
        # ExistingNode without pods, by node name, for the node object it was read from
        self._read: dict[str, tuple[dict[str, Any], ExistingNode]] = {}
        self._failed: dict[str, _Failed] = {}  # by pod key
        self._failed_constrained: set[str] = set()  # keys of those that are constrained
        self._generation = 0  # changes that may let any pod fit
        self._bound_generation = 0  # pods bound: may let constrained pods fit

    # --- what may let a pod fit, from the world's watch ------------------------------

    def on_pod(self, event_type: str, pod: dict[str, Any]) -> bool:
        """Note a pod event; True when a pass should follow."""
        node = (pod.get("spec") or {}).get("nodeName")
        if event_type == "ADDED" and is_pending(pod):
            return True
        if event_type == "DELETED" or not is_pending(pod):
            self._forget(pod_key(pod))
        if not node:
            return False
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if event_type == "DELETED" or phase in ("Succeeded", "Failed"):
            self._generation += 1  # room freed on its node
            return bool(self._failed)
        if phase == "Pending":  # just bound: counts for spread and affinity
            self._bound_generation += 1
            return bool(self._failed_constrained)
        return False

    def on_node(self, event_type: str, node: dict[str, Any]) -> bool:
        """Note a node event; True when a pass should follow."""
        name = node["metadata"]["name"]
        if event_type == "DELETED":
            self._read.pop(name, None)
        elif not self._offers_something_new(node):
            return False
        self._generation += 1
        return bool(self._failed)

    def _offers_something_new(self, node: dict[str, Any]) -> bool:
        """Whether what the scheduler reads of the node (labels, allocatable, taints,
        Ready, cordon, deletion) differs from the version it last read."""
        known = self._read.get(node["metadata"]["name"])
        if known is None:
            return True
        old, existing = known
        if bool(old["metadata"].get("deletionTimestamp")) != bool(
            node["metadata"].get("deletionTimestamp")
        ):
            return True
        fresh = self._read_node(node)[1]
        self._read[existing.name] = (node, fresh)
        return (fresh.labels, fresh.allocatable, fresh.taints) != (
            existing.labels,
            existing.allocatable,
            existing.taints,
        )

    # --- passes ----------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        now = self.clock.now()
        due = [p for p in self.pods.pending() if self._is_due(pod_key(p), now)]
        if due:
            self._attempt(due, now)
        return self._next_retry(now)

    def _is_due(self, key: str, now: float) -> bool:
        failed = self._failed.get(key)
        return failed is None or (failed.retry_at <= now and self._changed_since(failed))

    def _changed_since(self, failed: _Failed) -> bool:
        if failed.constrained and failed.bound_generation < self._bound_generation:
            return True
        return failed.generation < self._generation

    def _next_retry(self, now: float) -> Result:
        """Wake again when the first backoff ends of a pod that something changed for."""
        waiting = [f.retry_at for f in self._failed.values() if self._changed_since(f)]
        return Result(requeue_after=max(0.0, min(waiting) - now)) if waiting else DONE

    def _attempt(self, pending: list[dict[str, Any]], now: float) -> None:
        nodes = [n for n in self.nodes() if not n["metadata"].get("deletionTimestamp")]
        snapshot = ClusterSnapshot(nodes=self._existing(nodes), volumes=self._volumes())
        plan = solve(pending, [], {}, snapshot)
        by_key = {pod_key(p): p for p in pending}
        for key_, node_name in plan.existing.items():
            pod = by_key[key_]
            with contextlib.suppress(Conflict, NotFound):
                self.kube.bind(pod["metadata"]["name"], pod["metadata"]["namespace"], node_name)
        for key_, why in plan.unplaceable.items():
            self._remember(key_, self._backoff(key_, by_key[key_], now))
            self._mark_unschedulable(by_key[key_], why.message)

    def _remember(self, key: str, failed: _Failed) -> None:
        self._failed[key] = failed
        if failed.constrained:
            self._failed_constrained.add(key)

    def _forget(self, key: str) -> None:
        self._failed.pop(key, None)
        self._failed_constrained.discard(key)

    def _backoff(self, key: str, pod: dict[str, Any], now: float) -> _Failed:
        previous = self._failed.get(key)
        attempts = previous.attempts + 1 if previous else 1
        delay = min(MAX_BACKOFF, INITIAL_BACKOFF * 2 ** (attempts - 1))
        return _Failed(
            attempts, now + delay, self._generation, self._bound_generation, _constrained(pod)
        )

    def _existing(self, nodes: list[dict[str, Any]]) -> list[ExistingNode]:
        read = {n["metadata"]["name"]: self._read_node(n) for n in nodes}
        self._read.update(read)
        return [
            dataclasses.replace(existing, pods=self.pods.on_node(name))
            for name, (_, existing) in read.items()
        ]

    def _read_node(self, node: dict[str, Any]) -> tuple[dict[str, Any], ExistingNode]:
        """The node as the scheduler sees it, read once per version of the object."""
        known = self._read.get(node["metadata"]["name"])
        if known is not None and known[0] is node:
            return known
        existing = ExistingNode(
            name=node["metadata"]["name"],
            labels=dict(node["metadata"].get("labels") or {}),
            allocatable=res.parse_resource_list((node.get("status") or {}).get("allocatable")),
            # The API server and the node lifecycle controller keep the not-ready and
            # unschedulable taints on the Node itself, as kube-scheduler reads them.
            taints=list((node.get("spec") or {}).get("taints") or []),
        )
        return node, existing

    def _volumes(self) -> VolumeCatalog:
        def by_key(kind: str) -> dict[str, dict[str, Any]]:
            items = self.kube.list(kind).items
            return {
                (f"{o['metadata']['namespace']}/" if o["metadata"].get("namespace") else "")
                + o["metadata"]["name"]: o
                for o in items
            }

        return VolumeCatalog(
            claims=by_key("PersistentVolumeClaim"),
            volumes=by_key("PersistentVolume"),
            storage_classes=by_key("StorageClass"),
        )

    def _mark_unschedulable(self, pod: dict[str, Any], why: str) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        marked = {"type": "PodScheduled", "status": "False", "message": why}
        if any(all(c.get(k) == v for k, v in marked.items()) for c in conditions):
            return  # unchanged: rewriting would only re-trigger the provisioner
        # Changed (say, nodes joined and it still does not fit): kube-scheduler updates the
        # condition, and that pod event is what makes the provisioner look at it again.
        scheduled = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": why,  # "0/N nodes are available: ..." as kube-scheduler says it
        }
        # A new pod dict with a new status: the index's object is shared and left as it is.
        status = {
            **(pod.get("status") or {}),
            "conditions": [*(c for c in conditions if c.get("type") != "PodScheduled"), scheduled],
        }
        pod = {**pod, "status": status}
        with contextlib.suppress(Conflict, NotFound):
            self.kube.update_status(pod)


def _constrained(pod: dict[str, Any]) -> bool:
    """Whether where other pods run can decide where this one fits."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    return bool(
        spec.get("topologySpreadConstraints")
        or affinity.get("podAffinity")
        or affinity.get("podAntiAffinity")
    )
