"""The controller measured on a real control plane (etcd + kube-apiserver, envtest).

See ``benchmarks.realplane`` for the stand: the controller as production runs it, in a
process of its own, the fake cloud, the emulated kubelets. Scenarios:

*Burst*: pods of the controller benchmark's mix (seed 42) are created pending, then
marked Unschedulable as kube-scheduler marks them, by ``WRITERS`` threads as fast as the
server takes them; the NodePool allows types of up to 4 vCPU (about a NodeClaim per
five pods). Measured: from the last pod marked (and from the first) to the last
NodeClaim created, as the audit log timestamps the server's answers; the controller's
requests from the first pod marked until every NodeClaim is Initialized (launched, its
Node registered by the emulated kubelets and Ready), per NodeClaim.

*Held state*: 1,000 NodeClaims created directly (one 16-vCPU type), launched by the
controller, their Nodes registered by the emulated kubelets; then 10,000 pods created
bound to them, run by the kubelets. Measured: the controller's resident memory and its
CPU and requests while nothing happens; watch fan-in, the rate at which the controller
handles pod events while the writers patch every pod's labels as fast as the server
takes them, and while they delete every pod; a fresh controller's time to list
everything, and its memory then.

Run: ``python -m benchmarks realplane`` (about ten minutes); quick mode runs small sizes
once and judges correctness only.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joiner import testing
from joiner.api import labels as wk
from joiner.api.conditions import is_true
from joiner.kube.api import NotFound
from joiner.kube.http import HttpKube
from joiner.testing.assets import AssetsUnavailable, find_envtest
from joiner.testing.polling import wait_for

from benchmarks import quick_mode
from benchmarks.bench_controller import make_nodeclass, make_nodepool, make_pod, requests_cover
from benchmarks.realplane import ControllerChild, Request, Stand, count_by_call

# As deployed (every other setting at its default).
CONTROLLER_ENV = {"CLUSTER_NAME": "bench"}
NEVER_CONSOLIDATE = {"consolidateAfter": "Never"}  # nothing is disrupted while measuring
RUNS, QUICK_RUNS = 3, 1
BURST_SIZES, QUICK_BURST_SIZES = (1000, 5000), (100,)
BURST_MAX_CPU = 4
BURST_TARGETS = {1000: 3.0, 5000: 10.0}  # seconds from the last pod marked
HELD, QUICK_HELD = (10_000, 1_000), (500, 50)  # pods, nodes
HELD_TYPE, HELD_MAX_CPU = "fake-it-15", 16  # 16 vCPU, 32 GiB, 160 pods
RSS_TARGET_MB = 250.0
STEADY_SECONDS, QUICK_STEADY_SECONDS = 30.0, 3.0
TIMEOUT = 600.0
QUIET = 2.0  # seconds without a new NodeClaim once every pod was placed: the burst is over


# --- burst ------------------------------------------------------------------------------------


@dataclass
class BurstResult:
    pods: int
    nodeclaims: int
    marking: float  # seconds the writers took to mark every pod
    from_last: float  # last pod marked -> last NodeClaim created
    from_first: float  # first pod marked -> last NodeClaim created
    caught_up: float  # the controller's last pod event handled, after the last pod marked
    first_created: float  # the first NodeClaim created, after the last pod marked
    last_created: float  # time.time() the last NodeClaim was created
    passes: list[dict[str, Any]]  # times in seconds after the last pod was marked
    requests: list[Request]  # the controller's, from the first mark until all initialized
    failures: list[str]


UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/0 nodes are available",
}


def creatable(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as a workload controller sends it: what the server sets left out, and its
    ownerReferences too (no ReplicaSet of theirs exists: kube-controller-manager's
    garbage collector would delete the pods as orphans)."""
    server_set = ("uid", "resourceVersion", "creationTimestamp", "generateName")
    metadata = {
        k: v for k, v in pod["metadata"].items() if k not in (*server_set, "ownerReferences")
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod["spec"]}


def mark_unschedulable(kube: HttpKube, pod: dict[str, Any]) -> float:
    """kube-scheduler's verdict on a pod no node fits; returns when it was answered."""
    kube.patch(
        "Pod",
        pod["metadata"]["name"],
        {"status": {"conditions": [UNSCHEDULABLE]}},
        pod["metadata"]["namespace"],
        patch_type="strategic",
        subresource="status",
    )
    return time.time()


