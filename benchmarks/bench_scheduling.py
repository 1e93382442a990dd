"""Scheduling benchmark: Joiner's ``solve`` side by side with upstream Karpenter's
scheduler on upstream's own benchmark workloads; cost quality on real AWS types.

The peer comparison feeds one oracle input document (``joiner.testing.workload``) to
both schedulers: upstream's benchmark catalogue exactly (``fake.InstanceTypes(400)``: type
i has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods, the fake's five offerings priced from size
and its 100m/10Mi kube-reserved), one NodePool with upstream's benchmark limits (cpu
10000000, memory 10000000Gi), and pods shaped by upstream's generators
(scheduling_benchmark_test.go, seed 42): *plain* (``makeGenericPods``: CPU from {100,
250, 500, 1000, 1500}m, memory from {100, 256, 512, 1024, 2048, 4096}Mi, a random
label), *diverse* (``makeDiversePods``: fifths of plain, zonal spread, hostname spread,
zonal self-affinity and hostname anti-affinity) at 100 to 20,000 pods, and
*preferences* (``makePreferencePods``: a preferred zone and two preferred
anti-affinities) at 4,000. Joiner's time is ``solve`` from the converted inputs (one
core); upstream's is the oracle's ``Scheduler.Solve`` wall time (``solveSeconds``, one
reconcile worker); each the fastest of three solves up to 1,000 pods, one above. Cost is
the NodeClaims' cheapest offerings, $/hour; upstream's plan varies 1-2% from run to run,
and its cheapest run counts. The run fails if Joiner leaves a pod
unplaced, is under 10x upstream's pods/s on any mix of 100 pods or more, costs more than
upstream + 1%, or misses its own targets.

Cost quality uses c5/m5/r5/c6i/m6i/r6i/c7i/m7i types with their us-east-1
on-demand prices (the package's table): the plan's $/hour over the fractional lower bound
(the cheapest mix of types, fractions allowed, whose allocatable covers the summed
CPU and memory requests).

Run: ``python -m benchmarks scheduling`` (``taskset -c 0`` for one core); in quick mode
the sizes are 100 and 500 (preferences 400), the oracle is not run and only correctness
is judged.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.cloudprovider.aws.pricetables import table_path
from joiner.cloudprovider.fake import DEFAULT_ZONES
from joiner.cloudprovider.types import InstanceType, Offering, Overhead
from joiner.scheduling.repack import fractional_cover
from joiner.scheduling.solver import solve
from joiner.testing import oracle
from joiner.testing.assets import AssetsUnavailable, find_oracle
from joiner.testing.workload import solve_inputs

from benchmarks import quick_mode

CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")
SIZES = (100, 1000, 5000, 10000, 20000)
QUICK_SIZES = (100, 500)
PREFERENCE_SIZE, QUICK_PREFERENCE_SIZE = 4000, 400
PLAIN_TARGET = 5000.0  # pods/s at 10,000 plain pods
MIXED_TARGET = 500.0  # pods/s at 5,000 diverse pods
MIXED_20K_SECONDS = 120.0
SPEED_RATIO = 10.0  # Joiner's pods/s over upstream's, on every mix of 100 pods or more
COST_TOLERANCE = 0.01  # Joiner's plan may cost at most upstream's + 1%
COST_TARGET = 1.10
UPSTREAM_TYPES = 400
REPEATS, REPEATED_UP_TO = 3, 1000
# upstream's benchmark NodePool (test.NodePool with these limits)
BENCH_NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {"spec": {"requirements": []}},
        "limits": {"cpu": "10000000", "memory": "10000000Gi"},
    },
}
PRICES = table_path("us-east-1")  # the package's list prices
FAMILIES = {"c5": 2, "m5": 4, "r5": 8, "c6i": 2, "m6i": 4, "r6i": 8, "c7i": 2, "m7i": 4}
# ENI-limited max pods of these Nitro families by vCPU count: (ENIs - 0) x (IPv4 per ENI - 1)
# + 2 with 3x10 ENIs/IPs at 2 vCPU, 4x15 at 4-8, 8x30 at 16-48, 15x50 from 64 [SPEC 5].
ENI_MAX_PODS = ((2, 29), (8, 58), (48, 234), (10**6, 737))


# --- workloads -----------------------------------------------------------------------


def _pod(index: int, rng: random.Random, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    requests = {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORIES)}
    return {
        "metadata": {
            "name": f"pod-{index}",
            "namespace": "default",
            "uid": f"uid-{index}",
            "labels": labels,
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec},
    }


def _random_labels(rng: random.Random) -> dict[str, str]:
    return {"my-label": rng.choice(LABEL_VALUES)}


def _plain(index: int, rng: random.Random) -> dict[str, Any]:
    return _pod(index, rng, _random_labels(rng))


def _spread(key: str) -> Callable[[int, random.Random], dict[str, Any]]:
    def make(index: int, rng: random.Random) -> dict[str, Any]:
        constraint = {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": _random_labels(rng)},
        }
        return _pod(index, rng, _random_labels(rng), topologySpreadConstraints=[constraint])

    return make


def _self_affinity(index: int, rng: random.Random) -> dict[str, Any]:
    labels = {"my-affininity": rng.choice(LABEL_VALUES)}  # upstream's spelling
    term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": wk.ZONE}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return _pod(index, rng, labels, affinity=affinity)


def _anti_affinity(index: int, rng: random.Random) -> dict[str, Any]:
    labels = {"app": "nginx"}
    term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": wk.HOSTNAME}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return _pod(index, rng, labels, affinity=affinity)


MIX = (_plain, _spread(wk.ZONE), _spread(wk.HOSTNAME), _self_affinity, _anti_affinity)


def plain_pods(count: int, seed: int = 42) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [_plain(i, rng) for i in range(count)]


def mixed_pods(count: int, seed: int = 42) -> list[dict[str, Any]]:
    """Upstream's "diverse" pods: fifths of each kind; the remainder is plain."""
    rng = random.Random(seed)
    fifth = count // len(MIX)
    kinds = [kind for kind in MIX for _ in range(fifth)]
    kinds += [_plain] * (count - len(kinds))
    return [kind(i, rng) for i, kind in enumerate(kinds)]


