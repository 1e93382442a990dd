"""List and watch throughput of the KubeAPI adapters with 10,000 pods and 1,000 nodes.

Prints figures for the memory adapter (create, list, label/field-selected list,
watch replay and live watch delivery) and for the http adapter over the memory
store served on 127.0.0.1 (list decode and watch decode). Returns nonzero when a
correctness check fails or a target is missed.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
from joiner.clock import FakeClock
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer

from benchmarks import quick_mode

PODS = 10_000
NODES = 1_000
QUICK_PODS, QUICK_NODES = 500, 50
NAMESPACES = 10
# Targets, in CPU seconds of this process (wall time on a shared machine is noise):
# a full list of 10k pods costs well under a second, so a controller's resync never
# dominates its CPU. The http figure includes the in-process server's encoding.
MEMORY_LIST_TARGET_S = 0.6
HTTP_LIST_TARGET_S = 2.0
HTTP_DECODE_TARGET_S = 0.6


def make_node(i: int) -> dict[str, Any]:
    zone = "us-east-1" + "abc"[i % 3]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"ip-10-0-{i // 250}-{i % 250}.ec2.internal",
            "labels": {
                "kubernetes.io/hostname": f"ip-10-0-{i // 250}-{i % 250}",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.2xlarge",
                "topology.kubernetes.io/zone": zone,
                "karpenter.sh/nodepool": "default",
                "karpenter.sh/capacity-type": "on-demand",
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"},
            "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def make_pod(i: int, node_name: str) -> dict[str, Any]:
    """A typical Deployment pod (about 2 KB of JSON)."""
    app = f"app-{i % 200}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{i:06d}",
            "namespace": f"team-{i % NAMESPACES}",
            "labels": {"app": app, "pod-template-hash": "5d8f7c9b6", "tier": "web"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "main",
                    "image": f"registry.example.com/{app}:1.4.2",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {"name": "PORT", "value": "8080"},
                    ],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"memory": "512Mi"},
                    },
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": f"{app}-config"}}],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        },
    }


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds of this process spent in action, and its result."""
    start = time.process_time()
    result = action()
    return time.process_time() - start, result


def best_of(runs: int, action: Callable[[], Any]) -> tuple[float, Any]:
    results = [timed(action) for _ in range(runs)]
    return min(r[0] for r in results), results[-1][1]


class Report:
    def __init__(self, judge_targets: bool) -> None:
        self.judge_targets = judge_targets
        self.failures: list[str] = []

    def figure(self, label: str, seconds: float, count: int, unit: str) -> None:
        rate = count / seconds if seconds > 0 else float("inf")
        print(f"  {label:<48} {seconds * 1000:8.1f} ms CPU  {rate:12,.0f} {unit}/s")

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(what)
            print(f"  FAILED: {what}")

    def target(self, seconds: float, limit: float, what: str) -> None:
        if self.judge_targets and seconds > limit:
            self.failures.append(f"{what}: {seconds:.3f}s > target {limit}s")
            print(f"  MISSED TARGET: {what} took {seconds:.3f}s (target {limit}s)")


def populate(store: MemoryKube, pods: int, nodes: int, report: Report) -> str:
    """Create the namespaces, nodes and pods; returns the version before the pods."""
    for n in range(NAMESPACES):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{n}"}})
    node_names = [make_node(i)["metadata"]["name"] for i in range(nodes)]
    seconds, _ = timed(lambda: [store.create(make_node(i)) for i in range(nodes)])
    report.figure(f"create {nodes} nodes", seconds, nodes, "objects")
    before = store.resource_version
    seconds, _ = timed(
        lambda: [store.create(make_pod(i, node_names[i % nodes])) for i in range(pods)]
    )
    report.figure(f"create {pods} pods", seconds, pods, "objects")
    return before