def run_burst(assets: Path, count: int) -> BurstResult:
    with Stand(assets, CONTROLLER_ENV) as stand:
        stand.kube.create(make_nodeclass())
        stand.kube.create(make_nodepool(BURST_MAX_CPU, NEVER_CONSOLIDATE))
        stand.start_kubelets()
        controller = stand.start_controller()
        rng = random.Random(42)
        pods = [creatable(make_pod(i, rng)) for i in range(count)]
        stand.write_all(lambda kube, pod: kube.create(pod), pods)
        wait_for(  # the pending pods are in its state: the burst starts with nothing queued
            lambda: controller.stats()["events"].get("Pod", 0) >= count,
            "the controller to see the pods",
            TIMEOUT,
        )
        started = time.time()
        last_marked = max(stand.write_all(mark_unschedulable, pods))
        passes = _wait_for_placement(controller, count)
        caught_up = controller.stats()["last_event"]["Pod"]
        claims = wait_for(
            lambda: _all_initialized(stand.kube), "every NodeClaim initialized", TIMEOUT, 0.5
        )
        requests = stand.controller_requests(since=started)
        creates = [r.answered for r in requests if (r.verb, r.resource) == ("create", "nodeclaims")]
        last_created = max(creates, default=last_marked)
        first_created = min(creates, default=last_marked)
        failures = [] if requests_cover(claims, pods) else ["the NodeClaims do not cover the pods"]
        return BurstResult(
            pods=count,
            nodeclaims=len(claims),
            marking=last_marked - started,
            from_last=last_created - last_marked,
            from_first=last_created - started,
            caught_up=caught_up - last_marked,
            first_created=first_created - last_marked,
            last_created=last_created,
            passes=[_relative(p, last_marked) for p in passes],
            requests=requests,
            failures=failures,
        )


def _wait_for_placement(controller: ControllerChild, count: int) -> list[dict[str, Any]]:
    """The scheduling passes, once they placed every pod and no pass came for ``QUIET``
    seconds."""

    def placed() -> list[dict[str, Any]] | None:
        passes = controller.stats()["passes"]
        return passes if sum(p["placed"] for p in passes) >= count else None

    passes = wait_for(placed, "every pod to be placed", TIMEOUT)
    while True:
        before = len(passes)
        time.sleep(QUIET)
        passes = controller.stats()["passes"]
        if len(passes) == before:
            return passes


def _relative(scheduling_pass: dict[str, Any], origin: float) -> dict[str, Any]:
    return {
        **scheduling_pass,
        "started": scheduling_pass["started"] - origin,
        "ended": scheduling_pass["ended"] - origin,
    }


def _all_initialized(kube: HttpKube) -> list[dict[str, Any]] | None:
    claims = kube.list("NodeClaim").items
    done = all(is_true((c.get("status") or {}).get("conditions"), "Initialized") for c in claims)
    return claims if claims and done else None


# --- held state, watch fan-in ---------------------------------------------------------------


@dataclass
class FanIn:
    what: str
    events: int
    written: float  # seconds until the server answered the last write
    handled: float  # seconds until the controller handled the last event
    cpu: float  # the controller's CPU seconds meanwhile
    relists: int  # its list requests for pods meanwhile (0: its watch kept up)


@dataclass
class HoldResult:
    pods: int
    nodes: int
    nodes_ready: float  # seconds from the first NodeClaim created to all initialized
    pods_running: float  # seconds from the first pod created to all running in its state
    rss_mb: float  # the controller's, everything held and quiet
    steady_cpu: float  # share of a core it used meanwhile
    steady_requests: Counter[tuple[str, str]]  # and the requests it made
    relabel: FanIn
    restart_synced: float  # a fresh controller: seconds until every kind is listed
    restart_rss_mb: float  # and its memory then
    restart_cpu: float  # and its CPU seconds until then
    delete: FanIn
    failures: list[str]


def held_nodeclaim(index: int) -> dict[str, Any]:
    """A NodeClaim as the provisioner makes one, for a 16-vCPU on-demand type."""
    claim = testing.nodeclaim(
        f"held-{index:05d}",
        requirements=[
            testing.requirement(wk.NODEPOOL, "In", ["default"]),
            testing.requirement(wk.INSTANCE_TYPE, "In", [HELD_TYPE]),
            testing.capacity_types(wk.CAPACITY_TYPE_ON_DEMAND),
        ],
        requests={"cpu": "8", "memory": "16Gi", "pods": "10"},
    )
    claim["metadata"]["finalizers"] = [wk.TERMINATION_FINALIZER]
    return claim


