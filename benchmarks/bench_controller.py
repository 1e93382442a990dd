"""Controller benchmark: a 1,000-pod burst to NodeClaims, and resident memory at scale.

Burst: the operator (memory adapter, fake cloud with Karpenter's 400 synthetic types,
of which the NodePool allows those up to 16 vCPU, then up to 4; virtual clock) receives
1,000 pods kube-scheduler marked Unschedulable (CPU from {100, 250, 500, 1000, 1500}m,
memory from {100 .. 4096}Mi, seed 42). The figure is the compute time from the first
watch event to every NodeClaim created and launched: pumping the events into the
cluster state, the scheduling pass, creating the NodeClaims and Events, launching (the
in-process API server's share of those writes included). The batch window itself is
virtual time and is jumped over. Target: < 2 s for each catalogue. Every pod must be
nominated, the NodeClaims' requests must cover them and every NodeClaim must be launched.

Memory: a fresh process holds a cluster state of 1,000 Nodes with their NodeClaims and
10,000 pods bound to them (objects shaped as the API server sends them), builds the
scheduler's snapshot once, and reports its resident set (VmRSS, including the
interpreter and libraries). Target: < 250 MB.

Run: ``python -m benchmarks controller``; quick mode uses 200 pods / 1,000 pods and 100
nodes and judges correctness only.
"""

from __future__ import annotations

import multiprocessing
import random
import sys
import time
from typing import Any

from joiner import testing
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.validation import validate_object
from joiner.clock import FakeClock, to_rfc3339
from joiner.cloudprovider.fake import FakeCloudProvider, benchmark_instance_types
from joiner.kube.memory import MemoryKube
from joiner.operator import Operator, OperatorOptions
from joiner.state.feed import DrainFeed

from benchmarks import quick_mode

CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
BURST_PODS, QUICK_BURST_PODS = 1000, 200
STATE_PODS, STATE_NODES = 10_000, 1_000
QUICK_STATE_PODS, QUICK_STATE_NODES = 1_000, 100
BURST_MAX_CPUS = (16, 4)  # two catalogues: dozens of NodeClaims, then about two hundred
BURST_TARGET_SECONDS = 2.0
RSS_TARGET_MB = 250.0
MAX_STEPS = 100


# --- objects --------------------------------------------------------------------------


