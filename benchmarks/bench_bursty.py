"""Headroom on a bursty workload (issue 25): pod pending time and cost with no
CapacityBuffer and with two buffer sizes.

One Deployment of 1 CPU / 2 GiB pods steps up every 10 virtual minutes, by bursts of
``SMALL`` and ``LARGE`` pods in turn, from ``BASE`` replicas; after ``STEPS`` bursts it
goes back to ``BASE`` for a quiet hold, and the cycle repeats. Three runs of the same
day: no buffer, a buffer of ``SMALL`` chunks and one of ``LARGE`` chunks (a
CapacityBuffer on the Deployment, ``replicas`` chunks shaped like its pods). The
catalogue and the NodePool are ``bench_simulator``'s (EC2-like c/m/r types, spot and
on-demand).

Reported per configuration: the pending time (creation until bound to a node) of the
burst pods, p50 and p95, over every burst and over the bursts that fit the buffer; the
run's cost and its extra cost over no buffer; the wall and CPU time of the simulation
(min / median / max of ``RUNS``).

Targets (the benchmark fails when one is missed): p95 pending under 5 s for the bursts
that fit the buffer; an extra cost no higher than the buffer's own capacity priced at the
pool's cheapest fitting offering for the length of the run (the fewest instances of one
type that hold every chunk, at that type's cheapest offering).

``python -m benchmarks bursty`` (``--quick``: one cycle, one run per configuration).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from joiner.clock import from_rfc3339
from joiner.sim.engine import SIM_START, Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

from benchmarks import quick_mode
from benchmarks.bench_simscale import spread
from benchmarks.bench_simulator import (
    CatalogueType,
    DayShape,
    load_catalogue,
    scenario_document,
)

NAME = "web"
CPU_MILLI, MEMORY_MIB = 1000, 2048  # one pod, and one chunk
BASE = 6  # replicas between cycles
SMALL, LARGE = 2, 4  # the bursts, in turn; also the two buffer sizes
STEPS = 6  # bursts per cycle
STEP_MINUTES = 10
QUIET_MINUTES = 30  # at BASE after each cycle
CYCLES, QUICK_CYCLES = 3, 1
RUNS, QUICK_RUNS = 3, 1
BUFFERS = (None, SMALL, LARGE)  # chunks; None: no buffer
P95_TARGET = 5.0  # seconds, for the bursts that fit the buffer


@dataclass(frozen=True)
class Burst:
    at: float  # virtual seconds since the start
    size: int


def bursts(cycles: int) -> list[Burst]:
    """Each cycle: at BASE for QUIET_MINUTES, then STEPS bursts STEP_MINUTES apart."""
    cycle_seconds = (QUIET_MINUTES + STEPS * STEP_MINUTES) * 60
    return [
        Burst(cycle * cycle_seconds + (QUIET_MINUTES + step * STEP_MINUTES) * 60, _size(step))
        for cycle in range(cycles)
        for step in range(STEPS)
    ]


def _size(step: int) -> int:
    return SMALL if step % 2 == 0 else LARGE


def steps(cycles: int) -> list[dict[str, Any]]:
    """The scenario's steps, as ``bursts`` says."""
    ref = {"kind": "Deployment", "name": NAME, "namespace": "default"}
    found: list[dict[str, Any]] = []
    for _ in range(cycles):
        found += [{"scale": {**ref, "replicas": BASE}}, {"advance": f"{QUIET_MINUTES}m"}]
        replicas = BASE
        for step in range(STEPS):
            replicas += _size(step)
            found += [{"scale": {**ref, "replicas": replicas}}, {"advance": f"{STEP_MINUTES}m"}]
    return found


def buffer(chunks: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": f"{NAME}-spare", "namespace": "default"},
        "spec": {
            "scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": NAME},
            "replicas": chunks,
        },
    }


def scenario_text(catalogue: Sequence[CatalogueType], chunks: int | None, cycles: int) -> str:
    """bench_simulator's cluster, catalogue and pool with the bursty Deployment and, when
    ``chunks``, its buffer."""
    shape = DayShape(1, 0, 0, 60, quiet_start_hours=0, quiet_end_hours=0)  # steps replaced
    mix = ((NAME, CPU_MILLI, MEMORY_MIB, 1.0),)
    document = scenario_document(shape, catalogue, "fake", mix)
    document["metadata"]["name"] = "bursty"
    spec = document["spec"]
    spec["steps"] = steps(cycles)
    if chunks:
        spec["objects"].append(buffer(chunks))
    return yaml.safe_dump(document, sort_keys=False)


# --- measuring ----------------------------------------------------------------------------