def run_hold(assets: Path, pods: int, nodes: int, steady_seconds: float) -> HoldResult:
    with Stand(assets, CONTROLLER_ENV) as stand:
        stand.kube.create(make_nodeclass())
        stand.kube.create(make_nodepool(HELD_MAX_CPU, NEVER_CONSOLIDATE))
        stand.start_kubelets()
        controller = stand.start_controller()
        started = time.time()
        stand.write_all(lambda kube, claim: kube.create(claim), map(held_nodeclaim, range(nodes)))
        wait_for(lambda: _all_initialized(stand.kube), "the held nodes", TIMEOUT, 1.0)
        nodes_ready = time.time() - started

        started = time.time()
        rng = random.Random(7)
        bound = [creatable(make_pod(i, rng, node=f"held-{i % nodes:05d}")) for i in range(pods)]
        stand.write_all(lambda kube, pod: kube.create(pod), bound)
        wait_for(lambda: controller.stats()["running_pods"] >= pods, "the pods", TIMEOUT, 0.5)
        pods_running = time.time() - started
        _wait_quiet(controller)
        rss = controller.rss_mb()
        cpu, since = controller.cpu_seconds(), time.time()
        time.sleep(steady_seconds)  # what the controller does while nothing happens
        steady_cpu = (controller.cpu_seconds() - cpu) / (time.time() - since)
        steady = count_by_call(stand.controller_requests(since=since))

        relabel = _relabel(stand, bound)
        stand.stop_controller()
        started = time.time()
        fresh = stand.start_controller()
        restart_synced = time.time() - started
        restart_rss, restart_cpu = fresh.rss_mb(), fresh.cpu_seconds()
        delete = _delete_all(stand, bound)
        failures = [
            f"{f.what}: the controller listed pods again {f.relists} times"
            for f in (relabel, delete)
            if f.relists
        ]
        return HoldResult(
            pods=pods,
            nodes=nodes,
            nodes_ready=nodes_ready,
            pods_running=pods_running,
            rss_mb=rss,
            steady_cpu=steady_cpu,
            steady_requests=steady,
            relabel=relabel,
            restart_synced=restart_synced,
            restart_rss_mb=restart_rss,
            restart_cpu=restart_cpu,
            delete=delete,
            failures=failures,
        )


def _wait_quiet(controller: ControllerChild) -> None:
    """Until the controller has handled no event for a second."""
    wait_for(
        lambda: time.time() - max(controller.stats()["last_event"].values()) >= 1.0,
        "the controller to go quiet",
        TIMEOUT,
        0.5,
    )


def _fan_in(stand: Stand, what: str, events: int, emit: Callable[[], float]) -> FanIn:
    """Run ``emit`` (it returns when the server answered its last write) and wait until
    the controller handled ``events`` more pod events."""
    controller = stand.controller
    assert controller is not None
    before = controller.stats()["events"].get("Pod", 0)
    cpu, started = controller.cpu_seconds(), time.time()
    written = emit()
    stats = wait_for(
        lambda: (s := controller.stats())["events"].get("Pod", 0) >= before + events and s,
        f"the controller to handle {what}",
        TIMEOUT,
    )
    requests = stand.controller_requests(since=started)
    return FanIn(
        what=what,
        events=events,
        written=written - started,
        handled=stats["last_event"]["Pod"] - started,
        cpu=controller.cpu_seconds() - cpu,
        relists=sum(1 for r in requests if (r.verb, r.resource) == ("list", "pods")),
    )


def _relabel(stand: Stand, pods: list[dict[str, Any]]) -> FanIn:
    """Every pod's labels patched by the writers, as fast as the server takes them."""

    def label(kube: HttpKube, pod: dict[str, Any]) -> float:
        patch = {"metadata": {"labels": {"bench/round": "1"}}}
        kube.patch("Pod", pod["metadata"]["name"], patch, pod["metadata"]["namespace"])
        return time.time()

    def emit() -> float:
        return max(stand.write_all(label, pods))

    return _fan_in(stand, f"{len(pods)} pods relabelled", len(pods), emit)


def _delete_all(stand: Stand, pods: list[dict[str, Any]]) -> FanIn:
    """Every pod deleted by the writers (no grace period), as fast as the server takes it."""

    def delete(kube: HttpKube, pod: dict[str, Any]) -> float:
        metadata = pod["metadata"]
        # Gone already is what this writer wants. Seen for the first pod only, once in about
        # two runs; who removed it first is not known yet. Had it gone before the window
        # opened, the wait for its event below times out and says so.
        with contextlib.suppress(NotFound):
            kube.delete("Pod", metadata["name"], metadata["namespace"], grace_period_seconds=0)
        return time.time()

    def emit() -> float:
        return max(stand.write_all(delete, pods))

    return _fan_in(stand, f"{len(pods)} pods deleted", len(pods), emit)


# --- reporting ----------------------------------------------------------------------------------