def _pod(index: int, rng: random.Random, node: str | None = None) -> dict[str, Any]:
    """A Deployment's pod as the API server returns it (managedFields left out, as the
    http adapter's watches carry them but the state keeps what the controller reads)."""
    app = f"app-{index % 50}"
    requests = {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORIES)}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-7d9f8b6c5-{index:05d}",
            "generateName": f"{app}-7d9f8b6c5-",
            "namespace": "default",
            "uid": f"00000000-0000-0000-0000-{index:012d}",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": app, "pod-template-hash": "7d9f8b6c5"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-7d9f8b6c5",
                    "uid": f"rs-{index % 50}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": f"registry.example.com/{app}:1.2.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": requests, "limits": dict(requests)},
                    "env": [{"name": "LOG_LEVEL", "value": "info"}],
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "serviceAccountName": "default",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {"phase": "Pending", "qosClass": "Guaranteed"},
    }
    if node is None:
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ]
    else:
        pod["spec"]["nodeName"] = node
        pod["status"].update(
            phase="Running",
            podIP=f"10.0.{index // 250}.{index % 250}",
            conditions=[
                {"type": t, "status": "True"}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
        )
    return pod


def _nodeclaim_and_node(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    name = f"default-{index:05d}"
    provider_id = f"fake:///test-zone-1/i-{index:017x}"
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    labels = {
        wk.NODEPOOL: "default",
        wk.EC2NODECLASS: "default",
        wk.INSTANCE_TYPE: "fake-it-15",
        wk.CAPACITY_TYPE: "on-demand",
        wk.ZONE: "test-zone-1",
        wk.ARCH: "amd64",
        wk.OS: "linux",
    }
    ready = [{"type": t, "status": "True"} for t in ("Launched", "Registered", "Initialized")]
    claim = testing.nodeclaim(
        name,
        requirements=[testing.requirement(wk.NODEPOOL, "In", ["default"])],
        requests={"cpu": "8", "memory": "32Gi", "pods": "10"},
        labels=labels,
        status={
            "providerID": provider_id,
            "nodeName": name,
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": ready,
        },
    )
    claim["metadata"].update(
        uid=f"claim-{index}",
        finalizers=[wk.TERMINATION_FINALIZER],
        creationTimestamp="2026-01-01T00:00:00Z",
    )
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"node-{index}",
            "labels": {**labels, wk.HOSTNAME: name, wk.NODE_REGISTERED: "true"},
        },
        "spec": {"providerID": provider_id},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return claim, node


def _nodeclass() -> dict[str, Any]:
    return testing.ec2nodeclass(cluster="bench")


def _nodepool(max_cpu: int) -> dict[str, Any]:
    requirements = [
        testing.capacity_types(wk.CAPACITY_TYPE_ON_DEMAND),
        # Small types, so a burst needs dozens of NodeClaims, not two.
        testing.requirement(wk.INSTANCE_CPU, "Lt", [str(max_cpu + 1)]),
    ]
    return testing.nodepool(requirements=requirements)


# --- burst ------------------------------------------------------------------------------


class _Stand:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.kube = MemoryKube(self.clock)
        self.cloud = FakeCloudProvider(benchmark_instance_types(400), self.clock)
        self.operator = Operator(
            self.kube,
            self.cloud,
            self.clock,
            self.cloud.resolve_nodeclass,
            OperatorOptions(),
            validate=validate_object,
        )
        self.operator.attach(DrainFeed)

    def settle(self) -> None:
        for _ in range(MAX_STEPS):
            if not (self.operator.pump() + self.operator.manager.run_due()):
                return
        raise RuntimeError("the operator did not settle")

    def jump_to_next_due(self) -> None:
        due = self.operator.manager.next_due()
        if due is not None and due > self.clock.now():
            self.clock.set(due)


def run_burst(count: int, max_cpu: int) -> tuple[float, float, int, list[str]]:
    """(total compute seconds, scheduling seconds, NodeClaims, failures) with instance
    types of up to ``max_cpu`` vCPU."""
    stand = _Stand()
    stand.kube.create(_nodeclass())
    stand.kube.create(_nodepool(max_cpu))
    stand.settle()
    rng = random.Random(42)
    pods = [_pod(i, rng) for i in range(count)]
    for pod in pods:  # the API server's and kube-scheduler's work: not measured
        created = stand.kube.create(pod)
        created["status"] = pod["status"]
        stand.kube.update_status(created)

    compute = 0.0
    started = time.perf_counter()
    stand.settle()  # watch events in, the batch window opens
    compute += time.perf_counter() - started
    stand.jump_to_next_due()  # the 1 s idle window is virtual time
    started = time.perf_counter()
    stand.settle()  # the pass, NodeClaims, Events, launches
    compute += time.perf_counter() - started

    plan = stand.operator.provisioner.last_plan
    scheduling = stand.operator.metrics.scheduling_duration.collect()[0]
    scheduling_seconds = next(s.value for s in scheduling.samples if s.name.endswith("_sum"))
    claims = stand.kube.list("NodeClaim").items
    return compute, scheduling_seconds, len(claims), _burst_failures(plan, claims, pods)


def _burst_failures(plan: Any, claims: list[dict[str, Any]], pods: list[dict]) -> list[str]:
    failures = []
    if plan is None:
        return ["no scheduling pass ran"]
    if plan.unplaceable:
        failures.append(f"{len(plan.unplaceable)} pods unplaceable")
    placed = sum(len(c.pods) for c in plan.nodeclaims) + len(plan.existing)
    if placed != len(pods):
        failures.append(f"{placed} of {len(pods)} pods placed")
    requested = res.add(
        *(res.parse_resource_list(c["spec"]["resources"]["requests"]) for c in claims)
    )
    wanted = res.add(
        *(
            res.parse_resource_list(p["spec"]["containers"][0]["resources"]["requests"])
            for p in pods
        )
    )
    if not res.fits(wanted, requested):
        failures.append("the NodeClaims' requests do not cover the pods")
    unlaunched = [
        c["metadata"]["name"] for c in claims if not (c.get("status") or {}).get("providerID")
    ]
    if unlaunched:
        failures.append(f"{len(unlaunched)} NodeClaims not launched")
    return failures


# --- memory -------------------------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _hold_state(pods: int, nodes: int, out: Any) -> None:
    """In a fresh process: fill an operator's state as its watches would, then report."""
    baseline = _rss_mb()
    clock = FakeClock()
    kube = MemoryKube(clock)  # only for the operator's writes; the state is fed directly
    cloud = FakeCloudProvider(benchmark_instance_types(400), clock)
    operator = Operator(kube, cloud, clock, cloud.resolve_nodeclass)
    operator.handle("EC2NodeClass", "ADDED", _nodeclass())
    operator.handle("NodePool", "ADDED", _nodepool(BURST_MAX_CPUS[0]))
    for index in range(nodes):
        claim, node = _nodeclaim_and_node(index)
        operator.handle("NodeClaim", "ADDED", claim)
        operator.handle("Node", "ADDED", node)
    rng = random.Random(7)
    for index in range(pods):
        operator.handle("Pod", "ADDED", _pod(index, rng, node=f"default-{index % nodes:05d}"))
    snapshot = operator.state.snapshot()
    bound = sum(len(n.pods) for n in snapshot.nodes)
    out.put((baseline, _rss_mb(), len(snapshot.nodes), bound, to_rfc3339(clock.now())))


def measure_state_memory(pods: int, nodes: int) -> tuple[float, float, int, int]:
    """(RSS before loading, RSS with the state loaded, nodes in snapshot, pods bound)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_hold_state, args=(pods, nodes, results))
    child.start()
    baseline, loaded, snapshot_nodes, bound, _ = results.get(timeout=600)
    child.join()
    return baseline, loaded, snapshot_nodes, bound


# --- main ------------------------------------------------------------------------------------


def main() -> int:
    quick = quick_mode()
    burst = QUICK_BURST_PODS if quick else BURST_PODS
    pods, nodes = (QUICK_STATE_PODS, QUICK_STATE_NODES) if quick else (STATE_PODS, STATE_NODES)
    failures: list[str] = []

    for max_cpu in BURST_MAX_CPUS:
        compute, scheduling, claims, burst_failures = run_burst(burst, max_cpu)
        failures += burst_failures
        print(
            f"burst (types <= {max_cpu} vCPU): {burst} pending pods -> {claims} NodeClaims "
            f"created and launched in {compute:.2f} s of compute (scheduling pass "
            f"{scheduling:.2f} s; target < {BURST_TARGET_SECONDS:g} s)"
        )
        if not quick and compute >= BURST_TARGET_SECONDS:
            failures.append(
                f"burst with types <= {max_cpu} vCPU took {compute:.2f} s "
                f"(target < {BURST_TARGET_SECONDS:g} s)"
            )
    baseline, loaded, snapshot_nodes, bound = measure_state_memory(pods, nodes)
    print(
        f"memory: {pods} pods on {nodes} nodes in state -> RSS {loaded:.0f} MB "
        f"(interpreter and libraries {baseline:.0f} MB; target < {RSS_TARGET_MB:g} MB)"
    )
    if snapshot_nodes != nodes or bound != pods:
        failures.append(f"snapshot holds {snapshot_nodes} nodes and {bound} pods")
    if not quick and loaded >= RSS_TARGET_MB:
        failures.append(f"RSS {loaded:.0f} MB (target < {RSS_TARGET_MB:g} MB)")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