class PendingTimes:
    """How long each pod stayed pending: from its creation until it was bound to a node,
    read after every virtual instant of the run (a pod bound in the instant it was
    created waited 0 s)."""

    def __init__(self, simulation: Simulation) -> None:
        self.simulation = simulation
        self.created: dict[str, float] = {}  # pod key -> seconds from the start
        self.waited: dict[str, float] = {}  # pod key -> seconds pending, once bound

    def __call__(self) -> None:
        now = self.simulation.observer.elapsed()
        for pod in self.simulation.kube.list("Pod").items:
            meta = pod["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            if key in self.waited:
                continue
            created = self.created.setdefault(
                key, from_rfc3339(meta["creationTimestamp"]) - SIM_START
            )
            if (pod.get("spec") or {}).get("nodeName"):
                self.waited[key] = now - created


@dataclass
class Outcome:
    chunks: int | None
    cost: float  # USD over the run
    hours: float  # virtual
    all_waits: list[float]  # seconds, every burst pod
    fitting_waits: list[float]  # seconds, the pods of bursts that fit the buffer
    walls: list[float]
    cpus: list[float]


def run_once(
    catalogue: Sequence[CatalogueType], chunks: int | None, cycles: int
) -> tuple[SimulationResult, PendingTimes, float, float]:
    """One run: its result, the pods' pending times, and the wall and CPU seconds of the
    simulation (the pending-time reading after every instant included)."""
    scenario = load_scenario(scenario_text(catalogue, chunks, cycles))
    started, cpu_started = time.perf_counter(), time.process_time()
    simulation = Simulation(scenario)
    times = PendingTimes(simulation)
    simulation.after_instant = times
    result = simulation.run()
    return result, times, time.perf_counter() - started, time.process_time() - cpu_started


def measure(
    catalogue: Sequence[CatalogueType], chunks: int | None, cycles: int, runs: int
) -> Outcome:
    """``runs`` runs of one configuration: the figures of the first (the runs are the
    same virtual day), the wall and CPU times of each."""
    walls, cpus, first = [], [], None
    for _ in range(runs):
        result, times, wall, cpu = run_once(catalogue, chunks, cycles)
        walls.append(wall)
        cpus.append(cpu)
        first = first or (result, times)
    assert first is not None
    result, times = first
    by_burst = _waits_by_burst(times, bursts(cycles))
    for burst, waits in by_burst:
        if len(waits) != burst.size:
            raise RuntimeError(f"burst at {burst.at:g} s: {len(waits)} of {burst.size} pods bound")
    fitting = [w for burst, waits in by_burst if chunks and burst.size <= chunks for w in waits]
    return Outcome(
        chunks,
        result.totals.cost,
        result.final.time / 3600,
        [w for _, waits in by_burst for w in waits],
        fitting,
        walls,
        cpus,
    )


def _waits_by_burst(times: PendingTimes, found: Sequence[Burst]) -> list[tuple[Burst, list[float]]]:
    """The pending times of the pods each burst created (created at its instant)."""
    by_time: dict[float, list[float]] = {}
    for key, wait in times.waited.items():
        by_time.setdefault(times.created[key], []).append(wait)
    return [(burst, by_time.get(burst.at, [])) for burst in found]


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value at least ``share`` of the values are at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def buffer_price_per_hour(catalogue: Sequence[CatalogueType], chunks: int) -> float:
    """The buffer's own capacity at the pool's cheapest fitting offering: the fewest
    instances of one type that hold every chunk (by allocatable CPU, memory and pods), at
    that type's cheapest offering, the cheapest such choice."""
    best = math.inf
    for it in catalogue:
        per_node = min(
            (it.vcpu * 1000 - it.overhead_cpu_milli) // CPU_MILLI,
            (it.memory_mib - it.overhead_memory_mib) // MEMORY_MIB,
            it.pods,
        )
        if per_node > 0:
            best = min(best, math.ceil(chunks / per_node) * min(it.spot, it.on_demand))
    return best


# --- reporting ---------------------------------------------------------------------------


def report(outcomes: Sequence[Outcome], catalogue: Sequence[CatalogueType]) -> list[str]:
    """Print the figures; the targets missed."""
    baseline = outcomes[0]
    missed = []
    print(
        "buffer      pending p50 / p95 (s)  fitting bursts p50 / p95 (s)  cost ($)  extra ($)  "
        "allowed ($)"
    )
    for outcome in outcomes:
        label = _label(outcome)
        line = f"{label:<10}  {_p50_p95(outcome.all_waits):<21}  "
        if outcome.chunks is None:
            print(f"{line}{'-':<28}  {outcome.cost:8.3f}")
            continue
        p95 = percentile(outcome.fitting_waits, 0.95)
        extra = outcome.cost - baseline.cost
        allowed = buffer_price_per_hour(catalogue, outcome.chunks) * outcome.hours
        print(
            f"{line}{_p50_p95(outcome.fitting_waits):<28}  {outcome.cost:8.3f}  {extra:9.3f}  "
            f"{allowed:11.3f}"
        )
        if p95 >= P95_TARGET:
            missed.append(
                f"{label}: p95 pending {p95:.1f} s >= {P95_TARGET:g} s for fitting bursts"
            )
        if extra > allowed:
            missed.append(f"{label}: extra cost ${extra:.3f} > ${allowed:.3f}")
    for outcome in outcomes:
        times = f"wall {spread(outcome.walls, 's', 2)}; CPU {spread(outcome.cpus, 's', 2)}"
        print(f"{_label(outcome):<10}  {times}")
    return missed


def _label(outcome: Outcome) -> str:
    return "none" if outcome.chunks is None else f"{outcome.chunks} chunks"


def _p50_p95(waits: Sequence[float]) -> str:
    return f"{percentile(waits, 0.5):5.1f} / {percentile(waits, 0.95):5.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    quick = quick_mode()
    cycles, runs = (QUICK_CYCLES, QUICK_RUNS) if quick else (CYCLES, RUNS)
    catalogue = load_catalogue()
    found = bursts(cycles)
    print(
        f"bursty: Deployment {NAME} ({CPU_MILLI}m, {MEMORY_MIB}Mi), {BASE} replicas, "
        f"{len(found)} bursts of {SMALL} and {LARGE} pods in turn every {STEP_MINUTES} min "
        f"({cycles} cycles); buffers of {SMALL} and {LARGE} chunks"
        f"{' (quick mode)' if quick else ''}"
    )
    outcomes = [measure(catalogue, chunks, cycles, runs) for chunks in BUFFERS]
    missed = report(outcomes, catalogue)
    for line in missed:
        print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
