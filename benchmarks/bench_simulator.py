"""Simulator speed and disruption quality over a diurnal day (issues 7 and 8).

Ten Deployments of varied, realistic requests follow a day curve: 200 pods at night,
5,000 at the midday peak, back to 200, with the replicas changed every 30 virtual
minutes (``scale`` steps, then two ``advance`` samples). The catalogue is
EC2-like: the c, m and r families of generations 5 to 7 (Intel and AMD), sizes large to
8xlarge, with on-demand prices from the package's us-east-1 price list, spot at
``SPOT_FRACTION`` of on-demand, vCPU from the size name and memory from the family ratio
(c 2 GiB, m 4 GiB, r 8 GiB per vCPU), and allocatable after the kubelet's reservation
(the EKS AMI formula).

Reported: wall time, virtual hours, pods and nodes at the peak, total cost; the cluster's
$/hour after every scale-down once it settled (else at the end of the hold), against the
fractional lower bound (the cheapest $/hour of any mix of whole-or-partial instances whose
allocatable CPU and memory cover the summed requests); evictions per hour and the most evictions of
one Deployment's pods per replica in an hour of steady load; NodeClaims created and
deleted; churn: a node replaced by one of its own type, or a chain A -> B -> A.

Targets (full run): under 20 s wall with ``provider: fake`` (60 s with ``aws``), cost
within 1.15x of the bound after each scale-down settles, at most one disruption per pod
per hour of steady load, no churn. Quick mode runs 6 virtual hours peaking at 600 pods,
checks quality the same way and does not judge the wall time.

``python -m benchmarks.bench_simulator --provider fake|aws|both`` (default both):
``aws`` runs the embedded AWS cloud (moto with the real provider code and catalogue,
the pool limited to the same families and sizes, on-demand prices from the same list as
the scenario's ``cloud.prices``, the bound from the types it offers);
where that cloud cannot be built, the benchmark says so instead of running something
else.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml
from joiner.api import labels as wk
from joiner.cloudprovider.aws.pricetables import table_path
from joiner.sim.engine import Simulation
from joiner.sim.result import EventRecord, NodeClaimRecord, SimulationResult
from joiner.sim.scenario import ScenarioError, load_scenario

from benchmarks import quick_mode

# The package's us-east-1 list prices (joiner.cloudprovider.aws.pricetables).
PRICE_LIST = table_path("us-east-1")
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SPOT_FRACTION = 0.35  # spot at about a third of on-demand, the usual discount for c/m/r
FAMILY_PATTERN = re.compile(r"^(?P<category>[cmr])(?P<generation>[567])(?P<variant>[ai]?)$")
SIZES = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32}  # vCPU
GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8}
MAX_PODS = {"large": 29, "xlarge": 58, "2xlarge": 58, "4xlarge": 234, "8xlarge": 234}
MIB = 2**20
GIB = 2**30

# (name, cpu millicores, memory MiB, share of the replicas)
Mix = Sequence[tuple[str, int, int, float]]
DEPLOYMENTS: Mix = (
    ("web", 250, 512, 0.22),
    ("api", 500, 1024, 0.18),
    ("auth", 200, 256, 0.08),
    ("search", 1000, 2048, 0.08),
    ("worker", 1000, 1536, 0.12),
    ("cache", 500, 4096, 0.06),
    ("ingest", 750, 1024, 0.08),
    ("reports", 2000, 4096, 0.05),
    ("ml-infer", 4000, 8192, 0.03),
    ("sidecar-heavy", 300, 768, 0.10),
)

SAMPLES_PER_HOLD = 2
SPEED_TARGETS = {"fake": 20.0, "aws": 60.0}  # wall seconds for the full day (issue 20)
COST_RATIO_TARGET = 1.15
DISRUPTIONS_PER_POD_HOUR_TARGET = 1.0
POLICIES = ("WhenEmptyOrUnderutilized", "Balanced")  # the consolidation policies compared


@dataclass(frozen=True)
class DayShape:
    hours: float
    low: int
    peak: int
    change_minutes: int
    quiet_start_hours: float  # steady low load before the ramp
    quiet_end_hours: float  # steady low load after it

    def total_replicas(self, hour: float) -> int:
        """The day curve: flat at ``low``, a raised-cosine bump to ``peak``, flat again."""
        ramp_end = self.hours - self.quiet_end_hours
        if hour < self.quiet_start_hours or hour >= ramp_end:
            return self.low
        phase = (hour - self.quiet_start_hours) / (ramp_end - self.quiet_start_hours)
        return round(self.low + (self.peak - self.low) * (1 - math.cos(2 * math.pi * phase)) / 2)

    def change_times(self) -> list[float]:
        """Virtual hours at which the replicas are set."""
        count = round(self.hours * 60 / self.change_minutes)
        return [i * self.change_minutes / 60 for i in range(count)]


FULL_DAY = DayShape(24, 200, 5000, 30, quiet_start_hours=2, quiet_end_hours=4)
QUICK_DAY = DayShape(6, 60, 600, 30, quiet_start_hours=1, quiet_end_hours=2)


def replicas_at(shape: DayShape, hour: float, mix: Mix = DEPLOYMENTS) -> dict[str, int]:
    """Each Deployment's replicas: its share of the total, at least one."""
    total = shape.total_replicas(hour)
    return {name: max(1, round(total * share)) for name, _, _, share in mix}


