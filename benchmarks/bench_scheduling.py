"""Scheduling benchmark: throughput on Karpenter's synthetic catalogue, cost on real AWS types.

Throughput reproduces Karpenter's own scheduling benchmark: 400 instance types
(type i has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods), one NodePool, pods with CPU
from {100, 250, 500, 1000, 1500}m and memory from {100, 256, 512, 1024, 2048, 4096}Mi
(seed 42). "plain" pods have no constraints; "mixed" pods are split into fifths:
plain, zonal spread (maxSkew 1), hostname spread, zonal self-affinity and hostname
anti-affinity. Any unplaced pod fails the run.

Cost quality uses c5/m5/r5/c6i/m6i/r6i/c7i/m7i types with their us-east-1
on-demand prices (the package's table): the plan's $/hour over the fractional lower bound
(the cheapest mix of types, fractions allowed, whose allocatable covers the summed
CPU and memory requests).

Run: ``python -m benchmarks scheduling`` (``taskset -c 0`` for one core); in quick mode
the sizes are 100 and 500 and only correctness is judged.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.cloudprovider.aws.pricetables import table_path
from joiner.cloudprovider.fake import DEFAULT_ZONES, benchmark_instance_types
from joiner.cloudprovider.types import InstanceType, Offering, Overhead
from joiner.scheduling.repack import fractional_cover
from joiner.scheduling.solver import solve

from benchmarks import quick_mode

CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")
SIZES = (100, 1000, 5000, 10000, 20000)
QUICK_SIZES = (100, 500)
PLAIN_TARGET = 5000.0  # pods/s at 10,000 plain pods
MIXED_TARGET = 500.0  # pods/s at 5,000 mixed pods
MIXED_20K_SECONDS = 120.0
COST_TARGET = 1.10
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
    labels = {"my-affinity": rng.choice(LABEL_VALUES)}
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
    """Fifths of each kind; the remainder is plain."""
    rng = random.Random(seed)
    fifth = count // len(MIX)
    kinds = [kind for kind in MIX for _ in range(fifth)]
    kinds += [_plain] * (count - len(kinds))
    return [kind(i, rng) for i, kind in enumerate(kinds)]


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


def _timed(pods: list[dict[str, Any]], types: list[InstanceType]) -> tuple[float, Any]:
    pool = nodepool()
    start = time.perf_counter()
    plan = solve(pods, [pool], {pool.name: types})
    return time.perf_counter() - start, plan


def throughput(
    label: str,
    make: Callable[[int], list[dict[str, Any]]],
    types: list[InstanceType],
    sizes: tuple[int, ...],
) -> dict[int, tuple[float, int, int]]:
    results = {}
    for size in sizes:
        seconds, plan = _timed(make(size), types)
        rate = size / seconds
        results[size] = (rate, len(plan.nodeclaims), len(plan.unplaceable))
        print(
            f"  {label:6} {size:6d} pods: {seconds:7.2f} s {rate:9.0f} pods/s "
            f"{len(plan.nodeclaims):5d} nodes {len(plan.unplaceable):3d} unplaced",
            flush=True,
        )
    return results


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
    failures = []
    synthetic = benchmark_instance_types(400)
    print("scheduling throughput (400 synthetic types, one nodepool)")
    plain = throughput("plain", plain_pods, synthetic, sizes)
    mixed = throughput("mixed", mixed_pods, synthetic, sizes)
    if any(r[2] for r in (*plain.values(), *mixed.values())):
        failures.append("some pods were left unplaced")
    if not quick:
        failures += _speed_failures(plain, mixed)
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


def _speed_failures(
    plain: dict[int, tuple[float, int, int]], mixed: dict[int, tuple[float, int, int]]
) -> list[str]:
    failures = []
    if plain[10000][0] < PLAIN_TARGET:
        failures.append(f"plain 10,000: {plain[10000][0]:.0f} pods/s < {PLAIN_TARGET:.0f}")
    if mixed[5000][0] < MIXED_TARGET:
        failures.append(f"mixed 5,000: {mixed[5000][0]:.0f} pods/s < {MIXED_TARGET:.0f}")
    if 20000 / mixed[20000][0] > MIXED_20K_SECONDS:
        failures.append(f"mixed 20,000 took {20000 / mixed[20000][0]:.0f} s")
    return failures


if __name__ == "__main__":
    sys.exit(main())
