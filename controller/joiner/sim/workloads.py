"""Emulated workload controllers: Deployment -> ReplicaSet -> Pods, Job, DaemonSet.

Enough of kube-controller-manager for scenarios to behave as in a cluster:
scaling a Deployment adds or removes pods, evicted pods are replaced, Jobs run
pods to completion, DaemonSets put one pod on every node that takes it.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from collections import Counter
from typing import Any

from joiner.api.labels import POD_DELETION_COST
from joiner.api.requirements import Requirements
from joiner.controllers.runtime import DONE, Result
from joiner.identity import IdentityCache
from joiner.kube.api import AlreadyExists, KubeAPI, NotFound
from joiner.kube.selectors import selector_from_label_selector
from joiner.scheduling.taints import untolerated
from joiner.sim.podindex import PodIndex

# A pod template annotation: how long a Job's pod runs before it succeeds.
RUN_DURATION_ANNOTATION = "sim.joiner.dev/run-duration"
OWNERS_KEPT = 4_096  # owners whose matching pods are remembered


def _owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = owner["metadata"]["uid"]
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or ())


def is_active(pod: dict[str, Any]) -> bool:
    terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    return not terminal and not pod["metadata"].get("deletionTimestamp")


def pod_from_template(
    owner: dict[str, Any], template: dict[str, Any], node_name: str | None = None
) -> dict[str, Any]:
    meta = copy.deepcopy(template.get("metadata") or {})
    spec = copy.deepcopy(template.get("spec") or {})
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{owner['metadata']['name']}-",
            "namespace": owner["metadata"].get("namespace") or "default",
            "labels": meta.get("labels") or {},
            "annotations": meta.get("annotations") or {},
            "ownerReferences": [_owner_ref(owner)],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


class Workloads:
    """One reconciler for every workload kind; keys are ``Kind/namespace/name``."""

    name = "sim.workloads"

    def __init__(self, kube: KubeAPI, pods: PodIndex) -> None:
        self.kube, self.pods = kube, pods
        # An owner's matching pods, by its owned list (the same list until one of them
        # changes) and its namespace and selector: owners are reconciled on every change
        # of their pod count, and most of their pods are the same.
        self._matching: IdentityCache[list[dict[str, Any]]] = IdentityCache(OWNERS_KEPT)

    def reconcile(self, key: str) -> Result:
        kind, namespace, name = key.split("/", 2)
        try:
            obj = self.kube.get(kind, name, namespace)
        except NotFound:
            return DONE
        if obj["metadata"].get("deletionTimestamp"):
            return DONE
        getattr(self, f"_{kind.lower()}")(obj)
        return DONE

    def _pods_of(self, owner: dict[str, Any]) -> list[dict[str, Any]]:
        """The owner's pods in its namespace that its selector matches (read-only)."""
        selector = (owner.get("spec") or {}).get("selector")
        namespace = owner["metadata"].get("namespace") or "default"
        owned = self.pods.owned_by(owner["metadata"]["uid"])

        def matching() -> list[dict[str, Any]]:
            matches = selector_from_label_selector(selector).matches if selector else None
            return [
                p
                for p in owned
                if p["metadata"].get("namespace") == namespace
                and (matches is None or matches(p["metadata"].get("labels") or {}))
            ]

        key = (namespace, json.dumps(selector, sort_keys=True))
        return self._matching.remember((owned,), matching, key=key, slot=owner["metadata"]["uid"])

    # --- Deployment: one ReplicaSet per template, the old ones scaled to zero --------

    def _deployment(self, deployment: dict[str, Any]) -> None:
        spec = deployment.get("spec") or {}
        template = spec.get("template") or {}
        digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
        rs_name = f"{deployment['metadata']['name']}-{digest}"
        namespace = deployment["metadata"].get("namespace") or "default"
        replicas = int(spec.get("replicas", 1))
        for rs in self.kube.list("ReplicaSet", namespace).items:
            if _owned_by(rs, deployment) and rs["metadata"]["name"] != rs_name:
                self._scale_replicaset(rs, 0)
        try:
            current = self.kube.get("ReplicaSet", rs_name, namespace)
        except NotFound:
            self._create_replicaset(deployment, rs_name, template, replicas)
            return
        self._scale_replicaset(current, replicas)

    def _create_replicaset(
        self, deployment: dict[str, Any], name: str, template: dict[str, Any], replicas: int
    ) -> None:
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": deployment["metadata"].get("namespace") or "default",
                "labels": (template.get("metadata") or {}).get("labels") or {},
                "ownerReferences": [_owner_ref(deployment)],
            },
            "spec": {
                "replicas": replicas,
                "selector": (deployment.get("spec") or {}).get("selector"),
                "template": template,
            },
        }
        with contextlib.suppress(AlreadyExists):
            self.kube.create(rs)

    def _scale_replicaset(self, rs: dict[str, Any], replicas: int) -> None:
        if int((rs.get("spec") or {}).get("replicas", 1)) != replicas:
            rs["spec"]["replicas"] = replicas
            self.kube.update(rs)

    # --- ReplicaSet: keep the number of active pods at spec.replicas ----------------

    def _replicaset(self, rs: dict[str, Any]) -> None:
        wanted = int((rs.get("spec") or {}).get("replicas", 1))
        active = [p for p in self._pods_of(rs) if is_active(p)]
        template = (rs.get("spec") or {}).get("template") or {}
        for _ in range(wanted - len(active)):
            self.kube.create(pod_from_template(rs, template))
        excess = len(active) - wanted
        for pod in removal_order(active)[:excess] if excess > 0 else ():
            with contextlib.suppress(NotFound):
                self.kube.delete("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"])

    # --- Job: run `parallelism` pods until `completions` succeeded ------------------

    def _job(self, job: dict[str, Any]) -> None:
        spec = job.get("spec") or {}
        parallelism = int(spec.get("parallelism", 1))
        completions = int(spec.get("completions", parallelism))
        pods = self._pods_of(job)
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        active = sum(1 for p in pods if is_active(p))
        wanted = min(parallelism, completions - succeeded) - active
        for _ in range(max(0, wanted)):
            template = copy.deepcopy(spec.get("template") or {})
            template.setdefault("spec", {}).setdefault("restartPolicy", "Never")
            self.kube.create(pod_from_template(job, template))

    # --- DaemonSet: a pod on every node that takes it --------------------------------

    def _daemonset(self, ds: dict[str, Any]) -> None:
        template = (ds.get("spec") or {}).get("template") or {}
        covered = {(p.get("spec") or {}).get("nodeName") for p in self._pods_of(ds) if is_active(p)}
        for node in self.kube.list("Node").items:
            name = node["metadata"]["name"]
            if name in covered or node["metadata"].get("deletionTimestamp"):
                continue
            if daemon_fits(template, node):
                self.kube.create(pod_from_template(ds, template, node_name=name))