# --- the catalogue ----------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogueType:
    name: str
    vcpu: int
    memory_mib: int
    pods: int
    on_demand: float
    overhead_cpu_milli: int
    overhead_memory_mib: int

    @property
    def family(self) -> str:
        return self.name.partition(".")[0]

    @property
    def spot(self) -> float:
        return round(self.on_demand * SPOT_FRACTION, 5)


def kube_reserved_cpu(vcpu: int) -> int:
    """Millicores the EKS AMI reserves: 6% of the first core, 1% of the second, 0.5% of
    the next two, 0.25% of the rest."""
    steps = ((1, 60), (1, 10), (2, 5))
    reserved, left = 0.0, vcpu
    for cores, milli in steps:
        take = min(cores, left)
        reserved += take * milli
        left -= take
    return round(reserved + left * 2.5)


def kube_reserved_memory_mib(pods: int) -> int:
    """11 MiB per pod plus 255 MiB, and the 100 MiB hard eviction threshold."""
    return 11 * pods + 255 + 100


def load_catalogue(price_list: Path = PRICE_LIST) -> list[CatalogueType]:
    prices: dict[str, float] = json.loads(price_list.read_text())["prices"]
    catalogue = []
    for name, price in sorted(prices.items()):
        family, _, size = name.partition(".")
        match = FAMILY_PATTERN.match(family)
        if match is None or size not in SIZES:
            continue
        vcpu = SIZES[size]
        pods = MAX_PODS[size]
        catalogue.append(
            CatalogueType(
                name=name,
                vcpu=vcpu,
                memory_mib=vcpu * GIB_PER_VCPU[match["category"]] * 1024,
                pods=pods,
                on_demand=price,
                overhead_cpu_milli=kube_reserved_cpu(vcpu),
                overhead_memory_mib=kube_reserved_memory_mib(pods),
            )
        )
    return catalogue


def instance_type_spec(it: CatalogueType) -> dict[str, Any]:
    labels = {k: v for k, v in wk.instance_type_labels(it.name).items() if k != wk.INSTANCE_TYPE}
    return {
        "name": it.name,
        "cpu": str(it.vcpu),
        "memory": f"{it.memory_mib}Mi",
        "pods": it.pods,
        "overhead": {"cpu": f"{it.overhead_cpu_milli}m", "memory": f"{it.overhead_memory_mib}Mi"},
        "labels": labels,
        "offerings": [
            {"zone": zone, "capacityType": capacity_type, "price": price}
            for zone in ZONES
            for capacity_type, price in (("spot", it.spot), ("on-demand", it.on_demand))
        ],
    }


# --- the scenario -----------------------------------------------------------------------


def deployment(name: str, cpu_milli: int, memory_mib: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": f"example/{name}",
                            "resources": {
                                "requests": {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi"}
                            },
                        }
                    ]
                },
            },
        },
    }


