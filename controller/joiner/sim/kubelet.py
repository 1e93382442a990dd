"""An emulated kubelet for every instance.

An instance the controller launched registers a Node ``launch_delay`` after its
NodeClaim was launched, with the NodeClaim's labels and taints (as user data
would give it), becomes Ready ``ready_delay`` later (start-up taints are removed
then, as the agent owning them would), runs the pods bound to it and finishes the
deletion of its terminating pods. The node lifecycle controller's taints and the
garbage collection of the pods of a Node that went are the store's (the emulated
kube-controller-manager of ``joiner.kube.controllermanager``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from joiner.api import labels as wk
from joiner.api.conditions import TRUE, set_condition
from joiner.api.duration import parse_duration
from joiner.clock import Clock, to_rfc3339
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import AlreadyExists, Conflict, KubeAPI, NotFound
from joiner.sim.workloads import RUN_DURATION_ANNOTATION

InstanceExists = Callable[[str], bool]
Enqueue = Callable[[str, float], None]  # (key, delay)


class Kubelet:
    name = "sim.kubelet"

    def __init__(
        self,
        kube: KubeAPI,
        clock: Clock,
        instance_exists: InstanceExists,
        launch_delay: float,
        ready_delay: float,
        region: str,
        enqueue: Enqueue,
    ) -> None:
        self.kube, self.clock, self.enqueue = kube, clock, enqueue
        self.instance_exists = instance_exists
        self.launch_delay, self.ready_delay = launch_delay, ready_delay
        self.region = region
        self.registration_scheduled: set[str] = set()
        # Faults: how many of the next instances never register a Node, and how many of
        # the next Nodes never become Ready.
        self.never_register = 0
        self.never_ready = 0

    # --- what to do next, from watch events ---------------------------------------------

    def keys_for_nodeclaim(self, claim: dict[str, Any]) -> list[tuple[str, float]]:
        name = claim["metadata"]["name"]
        launched = (claim.get("status") or {}).get("providerID")
        if not launched or name in self.registration_scheduled:
            return []
        self.registration_scheduled.add(name)
        return [(f"register/{name}", self.launch_delay)]

    def keys_for_pod(self, event_type: str, pod: dict[str, Any]) -> list[tuple[str, float]]:
        node = (pod.get("spec") or {}).get("nodeName")
        if event_type == "DELETED" or not node:
            return []
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if pod["metadata"].get("deletionTimestamp"):
            return [(f"finish/{key}", 0.0)]
        if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            return [(f"run/{key}", 0.0)]
        return []

    # --- reconcile ------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        action, _, target = key.partition("/")
        try:
            return getattr(self, f"_{action}")(target)
        except NotFound:
            return DONE  # the object went: nothing left to do for it
        except Conflict:
            # Someone wrote first (on a real API server the node lifecycle controller or
            # the controller registering the Node): read again and redo.
            return Result(requeue_after=0.0)

    def _register(self, claim_name: str) -> Result:
        claim = self.kube.get("NodeClaim", claim_name)
        provider_id = claim["status"]["providerID"]
        if claim["metadata"].get("deletionTimestamp") or not self.instance_exists(provider_id):
            return DONE
        if self.never_register:
            self.never_register -= 1
            return DONE
        spec = claim.get("spec") or {}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": claim_name,
                "labels": {
                    **(claim["metadata"].get("labels") or {}),
                    wk.HOSTNAME: claim_name,
                    wk.REGION: self.region,
                },
            },
            "spec": {
                "providerID": provider_id,
                "taints": [
                    dict(wk.UNREGISTERED_TAINT),
                    *spec.get("taints", []),
                    *spec.get("startupTaints", []),
                ],
            },
            "status": {
                "capacity": claim["status"].get("capacity", {}),
                "allocatable": claim["status"].get("allocatable", {}),
                "conditions": [],
            },
        }
        set_condition(
            node["status"]["conditions"],
            "Ready",
            "False",
            self.clock.now(),
            reason="KubeletNotReady",
        )
        with contextlib.suppress(AlreadyExists):
            self.kube.create(node)
        self.enqueue(f"ready/{claim_name}", self.ready_delay)
        return DONE

    def _ready(self, node_name: str) -> Result:
        if self.never_ready:
            self.never_ready -= 1
            return DONE
        node = self.kube.get("Node", node_name)
        set_condition(
            node["status"]["conditions"], "Ready", TRUE, self.clock.now(), reason="KubeletReady"
        )
        node = self.kube.update_status(node)
        startup = self._startup_taints(node)
        if startup:
            node["spec"]["taints"] = [
                t
                for t in node["spec"].get("taints") or []
                if (t["key"], t["effect"]) not in startup
            ]
            self.kube.update(node)
        return DONE

    def _startup_taints(self, node: dict[str, Any]) -> set[tuple[str, str]]:
        with contextlib.suppress(NotFound):
            claim = self.kube.get("NodeClaim", node["metadata"]["name"])
            return {(t["key"], t["effect"]) for t in claim["spec"].get("startupTaints") or []}
        return set()

    def _run(self, pod_key: str) -> Result:
        namespace, name = pod_key.split("/", 1)
        pod = self.kube.get("Pod", name, namespace)
        if pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Pending":
            return DONE
        now = to_rfc3339(self.clock.now())
        pod["status"].update(phase="Running", startTime=now)
        set_condition(pod["status"].setdefault("conditions", []), "Ready", TRUE, self.clock.now())
        self.kube.update_status(pod)
        duration = (pod["metadata"].get("annotations") or {}).get(RUN_DURATION_ANNOTATION)
        if duration:
            self.enqueue(f"complete/{pod_key}", parse_duration(duration) or 0.0)
        return DONE

    def _complete(self, pod_key: str) -> Result:
        namespace, name = pod_key.split("/", 1)
        pod = self.kube.get("Pod", name, namespace)
        if pod["status"].get("phase") == "Running":
            pod["status"]["phase"] = "Succeeded"
            self.kube.update_status(pod)
        return DONE

    def _finish(self, pod_key: str) -> Result:
        namespace, name = pod_key.split("/", 1)
        self.kube.delete("Pod", name, namespace, grace_period_seconds=0)
        return DONE