def preference_pods(count: int, seed: int = 42) -> list[dict[str, Any]]:
    """Upstream's preference pods: all app=nginx, preferring zone 1 (can be met), and
    preferring not to share a zone (weight 10, cannot be met for long) or a node
    (weight 1, can) with one another."""
    rng = random.Random(seed)
    labels = {"app": "nginx"}

    def apart(weight: int, key: str) -> dict[str, Any]:
        term = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key}
        return {"weight": weight, "podAffinityTerm": term}

    zone_1 = {
        "matchExpressions": [{"key": wk.ZONE, "operator": "In", "values": [DEFAULT_ZONES[0]]}]
    }
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": zone_1}]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                apart(10, wk.ZONE),
                apart(1, wk.HOSTNAME),
            ]
        },
    }
    return [_pod(i, rng, dict(labels), affinity=affinity) for i in range(count)]


MIXES: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "plain": plain_pods,
    "diverse": mixed_pods,
    "preferences": preference_pods,
}


def upstream_document(pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The oracle input of upstream's benchmark: its catalogue, its NodePool, these pods."""
    types = [
        {
            "name": f"fake-it-{i}",
            "cpu": str(i + 1),
            "memory": f"{2 * (i + 1)}Gi",
            "pods": 10 * (i + 1),
        }
        for i in range(UPSTREAM_TYPES)
    ]
    return {"instanceTypes": types, "nodePools": [BENCH_NODEPOOL], "pods": pods}


def nodepool() -> NodePool:
    return NodePool.from_dict(
        {
            "metadata": {"name": "default"},
            "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}},
        }
    )


# --- real AWS types ------------------------------------------------------------------

_SIZE = re.compile(r"^(?:(\d+)?xlarge|large|medium)$")


def vcpus_of(size: str) -> int | None:
    """large 2, xlarge 4, Nxlarge 4N (metal and odd sizes: None)."""
    match = _SIZE.match(size)
    if not match:
        return None
    if size == "large":
        return 2
    if size == "medium":
        return 1
    return 4 * int(match.group(1) or 1)


def kube_reserved_cpu_milli(vcpus: int) -> int:
    """6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of the rest."""
    share = 60 + (10 if vcpus > 1 else 0) + 5 * max(0, min(vcpus, 4) - 2)
    return share + math.ceil(2.5 * max(0, vcpus - 4))


def aws_instance_types() -> list[InstanceType]:
    """c/m/r families with 2/4/8 GiB per vCPU; allocatable per SPEC 5 (ENI-limited pods)."""
    prices = json.loads(PRICES.read_text())["prices"]
    types = []
    for name, price in sorted(prices.items()):
        family, _, size = name.partition(".")
        vcpus = vcpus_of(size)
        if family not in FAMILIES or vcpus is None:
            continue
        mib = vcpus * FAMILIES[family] * 1024
        max_pods = next(pods for most, pods in ENI_MAX_PODS if vcpus <= most)
        memory_mib = mib - math.ceil(mib * 0.075)  # VM overhead
        capacity = {
            "cpu": vcpus * 1000,
            "memory": memory_mib * 2**20 * 1000,
            "pods": max_pods * 1000,
        }
        overhead = Overhead(
            kube_reserved={
                "cpu": kube_reserved_cpu_milli(vcpus),
                "memory": (11 * max_pods + 255) * 2**20 * 1000,
            },
            eviction_threshold={"memory": 100 * 2**20 * 1000},
        )
        offerings = [Offering(zone, wk.CAPACITY_TYPE_ON_DEMAND, price) for zone in DEFAULT_ZONES]
        labels = {
            **wk.instance_type_labels(name),
            wk.ARCH: "amd64",
            wk.OS: "linux",
            wk.INSTANCE_CPU: str(vcpus),
        }
        requirements = Requirements(Requirement.new(k, IN, [v]) for k, v in labels.items())
        requirements.add(
            Requirement.new(wk.ZONE, IN, list(DEFAULT_ZONES)),
            Requirement.new(wk.CAPACITY_TYPE, IN, [wk.CAPACITY_TYPE_ON_DEMAND]),
        )
        types.append(InstanceType(name, requirements, offerings, capacity, overhead))
    return types


def fractional_lower_bound(types: list[InstanceType], cpu: int, memory: int) -> float:
    """min sum(price x) s.t. the allocatable CPU and memory of the mix cover the requests,
    x >= 0 real (the scheduler's own LP helper, over every type given)."""
    price = np.array([min(o.price for o in t.offerings) for t in types])
    alloc_cpu = np.array([t.allocatable["cpu"] for t in types], dtype=float)
    alloc_memory = np.array([t.allocatable["memory"] for t in types], dtype=float)
    cost, _ = fractional_cover(price, alloc_cpu, alloc_memory, float(cpu), float(memory))
    return cost


# --- runs ------------------------------------------------------------------------------


@dataclass
class Measured:
    """One scheduler on one workload."""

    seconds: float
    cost: float
    nodeclaims: int
    unplaced: int
    cpu_seconds: float | None = None  # Joiner's own CPU time (the load inflates wall time)


def _timed(pods: list[dict[str, Any]], types: list[InstanceType]) -> tuple[float, Any]:
    pool = nodepool()
    start = time.perf_counter()
    plan = solve(pods, [pool], {pool.name: types})
    return time.perf_counter() - start, plan


def _repeats(pods: int) -> int:
    """Solves per measurement (the fastest counts, on a machine shared while measuring);
    upstream's large runs take minutes, so those are measured once."""
    return REPEATS if pods <= REPEATED_UP_TO else 1


def run_joiner(document: dict[str, Any]) -> Measured:
    inputs = solve_inputs(document)
    times, cpu_times, plan = [], [], None
    for _ in range(_repeats(len(inputs.pods))):
        start, cpu_start = time.perf_counter(), time.process_time()
        plan = solve(inputs.pods, inputs.nodepools, inputs.instance_types, inputs.snapshot)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    assert plan is not None
    return Measured(
        min(times), plan.price, len(plan.nodeclaims), len(plan.unplaceable), min(cpu_times)
    )


def run_upstream(binary: Path, document: dict[str, Any]) -> Measured:
    """The oracle's fastest Solve of its runs, and its cheapest plan (it varies by run)."""
    runs = _repeats(len(document["pods"]))
    result = oracle.run(binary, {**document, "options": {"runs": runs}})
    outcome = oracle.Outcome.of(result)
    summaries = result.get("runs") or [
        {"solveSeconds": result["solveSeconds"], "cost": outcome.cost}
    ]
    return Measured(
        min(float(r["solveSeconds"]) for r in summaries),
        min(float(r["cost"]) for r in summaries),
        outcome.nodeclaims,
        len(outcome.errors),
    )


def compare(
    binary: Path | None, sizes: dict[str, tuple[int, ...]]
) -> list[tuple[str, int, Measured, Measured | None]]:
    """Each mix at each size through Joiner and (with a binary) upstream, printed as it
    goes: pods/s and $/hour of each, and Joiner's ratios to upstream."""
    print(
        f"  {'mix':12} {'pods':>6} | {'Joiner pods/s':>13} {'CPU ms':>8} {'$/h':>9} {'nodes':>5} | "
        f"{'upstream pods/s':>15} {'$/h':>9} {'nodes':>5} | {'speed x':>7} {'cost x':>6}"
    )
    rows = []
    for mix, counts in sizes.items():
        for count in counts:
            document = upstream_document(MIXES[mix](count))
            joiner = run_joiner(document)
            upstream = run_upstream(binary, document) if binary is not None else None
            rows.append((mix, count, joiner, upstream))
            print(_row(mix, count, joiner, upstream), flush=True)
    return rows


def _row(mix: str, count: int, joiner: Measured, upstream: Measured | None) -> str:
    rate = count / joiner.seconds
    cpu_ms = 1000 * (joiner.cpu_seconds or 0.0)
    left = (
        f"  {mix:12} {count:6d} | {rate:13.0f} {cpu_ms:8.1f} {joiner.cost:9.2f}"
        f" {joiner.nodeclaims:5d}"
    )
    if upstream is None:
        return left + " | (no oracle)"
    speed = (count / joiner.seconds) / (count / upstream.seconds)
    return (
        f"{left} | {count / upstream.seconds:15.0f} {upstream.cost:9.2f} {upstream.nodeclaims:5d}"
        f" | {speed:7.1f} {joiner.cost / upstream.cost:6.3f}"
    )


def _peer_failures(rows: list[tuple[str, int, Measured, Measured | None]]) -> list[str]:
    failures = []
    for mix, count, joiner, upstream in rows:
        if joiner.unplaced:
            failures.append(f"{mix} {count}: Joiner left {joiner.unplaced} pods unplaced")
        if upstream is None or count < 100:
            continue
        speed = upstream.seconds / joiner.seconds
        if speed < SPEED_RATIO:
            failures.append(f"{mix} {count}: {speed:.1f}x upstream's pods/s < {SPEED_RATIO:.0f}x")
        if joiner.cost > upstream.cost * (1 + COST_TOLERANCE) + 1e-9:
            failures.append(
                f"{mix} {count}: ${joiner.cost:.2f}/h > upstream's ${upstream.cost:.2f}/h + 1%"
            )
    return failures


def cost_quality(label: str, pods: list[dict[str, Any]], types: list[InstanceType]) -> float:
    _, plan = _timed(pods, types)
    total = res.sum_lists(
        {k: v for k, v in r.items() if k in ("cpu", "memory")}
        for r in (nc.requests for nc in plan.nodeclaims)
    )
    bound = fractional_lower_bound(types, total["cpu"], total["memory"])
    ratio = plan.price / bound
    print(
        f"  {label:22} {len(pods):5d} pods: ${plan.price:8.3f}/h vs bound ${bound:8.3f}/h "
        f"= {ratio:.3f} ({len(plan.nodeclaims)} nodes, {len(plan.unplaceable)} unplaced)"
    )
    return ratio


def main() -> int:
    quick = quick_mode()
    sizes = QUICK_SIZES if quick else SIZES
    preference = QUICK_PREFERENCE_SIZE if quick else PREFERENCE_SIZE
    binary = None if quick else _oracle()
    print(
        f"scheduling: Joiner and upstream Karpenter, upstream's benchmark ({UPSTREAM_TYPES} types)"
    )
    rows = compare(binary, {"plain": sizes, "diverse": sizes, "preferences": (preference,)})
    failures = _peer_failures(rows)
    if not quick:
        failures += _speed_failures(rows)
    aws = aws_instance_types()
    print(f"cost quality ({len(aws)} AWS c/m/r 5th-7th gen types, on-demand us-east-1 prices)")
    count = 500 if quick else 2000
    ratio = cost_quality("plain mixed sizes", plain_pods(count), aws)
    if ratio > COST_TARGET and not quick:
        failures.append(f"cost ratio {ratio:.3f} > {COST_TARGET} on plain mixed sizes")
    # Informational: hostname anti-affinity forces one node per fifth of the pods, which
    # the fractional bound (no node count) cannot see.
    cost_quality("five-way mix (info)", mixed_pods(count), aws)
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


def _oracle() -> Path | None:
    try:
        return find_oracle()
    except AssetsUnavailable as error:
        print(f"  upstream not measured: {error}")
        return None


def _speed_failures(rows: list[tuple[str, int, Measured, Measured | None]]) -> list[str]:
    rate = {(mix, count): count / joiner.seconds for mix, count, joiner, _ in rows}
    failures = []
    if rate["plain", 10000] < PLAIN_TARGET:
        failures.append(f"plain 10,000: {rate['plain', 10000]:.0f} pods/s < {PLAIN_TARGET:.0f}")
    if rate["diverse", 5000] < MIXED_TARGET:
        failures.append(f"diverse 5,000: {rate['diverse', 5000]:.0f} pods/s < {MIXED_TARGET:.0f}")
    if 20000 / rate["diverse", 20000] > MIXED_20K_SECONDS:
        failures.append(f"diverse 20,000 took {20000 / rate['diverse', 20000]:.0f} s")
    return failures


if __name__ == "__main__":
    sys.exit(main())
