"""Defaulting and the mutating admission of built-in kinds, as kube-apiserver v1.36 applies
them between decoding and validation (measured on the envtest server, see
tests/controller/kube/test_kube_contract.py).

* Pod specs (pods and the pod templates of workloads): ``dnsPolicy``, ``restartPolicy``,
  ``terminationGracePeriodSeconds`` 30, ``schedulerName``, ``securityContext``,
  ``enableServiceLinks``; per container ``imagePullPolicy``, termination message
  defaults, ``resources`` with requests defaulted from limits, port protocols, probe
  timings, ``fieldRef`` versions; volume modes.
* Pods on create: the ``Priority`` plugin (``priority`` from ``priorityClassName``, a 403
  for an unknown class; only the built-in classes exist here), ``DefaultTolerationSeconds``
  (tolerate not-ready and unreachable ``NoExecute`` for 300 s) and ``status.qosClass``.
* Nodes on create: ``TaintNodesByCondition`` adds ``node.kubernetes.io/not-ready:NoSchedule``
  (the node lifecycle controller removes it once the Node is Ready).
* Namespaces on create: the ``kubernetes`` finalizer, which the namespace controller
  removes once the namespace is empty.
* Workloads: ``replicas`` 1 (Deployment, ReplicaSet, StatefulSet), ``parallelism`` and
  ``completions`` 1 and ``backoffLimit`` 6 (Job).
"""

from __future__ import annotations

from typing import Any

from joiner.api.resources import milli
from joiner.kube.api import Forbidden
from joiner.kube.resources import ResourceKind

NOT_READY_TAINT_KEY = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT_KEY = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_GRACE_SECONDS = 30
NAMESPACE_FINALIZER = "kubernetes"
# The PriorityClasses every cluster has; the in-memory server serves no others.
BUILT_IN_PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
_POD_SPEC_DEFAULTS = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": DEFAULT_GRACE_SECONDS,
    "securityContext": {},
    "schedulerName": "default-scheduler",
    "enableServiceLinks": True,
}
_CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1}
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_MODE_VOLUMES = ("configMap", "secret", "downwardAPI", "projected")
_TEMPLATED_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"})
_REPLICATED_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet"})


