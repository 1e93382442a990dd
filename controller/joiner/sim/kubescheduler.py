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
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.scheduling.model import ClusterSnapshot, ExistingNode, VolumeCatalog, pod_key
from joiner.scheduling.solver import solve
from joiner.sim.podindex import PodIndex, is_pending

KEY = "schedule"


def wakes_it(event_type: str, pod: dict[str, Any]) -> bool:
    """Pod events after which kube-scheduler tries again: a new pod to place, or room
    made by a pod that went away or finished. Updates of a pod still waiting (its own
    Unschedulable condition among them) change nothing it decides on."""
    if event_type == "DELETED":
        return True
    if event_type == "ADDED":
        return is_pending(pod)
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class KubeScheduler:
    name = "sim.kube-scheduler"

    def __init__(
        self, kube: KubeAPI, pods: PodIndex, nodes: Callable[[], list[dict[str, Any]]]
    ) -> None:
        self.kube, self.pods = kube, pods
        self.nodes = nodes  # the Nodes as the world's watch last delivered them
        # ExistingNode without pods, by node name, for the node object it was read from
        self._read: dict[str, tuple[dict[str, Any], ExistingNode]] = {}

    def reconcile(self, key: str) -> Result:
        pending = self.pods.pending()
        if not pending:
            return DONE
        nodes = [n for n in self.nodes() if not n["metadata"].get("deletionTimestamp")]
        snapshot = ClusterSnapshot(nodes=self._existing(nodes), volumes=self._volumes())
        plan = solve(pending, [], {}, snapshot)
        by_key = {pod_key(p): p for p in pending}
        for key_, node_name in plan.existing.items():
            pod = by_key[key_]
            with contextlib.suppress(Conflict, NotFound):
                self.kube.bind(pod["metadata"]["name"], pod["metadata"]["namespace"], node_name)
        for key_, why in plan.unplaceable.items():
            self._mark_unschedulable(by_key[key_], why.message)
        return DONE

    def _existing(self, nodes: list[dict[str, Any]]) -> list[ExistingNode]:
        read = {n["metadata"]["name"]: self._read_node(n) for n in nodes}
        self._read = read  # forgets the nodes that went
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