def scenario_document(
    shape: DayShape,
    catalogue: Sequence[CatalogueType],
    provider: str,
    mix: Mix = DEPLOYMENTS,
    expire_after: str = "Never",
    policy: str = "WhenEmptyOrUnderutilized",
    gates: str = "SpotToSpotConsolidation=true",
    pool_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    cloud: dict[str, Any] = {"provider": provider}
    if provider == "fake":
        cloud["instanceTypes"] = [instance_type_spec(it) for it in catalogue]
    else:  # the same real on-demand prices, in place of the provider's estimate
        cloud["prices"] = str(PRICE_LIST)
    steps: list[dict[str, Any]] = []
    previous: dict[str, int] = {}
    for hour in shape.change_times():
        wanted = replicas_at(shape, hour, mix)
        for name, replicas in wanted.items():
            if previous.get(name) != replicas:
                ref = {"kind": "Deployment", "name": name, "namespace": "default"}
                steps.append({"scale": {**ref, "replicas": replicas}})
        previous = wanted
        for half in range(SAMPLES_PER_HOLD):  # snapshots within the hold, to see it settle
            minutes = shape.change_minutes / SAMPLES_PER_HOLD
            steps.append({"name": f"hold from {hour:g}h ({half + 1})", "advance": f"{minutes:g}m"})
    return {
        "apiVersion": "joiner.sim/v1",
        "kind": "Scenario",
        "metadata": {"name": "diurnal"},
        "spec": {
            # A busy machine must not cut a measurement short (the defaults: 10m, 10M steps).
            "limits": {"wallTime": "1h", "steps": 100_000_000},
            "cluster": {"name": "bench", "region": "us-east-1", "zones": list(ZONES)},
            "cloud": cloud,
            "settings": {"FEATURE_GATES": gates},
            "objects": [
                {
                    "apiVersion": "karpenter.k8s.aws/v1",
                    "kind": "EC2NodeClass",
                    "metadata": {"name": "default"},
                    "spec": {
                        "role": "KarpenterNodeRole-bench",
                        "amiSelectorTerms": [{"alias": "al2023@latest"}],
                        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "bench"}}],
                        "securityGroupSelectorTerms": [
                            {"tags": {"karpenter.sh/discovery": "bench"}}
                        ],
                    },
                },
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "metadata": {"name": "default", "annotations": dict(pool_annotations or {})},
                    "spec": {
                        "template": {
                            "spec": {
                                "nodeClassRef": {
                                    "group": "karpenter.k8s.aws",
                                    "kind": "EC2NodeClass",
                                    "name": "default",
                                },
                                "requirements": [
                                    {
                                        "key": wk.CAPACITY_TYPE,
                                        "operator": "In",
                                        "values": ["spot", "on-demand"],
                                    },
                                    {
                                        "key": wk.INSTANCE_FAMILY,
                                        "operator": "In",
                                        "values": sorted({it.family for it in catalogue}),
                                    },
                                    {
                                        "key": wk.INSTANCE_SIZE,
                                        "operator": "In",
                                        "values": list(SIZES),
                                    },
                                ],
                                "expireAfter": expire_after,
                            }
                        },
                        "disruption": {
                            "consolidationPolicy": policy,
                            "consolidateAfter": "1m",
                        },
                    },
                },
                *(deployment(name, cpu, memory) for name, cpu, memory, _ in mix),
            ],
            "steps": steps,
        },
    }


# --- the lower bound ---------------------------------------------------------------------


def fractional_lower_bound(
    cpu: float, memory: float, options: Sequence[tuple[float, float, float]]
) -> float:
    """The cheapest $/hour of a fractional mix of (cpu, memory, price) options covering
    ``cpu`` cores and ``memory`` bytes: a linear program with two constraints, so an
    optimum mixes at most two options; try every single option and every pair."""
    best = math.inf
    for c, m, p in options:
        best = min(best, p * max(cpu / c, memory / m))
    for (c1, m1, p1), (c2, m2, p2) in combinations(options, 2):
        det = c1 * m2 - c2 * m1
        if det == 0:
            continue
        x1 = (cpu * m2 - c2 * memory) / det  # both constraints tight
        x2 = (c1 * memory - cpu * m1) / det
        if x1 >= 0 and x2 >= 0:
            best = min(best, x1 * p1 + x2 * p2)
    return best


