"""How long kube-controller-manager takes to act after a write: the delays the in-memory
API server's emulated controllers use (``joiner.kube.controllermanager``).

On an envtest control plane (kube-apiserver, etcd, kube-controller-manager v1.36.2, all
on 127.0.0.1) each latency is measured from the answer to the write that causes the
work to the first read that shows it done, polling every 2 ms:

* garbage collector: a ConfigMap's owner is deleted -> the ConfigMap is gone;
* disruption controller: a selected pod turns Ready -> the budget counts it healthy;
* node lifecycle: a Node turns Ready -> its not-ready taint is gone;
* namespace controller: a Namespace holding a pod and a ConfigMap is deleted -> the pod
  is marked, then (once it went) the ConfigMap is gone;
* pod garbage collector (full runs only, it takes a minute): a Node with a bound pod is
  deleted -> the pod is gone.

Reported: the median of each (and the spread); checked: each median lies within a
factor of ``TOLERANCE`` of the emulated delay (an order-of-magnitude guard: a median
outside it means the emulation's figure is stale). Where the control plane's binaries
are missing, the benchmark says so and fails instead of measuring something else.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from joiner.kube import controllermanager as emulated
from joiner.kube.api import WatchEvent
from joiner.kube.http import HttpKube
from joiner.testing.assets import (
    CONTROL_PLANE,
    KUBE_CONTROLLER_MANAGER,
    AssetsUnavailable,
    find_envtest,
)
from joiner.testing.envtest import ControlPlane

from benchmarks import quick_mode

TOLERANCE = 4.0  # a measured median within [delay / 4, delay * 4] agrees with the emulation
NAMESPACE = "bench-latency"
NOT_READY = "node.kubernetes.io/not-ready"


def _after(
    kube: HttpKube,
    kind: str,
    namespace: str | None,
    write: Callable[[], Any],
    done: Callable[[WatchEvent], bool],
) -> float:
    """Seconds from the answer to ``write()`` to the watch event ``done`` accepts (a watch
    opened before the write: no polling interval in the figure)."""
    listed = kube.list(kind, namespace).resource_version
    watch = kube.watch(kind, namespace, resource_version=listed, timeout_seconds=120)
    write()
    start = time.monotonic()
    try:
        for event in watch:
            if done(event):
                return time.monotonic() - start
    finally:
        watch.stop()
    raise TimeoutError(f"no {kind} event showed the controller's work")


def _named(name: str, event_type: str | None = None) -> Callable[[WatchEvent], bool]:
    return lambda e: e.object["metadata"]["name"] == name and event_type in (None, e.type)


def _ready_condition(status: str) -> dict[str, str]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"type": "Ready", "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now}


def garbage_collection(kube: HttpKube, i: int) -> float:
    owner = kube.create(_configmap(f"owner-{i}"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"owner-{i}"}
    child = _configmap(f"child-{i}")
    child["metadata"]["ownerReferences"] = [ref | {"uid": owner["metadata"]["uid"]}]
    kube.create(child)
    return _after(
        kube,
        "ConfigMap",
        NAMESPACE,
        lambda: kube.delete("ConfigMap", f"owner-{i}", NAMESPACE),
        _named(f"child-{i}", "DELETED"),
    )


def disruption_status(kube: HttpKube, i: int) -> float:
    app = f"budget-{i}"
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": NAMESPACE},
        "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": app}}},
    }
    pod = kube.create(_pod(app, labels={"app": app}, node="bench-node"))
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    kube.update_status(pod)
    return _after(
        kube,
        "PodDisruptionBudget",
        NAMESPACE,
        lambda: kube.create(budget),
        lambda e: (e.object.get("status") or {}).get("currentHealthy") == 1,
    )


def node_lifecycle(kube: HttpKube, i: int) -> float:
    name = f"bench-node-ready-{i}"
    not_ready = {"status": {"conditions": [_ready_condition("False")]}}
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}} | not_ready)
    ready = {"status": {"conditions": [_ready_condition("True")]}}
    taken = _after(
        kube,
        "Node",
        None,
        lambda: kube.patch("Node", name, ready, subresource="status"),
        lambda e: (
            e.object["metadata"]["name"] == name
            and NOT_READY not in {t["key"] for t in e.object["spec"].get("taints") or []}
        ),
    )
    kube.delete("Node", name)
    return taken


def namespace_controller(kube: HttpKube, i: int) -> tuple[float, float]:
    """Seconds to the pod's deletion, then to the rest's once the pod went."""
    name = f"bench-ns-{i}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kube.create(_pod("web", namespace=name, node="bench-node"))
    kube.create(_configmap("cfg", namespace=name))
    to_pods = _after(
        kube,
        "Pod",
        name,
        lambda: kube.delete("Namespace", name),
        lambda e: bool(e.object["metadata"].get("deletionTimestamp")),
    )
    to_rest = _after(
        kube,
        "ConfigMap",
        name,
        lambda: kube.delete("Pod", "web", name, grace_period_seconds=0),
        _named("cfg", "DELETED"),
    )
    return to_pods, to_rest


def pod_garbage_collection(kube: HttpKube) -> float:
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bench-orphaning"}})
    kube.create(_pod("orphan", node="bench-orphaning"))
    return _after(
        kube,
        "Pod",
        NAMESPACE,
        lambda: kube.delete("Node", "bench-orphaning"),
        _named("orphan", "DELETED"),
    )


def _configmap(name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


def _pod(
    name: str, namespace: str = NAMESPACE, labels: dict[str, str] | None = None, node: str = ""
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]},
    }


def _report(label: str, samples: list[float], emulated_delay: float, failures: list[str]) -> None:
    median = statistics.median(samples)
    print(
        f"  {label:<44} median {median * 1000:9.1f} ms  "
        f"(min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f}, n={len(samples)})  "
        f"emulated {emulated_delay * 1000:.1f} ms"
    )
    if not emulated_delay / TOLERANCE <= median <= emulated_delay * TOLERANCE:
        failures.append(f"{label}: median {median:.3f}s vs emulated {emulated_delay:.3f}s")
        print(f"  FAILED: {failures[-1]}")


def measure(plane: ControlPlane, samples: int, pod_gc: bool) -> list[str]:
    kube = plane.admin_kube()
    failures: list[str] = []
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bench-node"}})
    runs = range(samples)
    _report(
        "garbage collector",
        [garbage_collection(kube, i) for i in runs],
        emulated.GC_DELAY,
        failures,
    )
    _report(
        "disruption controller",
        [disruption_status(kube, i) for i in runs],
        emulated.DISRUPTION_DELAY,
        failures,
    )
    _report(
        "node lifecycle (not-ready taint)",
        [node_lifecycle(kube, i) for i in runs],
        emulated.NODE_LIFECYCLE_DELAY,
        failures,
    )
    passes = [namespace_controller(kube, i) for i in range(min(samples, 3))]
    _report(
        "namespace controller: pods", [p[0] for p in passes], emulated.NAMESPACE_DELAY, failures
    )
    _report(
        "namespace controller: the rest", [p[1] for p in passes], emulated.NAMESPACE_DELAY, failures
    )
    if pod_gc:
        quarantine = emulated.POD_GC_QUARANTINE + emulated.POD_GC_PERIOD / 2
        _report("pod garbage collector", [pod_garbage_collection(kube)], quarantine, failures)
    kube.close()
    return failures


def main() -> int:
    quick = quick_mode()
    try:
        assets = find_envtest((*CONTROL_PLANE, KUBE_CONTROLLER_MANAGER))
    except AssetsUnavailable as error:
        print(f"  not run: {error}")
        return 1
    with tempfile.TemporaryDirectory(prefix="joiner-bench-kcm-") as workdir:
        plane = ControlPlane(assets, Path(workdir)).start()
        try:
            plane.start_controller_manager()
            failures = measure(plane, samples=3 if quick else 15, pod_gc=not quick)
        finally:
            plane.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