def bench_memory(store: MemoryKube, pods: int, nodes: int, before: str, report: Report) -> None:
    seconds, listed = best_of(3, lambda: store.list("Pod"))
    report.figure(f"list all {pods} pods", seconds, len(listed), "items")
    report.check(len(listed) == pods, f"list returned {len(listed)} pods, expected {pods}")
    report.target(seconds, MEMORY_LIST_TARGET_S, "memory list of all pods")
    seconds, listed = best_of(3, lambda: store.list("Node"))
    report.figure(f"list all {nodes} nodes", seconds, len(listed), "items")
    report.check(len(listed) == nodes, f"list returned {len(listed)} nodes, expected {nodes}")
    node = make_node(0)["metadata"]["name"]
    seconds, listed = best_of(
        3, lambda: [store.list("Pod", field_selector=f"spec.nodeName={node}") for _ in range(100)]
    )
    report.figure("list pods of one node (fieldSelector) x100", seconds, 100, "lists")
    report.check(len(listed[0]) == pods // nodes, "pods per node by field selector")
    seconds, listed = best_of(3, lambda: store.list("Pod", label_selector="app=app-7"))
    report.figure("list pods by label (app=app-7)", seconds, 1, "lists")
    report.check(len(listed) == sum(1 for i in range(pods) if i % 200 == 7), "pods by label")

    watch = store.watch("Pod", resource_version=before)
    seconds, events = timed(watch.drain)
    report.figure(f"watch replay from version ({pods} events)", seconds, len(events), "events")
    report.check(len(events) == pods, f"replayed {len(events)} events, expected {pods}")
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    names = [(p["metadata"]["name"], p["metadata"]["namespace"]) for p in store.list("Pod")]
    seconds, _ = timed(
        lambda: [
            store.patch("Pod", n, {"status": status}, ns, subresource="status") for n, ns in names
        ]
    )
    report.figure(f"status patch of {pods} pods (1 watcher)", seconds, pods, "writes")
    seconds, events = timed(watch.drain)
    report.figure(f"watch delivery ({pods} MODIFIED)", seconds, len(events), "events")
    report.check(
        [e.type for e in events] == ["MODIFIED"] * pods, "every status write reached the watch"
    )
    watch.stop()


def bench_http(store: MemoryKube, pods: int, before: str, report: Report) -> None:
    server = KubeHTTPServer(store).start()
    api = HttpKube(ClusterConfig(server=server.url), qps=1000, burst=1000)
    try:
        seconds, listed = best_of(3, lambda: api.list("Pod"))
        report.figure(f"http list {pods} pods (server + client)", seconds, len(listed), "items")
        report.check(len(listed) == pods, f"http list returned {len(listed)} pods")
        report.target(seconds, HTTP_LIST_TARGET_S, "http list of all pods")
        body = httpx.get(f"{server.url}/api/v1/pods", timeout=60).content
        seconds, decoded = best_of(3, lambda: json.loads(body))
        report.figure(f"http list decode only ({len(body) // 1024:,} KiB)", seconds, pods, "items")
        report.check(len(decoded["items"]) == pods, "decoded list size")
        report.target(seconds, HTTP_DECODE_TARGET_S, "http list decode")
        watch = api.watch("Pod", resource_version=before, timeout_seconds=60)
        count = 0

        def consume() -> int:
            nonlocal count
            for _event in watch:
                count += 1
                if count == pods:
                    break
            return count

        seconds, count = timed(consume)
        watch.stop()
        report.figure(f"http watch replay ({pods} events)", seconds, count, "events")
        report.check(count == pods, f"http watch delivered {count} events, expected {pods}")
    finally:
        api.close()
        server.stop()


def main() -> int:
    quick = quick_mode()
    pods, nodes = (QUICK_PODS, QUICK_NODES) if quick else (PODS, NODES)
    report = Report(judge_targets=not quick)
    print(f"KubeAPI adapters with {pods} pods and {nodes} nodes")
    store = MemoryKube(FakeClock())
    before = populate(store, pods, nodes, report)
    print("memory adapter:")
    bench_memory(store, pods, nodes, before, report)
    print("http adapter (memory store served on 127.0.0.1):")
    bench_http(store, pods, before, report)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