def bound_options(simulation: Simulation) -> list[tuple[float, float, float]]:
    """What the NodePool may launch, as its cloud offers it: (allocatable cores, allocatable
    bytes, cheapest available offering) of every type the pool's requirements allow."""
    pool = simulation.operator.state.nodepools["default"]
    allowed = pool.template.requirements_with_labels()
    options = []
    for it in simulation.cloud.provider.get_instance_types(pool):
        price = it.cheapest_price()
        if price is None or not it.requirements.is_compatible(allowed):
            continue
        allocatable = it.allocatable
        options.append((allocatable["cpu"] / 1000, allocatable["memory"] / 1000, price))
    return options


def requests_at(replicas: dict[str, int]) -> tuple[float, float]:
    by_name = {name: (cpu, memory) for name, cpu, memory, _ in DEPLOYMENTS}
    cpu = sum(by_name[n][0] / 1000 * r for n, r in replicas.items())
    memory = sum(by_name[n][1] * MIB * r for n, r in replicas.items())
    return cpu, memory


# --- reading the result ------------------------------------------------------------------


@dataclass
class CostCheck:
    hour: float
    cost_per_hour: float
    bound: float
    pending: int
    settled: bool  # the cost stood still for a sample interval before this one

    @property
    def ratio(self) -> float:
        return self.cost_per_hour / self.bound if self.bound else math.inf


@dataclass
class Quality:
    cost_checks: list[CostCheck] = field(default_factory=list)
    evictions_by_hour: dict[int, int] = field(default_factory=dict)
    steady_disruptions_per_pod_hour: float = 0.0
    worst_disruptions_per_pod_hour: float = 0.0
    same_type_replacements: list[str] = field(default_factory=list)
    flaps: list[str] = field(default_factory=list)