def default(rk: ResourceKind, obj: dict[str, Any]) -> None:
    """Defaults of every write (create and update), in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or rk.custom:
        return
    if _is_core(rk, "Pod"):
        default_pod_spec(spec)
    elif rk.kind in _TEMPLATED_KINDS and rk.group in ("apps", "batch"):
        _default_workload(rk, spec)


def admit_create(rk: ResourceKind, obj: dict[str, Any]) -> None:
    """The mutating admission of a create, in place (after ``default``)."""
    if _is_core(rk, "Pod"):
        _admit_pod(obj)
    elif _is_core(rk, "Node"):
        _taint_not_ready(obj)
    elif _is_core(rk, "Namespace"):
        spec = obj.setdefault("spec", {})
        if not spec.get("finalizers"):
            spec["finalizers"] = [NAMESPACE_FINALIZER]


def _is_core(rk: ResourceKind, kind: str) -> bool:
    return rk.kind == kind and not rk.group


def default_pod_spec(spec: dict[str, Any]) -> None:
    for field, value in _POD_SPEC_DEFAULTS.items():
        spec.setdefault(field, value if not isinstance(value, dict) else {})
    host_network = bool(spec.get("hostNetwork"))
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in _dicts(spec.get(group)):
            _default_container(container, host_network)
    if isinstance(spec.get("resources"), dict):
        _requests_from_limits(spec["resources"])
    for volume in _dicts(spec.get("volumes")):
        _default_volume(volume)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _default_container(container: dict[str, Any], host_network: bool) -> None:
    for field, value in _CONTAINER_DEFAULTS.items():
        container.setdefault(field, value)
    container.setdefault("imagePullPolicy", _pull_policy(container.get("image")))
    resources = container.setdefault("resources", {})
    if isinstance(resources, dict):
        _requests_from_limits(resources)
    for port in _dicts(container.get("ports")):
        port.setdefault("protocol", "TCP")
        if host_network and "containerPort" in port:
            port.setdefault("hostPort", port["containerPort"])
    for env in _dicts(container.get("env")):
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe in (container.get(name) for name in _PROBES):
        if isinstance(probe, dict):
            _default_probe(probe)


def _pull_policy(image: Any) -> str:
    """``Always`` for an image without a tag or tagged ``latest``; ``IfNotPresent`` else."""
    if not isinstance(image, str) or "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _requests_from_limits(resources: dict[str, Any]) -> None:
    limits = resources.get("limits")
    if not isinstance(limits, dict) or not limits:
        return
    requests = resources.setdefault("requests", {})
    if isinstance(requests, dict):
        for name, amount in limits.items():
            requests.setdefault(name, amount)


def _default_probe(probe: dict[str, Any]) -> None:
    for field, value in _PROBE_DEFAULTS.items():
        probe.setdefault(field, value)
    probe.setdefault("failureThreshold", 3)
    http_get = probe.get("httpGet")
    if isinstance(http_get, dict):
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def _default_volume(volume: dict[str, Any]) -> None:
    for source in _MODE_VOLUMES:
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", 0o644)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")


def _default_workload(rk: ResourceKind, spec: dict[str, Any]) -> None:
    if rk.kind in _REPLICATED_KINDS:
        spec.setdefault("replicas", 1)
    if rk.kind == "Job":
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1  # a Job of one pod; a work queue keeps completions unset
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


def _admit_pod(pod: dict[str, Any]) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    _admit_priority(pod, spec)
    tolerations = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []
    for key in (NOT_READY_TAINT_KEY, UNREACHABLE_TAINT_KEY):
        if not any(_tolerates_no_execute(t, key) for t in tolerations):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    spec["tolerations"] = tolerations
    status = pod.setdefault("status", {})
    status["qosClass"] = qos_class(spec)


def _admit_priority(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    name = spec.get("priorityClassName")
    if name:
        if name not in BUILT_IN_PRIORITIES:
            metadata = pod.get("metadata") or {}
            pod_name = metadata.get("name") or metadata.get("generateName") or ""
            raise Forbidden(
                f'pods "{pod_name}" is forbidden: no PriorityClass with name {name} was found'
            )
        spec["priority"] = BUILT_IN_PRIORITIES[name]
    else:
        spec["priority"] = 0
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")


def _tolerates_no_execute(toleration: Any, key: str) -> bool:
    """Whether a toleration already names the ``key:NoExecute`` taint (an empty key or
    effect counts), as DefaultTolerationSeconds checks before adding its own."""
    if not isinstance(toleration, dict):
        return False
    return toleration.get("key") in (None, "", key) and toleration.get("effect") in (
        None,
        "",
        "NoExecute",
    )


def qos_class(spec: dict[str, Any]) -> str:
    """Guaranteed when every container limits CPU and memory and requests what it
    limits; BestEffort when none requests or limits either; Burstable otherwise."""
    containers = [*_dicts(spec.get("initContainers")), *_dicts(spec.get("containers"))]
    any_set, guaranteed = False, bool(containers)
    for container in containers:
        resources = (
            container.get("resources") if isinstance(container.get("resources"), dict) else {}
        )
        requests = _compute(resources.get("requests"))
        limits = _compute(resources.get("limits"))
        any_set = any_set or bool(requests) or bool(limits)
        if set(limits) != {"cpu", "memory"} or requests != limits:
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _compute(resources: Any) -> dict[str, int]:
    """CPU and memory of a resource list, in milli-units (decoding checked the quantities)."""
    if not isinstance(resources, dict):
        return {}
    return {k: milli(v) for k, v in resources.items() if k in ("cpu", "memory") and v is not None}


def _taint_not_ready(node: dict[str, Any]) -> None:
    spec = node.setdefault("spec", {})
    taints = spec.get("taints") if isinstance(spec.get("taints"), list) else []
    if not any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT_KEY for t in taints):
        taints.append({"key": NOT_READY_TAINT_KEY, "effect": "NoSchedule"})
    spec["taints"] = taints