def spread(values: list[float], unit: str = " s", digits: int = 2) -> str:
    """min / median / max, or the one value."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}{unit}"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low:.{digits}f} / {mid:.{digits}f} / {high:.{digits}f}{unit} (min / median / max)"


def report_burst(results: list[BurstResult], judge: bool) -> list[str]:
    count = results[0].pods
    print(f"burst of {count} pods (types <= {BURST_MAX_CPU} vCPU), {len(results)} run(s):")
    print(f"  NodeClaims created: {', '.join(str(r.nodeclaims) for r in results)}")
    print(f"  writers marked every pod in {spread([r.marking for r in results])}")
    print(f"  last pod marked -> last NodeClaim created: {spread([r.from_last for r in results])}")
    print(
        f"  first pod marked -> last NodeClaim created: {spread([r.from_first for r in results])}"
    )
    for result in results:
        passes = ", ".join(
            f"{p['placed']} pods, {p['nodeclaims']} new NodeClaims at {p['started']:+.2f} s "
            f"in {p['ended'] - p['started']:.2f} s"
            for p in result.passes
        )
        print(f"  run: last pod event handled at {result.caught_up:+.2f} s; passes: {passes}")
        print(
            f"    NodeClaims created from {result.first_created:+.2f} s "
            f"to {result.from_last:+.2f} s (the pass's scheduling before, its creations between)"
        )
    in_burst = [
        sum(1 for q in r.requests if q.answered <= r.last_created) / max(1, r.nodeclaims)
        for r in results
    ]
    print(f"  controller requests per NodeClaim until the last created: {spread(in_burst, '', 2)}")
    per_claim = [len(r.requests) / max(1, r.nodeclaims) for r in results]
    print(f"  controller requests per NodeClaim until initialized: {spread(per_claim, '', 1)}")
    first = results[0]
    for (verb, resource), n in sorted(count_by_call(first.requests).items(), key=lambda x: -x[1]):
        share = n / max(1, first.nodeclaims)
        print(f"    {verb:<7} {resource:<28} {n:6d}  ({share:.2f} per NodeClaim)")
    failures = [f"{count} pods: {failure}" for r in results for failure in r.failures]
    target = BURST_TARGETS.get(count)
    median = statistics.median(r.from_last for r in results)
    if judge and target is not None and median >= target:
        failures.append(f"{count} pods to NodeClaims took {median:.2f} s (target < {target:g} s)")
    return failures


def report_hold(results: list[HoldResult], judge: bool) -> list[str]:
    first = results[0]
    print(f"held: {first.pods} pods on {first.nodes} nodes, {len(results)} run(s):")
    ready = spread([r.nodes_ready for r in results])
    print(f"  NodeClaims launched, registered, initialized in {ready}")
    print(f"  pods created and running in {spread([r.pods_running for r in results])}")
    rss = [r.rss_mb for r in results]
    print(f"  controller RSS {spread(rss, ' MB', 0)} (target < {RSS_TARGET_MB:g} MB)")
    print(f"  quiet: {spread([100 * r.steady_cpu for r in results], '% of a core', 1)}; requests:")
    for (verb, resource), n in sorted(first.steady_requests.items()):
        print(f"    {verb:<7} {resource:<28} {n:6d}")
    for name in ("relabel", "delete"):
        runs: list[FanIn] = [getattr(r, name) for r in results]
        print(f"  {runs[0].what}:")
        print(f"    server emitted {spread([f.events / f.written for f in runs], ' events/s', 0)}")
        print(
            f"    controller handled {spread([f.events / f.handled for f in runs], ' events/s', 0)}"
        )
        behind = spread([f.handled - f.written for f in runs])
        print(f"    last handled after the last written: {behind}")
        per_event = [1e6 * f.cpu / f.events for f in runs]
        print(f"    controller CPU per event {spread(per_event, ' us', 0)}")
    print(
        f"  a fresh controller listed everything in {spread([r.restart_synced for r in results])}"
    )
    restart_cpu = spread([r.restart_cpu for r in results], " s of CPU")
    restart_rss = spread([r.restart_rss_mb for r in results], " MB", 0)
    print(f"    using {restart_cpu}, RSS then {restart_rss}")
    failures = [failure for r in results for failure in r.failures]
    worst = max(max(r.rss_mb, r.restart_rss_mb) for r in results)
    if judge and worst >= RSS_TARGET_MB:
        failures.append(f"controller RSS {worst:.0f} MB (target < {RSS_TARGET_MB:g} MB)")
    return failures


# --- main -----------------------------------------------------------------------------------------


def main() -> int:
    quick = quick_mode()
    try:
        assets = find_envtest()
    except AssetsUnavailable as error:
        print(f"cannot run: {error}")
        return 1
    runs = QUICK_RUNS if quick else RUNS
    failures: list[str] = []
    for count in QUICK_BURST_SIZES if quick else BURST_SIZES:
        failures += report_burst([run_burst(assets, count) for _ in range(runs)], not quick)
    pods, nodes = QUICK_HELD if quick else HELD
    steady = QUICK_STEADY_SECONDS if quick else STEADY_SECONDS
    failures += report_hold([run_hold(assets, pods, nodes, steady) for _ in range(runs)], not quick)
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