def cost_checks(
    result: SimulationResult, shape: DayShape, options: Sequence[tuple[float, float, float]]
) -> list[CostCheck]:
    """For every hold that followed a scale-down: the cluster's $/hour against the bound
    for what was running, once it settled (the first sample from the end of the hold on
    whose cost equals the sample before, while the load stays the same), else at the end
    of the hold."""
    samples = [r for r in result.steps if r.action == "advance"]
    totals = [shape.total_replicas(hour) for hour in shape.change_times()]
    checks = []
    for hold, hour in enumerate(shape.change_times()):
        if hold == 0 or totals[hold] >= totals[hold - 1]:
            continue
        end = (hold + 1) * SAMPLES_PER_HOLD - 1
        chosen, settled = end, False
        for index in range(end, len(samples)):
            if totals[index // SAMPLES_PER_HOLD] != totals[hold]:
                break
            if samples[index].snapshot.cost_per_hour == samples[index - 1].snapshot.cost_per_hour:
                chosen, settled = index, True
                break
        cpu, memory = requests_at(replicas_at(shape, hour))
        snapshot = samples[chosen].snapshot
        checks.append(
            CostCheck(
                hour=snapshot.time / 3600,
                cost_per_hour=snapshot.cost_per_hour,
                bound=fractional_lower_bound(cpu, memory, options),
                pending=len(snapshot.pending_pods),
                settled=settled,
            )
        )
    return checks


def _deployment_of(pod_name: str) -> str | None:
    """Pods are named <deployment>-<template hash>-<suffix>."""
    base = pod_name.rsplit("-", 2)[0]
    return base if any(base == name for name, *_ in DEPLOYMENTS) else None


def disruptions_per_pod_hour(
    events: Sequence[EventRecord], shape: DayShape, steady_only: bool
) -> float:
    """The most evictions of one Deployment's pods in one virtual hour, per replica it had
    then: above 1, some replica was disrupted more than once that hour."""
    counts: dict[tuple[int, str], int] = defaultdict(int)
    for event in events:
        if event.reason == "Evicted":
            name = _deployment_of(event.name)
            if name is not None:
                counts[(int(event.time // 3600), name)] += 1
    worst = 0.0
    for (hour, name), evicted in counts.items():
        if steady_only and not _steady_hour(shape, hour):
            continue
        worst = max(worst, evicted / replicas_at(shape, hour)[name])
    return worst


def _steady_hour(shape: DayShape, hour: int) -> bool:
    """No replica change during the hour (the quiet night hours)."""
    totals = {shape.total_replicas(h) for h in shape.change_times() if hour <= h < hour + 1}
    before = shape.total_replicas(hour - shape.change_minutes / 60) if hour > 0 else None
    return len(totals) == 1 and before in (None, *totals)


@dataclass(frozen=True)
class Replacement:
    """One replace command: the NodeClaims it removed and the ones it created."""

    replaced: tuple[str, ...]
    created: tuple[str, ...]


def replacements(
    nodeclaims: Sequence[NodeClaimRecord], events: Sequence[EventRecord]
) -> dict[str, Replacement]:
    """Each replaced NodeClaim -> its command. The DisruptionTerminating message names the
    command's nodes ("Underutilized: replace a, b with 1 node(s) (...)"); the replacements
    are the NodeClaims created at that instant."""
    created_at: dict[float, list[str]] = defaultdict(list)
    for claim in nodeclaims:
        created_at[claim.created_at].append(claim.name)
    found: dict[str, Replacement] = {}
    for event in events:
        if event.reason == "DisruptionTerminating" and ": replace " in event.message:
            names = event.message.split(": replace ", 1)[1].split(" with ", 1)[0]
            found[event.name] = Replacement(
                tuple(names.split(", ")), tuple(created_at.get(event.time, ()))
            )
    return found


def churn(
    nodeclaims: Sequence[NodeClaimRecord], events: Sequence[EventRecord]
) -> tuple[list[str], list[str]]:
    """Same-type replacements (a node replaced by its own type), and flapping: a node
    replaced alone by type B whose replacement is in turn replaced alone by type A again.
    (Several nodes consolidated into one of a type seen before is not churn.)"""
    types = {c.name: c.instance_type for c in nodeclaims}
    commands = replacements(nodeclaims, events)
    same, flaps = [], []
    for old, command in commands.items():
        old_type = types.get(old)
        for new in command.created:
            new_type = types.get(new)
            if old_type is not None and old_type == new_type:
                same.append(f"{old} ({old_type}) replaced by {new} ({new_type})")
            follow = commands.get(new)
            if len(command.replaced) != 1 or follow is None or len(follow.replaced) != 1:
                continue
            for newer in follow.created:
                if old_type is not None and types.get(newer) == old_type != new_type:
                    flaps.append(f"{old} {old_type} -> {new} {new_type} -> {newer} {old_type}")
    return same, flaps


def assess(
    result: SimulationResult, shape: DayShape, options: Sequence[tuple[float, float, float]]
) -> Quality:
    quality = Quality(cost_checks=cost_checks(result, shape, options))
    for event in result.events:
        if event.reason == "Evicted":
            hour = int(event.time // 3600)
            quality.evictions_by_hour[hour] = quality.evictions_by_hour.get(hour, 0) + 1
    quality.steady_disruptions_per_pod_hour = disruptions_per_pod_hour(result.events, shape, True)
    quality.worst_disruptions_per_pod_hour = disruptions_per_pod_hour(result.events, shape, False)
    quality.same_type_replacements, quality.flaps = churn(result.nodeclaims, result.events)
    return quality


# --- running and reporting -----------------------------------------------------------------


def run(
    provider: str,
    shape: DayShape,
    policy: str = POLICIES[0],
    deletion_cost: bool = False,
    seed: int = 0,
    rebalance: bool = False,
) -> tuple[Simulation, SimulationResult, float, float]:
    """The day through the public loader, as a user's file would go; wall and CPU seconds
    of the simulation itself (building the cloud included). On a shared machine the CPU
    time says what the wall time would be on an idle one. ``deletion_cost`` turns the
    PodDeletionCostManagement gate on; ``seed`` is the simulation's (generated names, so
    the order of ties: another seed is another equally likely day); ``rebalance`` opts the
    NodePool into the rebalancer with its default churn budget."""
    catalogue = load_catalogue()
    gates = "SpotToSpotConsolidation=true" + (
        ",PodDeletionCostManagement=true" if deletion_cost else ""
    )
    annotations = {wk.REBALANCE: "true"} if rebalance else {}
    document = scenario_document(
        shape, catalogue, provider, policy=policy, gates=gates, pool_annotations=annotations
    )
    text = yaml.safe_dump(document, sort_keys=False)
    scenario = load_scenario(text)
    started, cpu_started = time.perf_counter(), time.process_time()
    simulation = Simulation(scenario, seed=seed)
    result = simulation.run()
    return simulation, result, time.perf_counter() - started, time.process_time() - cpu_started


def report(
    result: SimulationResult,
    wall: float,
    cpu: float,
    shape: DayShape,
    quality: Quality,
    provider: str,
) -> None:
    snapshots = [r.snapshot for r in result.steps]
    pods_peak = max(sum(len(n.pods) for n in s.nodes) + len(s.pending_pods) for s in snapshots)
    nodes_peak = max(len(s.nodes) for s in snapshots)
    hours = result.final.time / 3600
    print(f"provider                      {provider}")
    print(
        f"wall time                     {wall:.1f} s for {hours:g} virtual hours (CPU {cpu:.1f} s)"
    )
    print(f"pods peak / nodes peak        {pods_peak} / {nodes_peak}")
    print(f"total cost                    ${result.totals.cost:.2f}")
    print(
        f"nodeclaims created / deleted  {result.totals.nodeclaims_created} / "
        f"{result.totals.nodeclaims_deleted}"
    )
    print(
        f"evictions                     {result.totals.evictions} "
        f"({result.totals.evictions / hours:.0f}/h; busiest hour "
        f"{max(quality.evictions_by_hour.values(), default=0)})"
    )
    print(
        f"pod pending seconds           {result.totals.pod_pending_seconds:.0f} "
        f"(pod-hours: {result.totals.pod_pending_seconds / 3600:.1f})"
    )
    print(
        "disruptions per pod-hour      "
        f"steady {quality.steady_disruptions_per_pod_hour:.2f}, "
        f"any hour {quality.worst_disruptions_per_pod_hour:.2f} "
        f"(target <= {DISRUPTIONS_PER_POD_HOUR_TARGET:g} in steady hours)"
    )
    print(f"same-type replacements        {len(quality.same_type_replacements)}")
    for line in quality.same_type_replacements[:5]:
        print(f"    {line}")
    print(f"A->B->A flaps                 {len(quality.flaps)}")
    for line in quality.flaps[:5]:
        print(f"    {line}")
    print("cost after each scale-down, once settled (else at the end of the hold):")
    print("    hour   $/hour   bound   ratio  pending")
    for check in quality.cost_checks:
        print(
            f"    {check.hour:5.2f}  {check.cost_per_hour:7.3f}  {check.bound:6.3f}  "
            f"{check.ratio:5.2f}  {check.pending}{'' if check.settled else '  (still moving)'}"
        )


def failures(quality: Quality, wall: float, provider: str, judge_speed: bool) -> list[str]:
    found = []
    if judge_speed and wall > SPEED_TARGETS[provider]:
        found.append(f"wall time {wall:.1f} s > {SPEED_TARGETS[provider]:g} s")
    worst = max(quality.cost_checks, key=lambda c: c.ratio, default=None)
    if worst is not None and worst.ratio > COST_RATIO_TARGET:
        found.append(
            f"cost {worst.ratio:.2f}x the lower bound at {worst.hour:.1f}h "
            f"(target {COST_RATIO_TARGET}x)"
        )
    if any(c.pending for c in quality.cost_checks):
        found.append("pods still pending at the end of a hold")
    if quality.steady_disruptions_per_pod_hour > DISRUPTIONS_PER_POD_HOUR_TARGET:
        found.append(
            f"{quality.steady_disruptions_per_pod_hour:.2f} disruptions per pod-hour in steady load"
        )
    if quality.same_type_replacements:
        found.append(f"{len(quality.same_type_replacements)} same-type replacements")
    if quality.flaps:
        found.append(f"{len(quality.flaps)} A->B->A flaps")
    return found


@dataclass(frozen=True)
class DaySummary:
    """One day's figures for the side-by-side table (rebalancer off and on)."""

    label: str
    worst_ratio: float
    steady_disruptions: float
    flaps: int
    same_type: int
    total_cost: float
    evictions: int
    moves: int
    wall: float
    cpu: float


def benchmark(
    provider: str,
    policy: str = POLICIES[0],
    deletion_cost: bool = False,
    seed: int = 0,
    rebalance: bool = False,
) -> tuple[int, DaySummary | None]:
    quick = quick_mode()
    shape = QUICK_DAY if quick else FULL_DAY
    print(
        f"diurnal day: {shape.hours:g} virtual hours, {shape.low} -> {shape.peak} -> "
        f"{shape.low} pods in {len(DEPLOYMENTS)} Deployments, changed every "
        f"{shape.change_minutes} min, consolidationPolicy {policy}"
        f"{' (quick mode: speed not judged)' if quick else ''}"
        f"{'; PodDeletionCostManagement on' if deletion_cost else ''}"
        f"{f'; seed {seed}' if seed else ''}"
        f"{'; rebalancer on' if rebalance else ''}"
    )
    try:
        simulation, result, wall, cpu = run(provider, shape, policy, deletion_cost, seed, rebalance)
    except ScenarioError as error:
        if provider == "aws":
            print(f"provider aws: not available in this build ({error})")
            return 0, None
        raise
    options = bound_options(simulation)
    print(f"catalogue                     {len(options)} types the pool may launch")
    quality = assess(result, shape, options)
    report(result, wall, cpu, shape, quality, provider)
    moves = [e for e in result.events if e.reason == "Rebalanced" and e.kind == "NodePool"]
    print(f"rebalance moves               {len(moves)}")
    for event in moves:
        print(f"    {event.time / 3600:5.2f}h  {event.message}")
    missed = failures(quality, wall, provider, judge_speed=not quick)
    for line in missed:
        print(f"MISSED: {line}")
    summary = DaySummary(
        label=f"{provider}, rebalancer {'on' if rebalance else 'off'}",
        worst_ratio=max((c.ratio for c in quality.cost_checks), default=0.0),
        steady_disruptions=quality.steady_disruptions_per_pod_hour,
        flaps=len(quality.flaps),
        same_type=len(quality.same_type_replacements),
        total_cost=result.totals.cost,
        evictions=result.totals.evictions,
        moves=len(moves),
        wall=wall,
        cpu=cpu,
    )
    return (1 if missed else 0), summary


def side_by_side(summaries: Sequence[DaySummary]) -> None:
    print("side by side:")
    print(
        "    day                        worst ratio  steady disr./pod-h  flaps  same-type  "
        "total $   evictions  moves  wall s  CPU s"
    )
    for s in summaries:
        print(
            f"    {s.label:26} {s.worst_ratio:11.3f}  {s.steady_disruptions:18.2f}  {s.flaps:5}  "
            f"{s.same_type:9}  {s.total_cost:8.2f}  {s.evictions:9}  {s.moves:5}  "
            f"{s.wall:6.1f}  {s.cpu:5.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_simulator")
    parser.add_argument(
        "--provider",
        choices=("fake", "aws", "both"),
        default="both",
        help="which cloud to simulate (default: both; aws reports when it is not built)",
    )
    parser.add_argument(
        "--policy",
        choices=POLICIES,
        default=POLICIES[0],
        help="the NodePool's consolidationPolicy (default: WhenEmptyOrUnderutilized)",
    )
    parser.add_argument(
        "--pod-deletion-cost",
        action="store_true",
        help="turn the PodDeletionCostManagement gate on (compare evictions with and without)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the simulation's seed (default 0): the order of ties, so another seed is "
        "another equally likely day; compare settings over several",
    )
    parser.add_argument(
        "--rebalance",
        choices=("off", "on", "both"),
        default="off",
        help="opt the NodePool into the rebalancer (joiner.sh/rebalance); both: the day with "
        "it off, then on, and a side-by-side table (default: off)",
    )
    args = parser.parse_args(argv if argv is not None else [])
    providers = ("fake", "aws") if args.provider == "both" else (args.provider,)
    settings = {"off": (False,), "on": (True,), "both": (False, True)}[args.rebalance]
    codes, summaries = [], []
    for provider in providers:
        for rebalance in settings:
            code, summary = benchmark(
                provider, args.policy, args.pod_deletion_cost, args.seed, rebalance
            )
            codes.append(code)
            summaries += [summary] if summary is not None else []
    if len(summaries) > 1:
        side_by_side(summaries)
    return max(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