def daemon_fits(template: dict[str, Any], node: dict[str, Any]) -> bool:
    """A daemon pod runs where its node selector/affinity match and it tolerates the
    node's NoSchedule/NoExecute taints."""
    pod = {"spec": template.get("spec") or {}}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not Requirements.for_pod(pod).satisfied_by_labels(labels):
        return False
    taints = [
        t
        for t in (node.get("spec") or {}).get("taints") or ()
        if t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    return not untolerated(pod["spec"].get("tolerations") or [], taints, False)


def removal_order(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Which pods a ReplicaSet scales down first, by the real controller's ranking
    (``ActivePodsWithRanks``): unscheduled before scheduled; Pending, Unknown, then Running;
    not ready before ready; lower ``controller.kubernetes.io/pod-deletion-cost`` first;
    pods sharing their node with more of the set's pods first; more restarts first; then
    the newest (exact times: the emulation leaves out the real one's logarithmic buckets)."""
    per_node = Counter(_node_of(p) for p in pods if _node_of(p))
    newest_first = sorted(
        pods,
        key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]),
        reverse=True,
    )
    return sorted(
        newest_first,
        key=lambda p: (
            bool(_node_of(p)),
            _PHASE_RANK.get((p.get("status") or {}).get("phase", "Pending"), 2),
            _is_ready(p),
            _deletion_cost(p),
            -per_node[_node_of(p)] if _node_of(p) else 0,
            -_restarts(p),
        ),
    )


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _node_of(pod: dict[str, Any]) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _deletion_cost(pod: dict[str, Any]) -> int:
    """The annotation as the ReplicaSet controller reads it: an int32, else 0."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST)
    try:
        cost = int(raw) if raw is not None else 0
    except ValueError:
        return 0
    return cost if -(2**31) <= cost < 2**31 else 0


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return sum(int(s.get("restartCount") or 0) for s in statuses)
