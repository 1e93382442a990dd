"""The simulator at production scale (issue 20): wall time and peak memory.

Two cases, each run in a fresh child process so that its peak RSS is its own:

- ``replicas``: ``examples/replicas-10000.yaml``, one Deployment of 10,000 replicas of
  500m/1Gi on a pool of 4-vCPU types, from zero to all running and back to zero (the
  case that did not converge before). Targets: under 30 s wall, peak RSS under 1 GB.
- ``day``: 24 virtual hours of a diurnal workload, 200 -> 20,000 -> 200 pods across 50
  Deployments of mixed sizes (the ten shapes of ``bench_simulator`` at five scales),
  with consolidation on and nodes expiring after 6 hours, on the fake cloud with
  ``bench_simulator``'s catalogue. Target: under 3 minutes wall.

Quick mode runs ``examples/replicas-1000.yaml`` and a 6-hour day peaking at 2,000 pods,
and does not judge the targets.

``python -m benchmarks.bench_simscale [--case replicas|day|all] [--runs N]``: each case
N times (default 1), reported as min/median/max.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

from benchmarks import quick_mode
from benchmarks.bench_simulator import (
    DEPLOYMENTS,
    DayShape,
    Mix,
    load_catalogue,
    scenario_document,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MB = 1_000_000

# The ten shapes of bench_simulator at five scales of their requests, sharing its replicas.
SCALES = (0.5, 0.75, 1.0, 1.5, 2.0)
MIX_50: Mix = tuple(
    (f"{name}-{index}", round(cpu * scale), round(memory * scale), share / len(SCALES))
    for name, cpu, memory, share in DEPLOYMENTS
    for index, scale in enumerate(SCALES)
)
EXPIRE_AFTER = "6h"
BIG_DAY = DayShape(24, 200, 20_000, 30, quiet_start_hours=2, quiet_end_hours=4)
QUICK_BIG_DAY = DayShape(6, 200, 2_000, 30, quiet_start_hours=1, quiet_end_hours=2)


@dataclass(frozen=True)
class Target:
    wall_seconds: float
    rss_mb: float | None = None


TARGETS = {"replicas": Target(30.0, 1_000.0), "day": Target(180.0)}


def scenario_text(case: str, quick: bool) -> str:
    if case == "replicas":
        return (EXAMPLES / ("replicas-1000.yaml" if quick else "replicas-10000.yaml")).read_text()
    shape = QUICK_BIG_DAY if quick else BIG_DAY
    document = scenario_document(shape, load_catalogue(), "fake", MIX_50, EXPIRE_AFTER)
    document["metadata"]["name"] = "diurnal-20000"
    return yaml.safe_dump(document, sort_keys=False)


def child(case: str) -> int:
    """One run of a case in this process: its figures as one JSON line on stdout."""
    scenario = load_scenario(scenario_text(case, quick_mode()))
    started = time.perf_counter()
    result = Simulation(scenario).run()
    wall = time.perf_counter() - started
    peak_pods = max(
        len(r.snapshot.pending_pods) + sum(len(n.pods) for n in r.snapshot.nodes)
        for r in result.steps
    )
    figures = {
        "wall": wall,
        "virtual_hours": result.final.time / 3600,
        "peak_pods": peak_pods,
        "peak_nodes": max(len(r.snapshot.nodes) for r in result.steps),
        "cost": result.totals.cost,
        "nodeclaims_created": result.totals.nodeclaims_created,
        "evictions": result.totals.evictions,
        "failures": [f for r in result.steps for f in r.failures],
    }
    print(json.dumps(figures))
    return 0


def run_child(case: str) -> tuple[dict, float]:
    """One run in a fresh interpreter: its figures, with the CPU seconds of the whole
    child (on a shared machine, what the wall time would be on an idle one), and its peak
    RSS in MB."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_simscale", "--child", case],
        stdout=subprocess.PIPE,
        cwd=EXAMPLES.parent,
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{case}: the run exited {process.returncode}")
    figures = json.loads(output.decode().splitlines()[-1])
    figures["cpu"] = usage.ru_utime + usage.ru_stime
    return figures, usage.ru_maxrss * 1024 / MB


def spread(values: list[float], unit: str, digits: int = 1) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f} {unit}"
    return (
        f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} / "
        f"{max(values):.{digits}f} {unit} (min / median / max of {len(values)})"
    )


def benchmark(case: str, runs: int, quick: bool) -> list[str]:
    """Run a case ``runs`` times; print its figures; the targets it missed."""
    outcomes = [run_child(case) for _ in range(runs)]
    first, _ = outcomes[0]
    walls = [figures["wall"] for figures, _ in outcomes]
    rss = [peak for _, peak in outcomes]
    print(f"case {case}{' (quick mode: targets not judged)' if quick else ''}")
    print(f"  wall time              {spread(walls, 's')}")
    print(f"  CPU time (process)     {spread([f['cpu'] for f, _ in outcomes], 's')}")
    print(f"  peak RSS               {spread(rss, 'MB', 0)}")
    print(f"  virtual hours          {first['virtual_hours']:g}")
    print(f"  pods / nodes at peak   {first['peak_pods']:,} / {first['peak_nodes']:,}")
    print(f"  total cost             ${first['cost']:.2f}")
    print(f"  NodeClaims created     {first['nodeclaims_created']:,}")
    print(f"  evictions              {first['evictions']:,}")
    missed = [f"{case}: {failure}" for figures, _ in outcomes for failure in figures["failures"]]
    target = TARGETS[case]
    if not quick and max(walls) > target.wall_seconds:
        missed.append(f"{case}: wall time {max(walls):.1f} s > {target.wall_seconds:g} s")
    if not quick and target.rss_mb is not None and max(rss) > target.rss_mb:
        missed.append(f"{case}: peak RSS {max(rss):.0f} MB > {target.rss_mb:g} MB")
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_simscale")
    parser.add_argument("--case", choices=("replicas", "day", "all"), default="all")
    parser.add_argument("--runs", type=int, default=1, help="runs of each case (default 1)")
    parser.add_argument("--child", choices=tuple(TARGETS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv if argv is not None else [])
    if args.child:
        return child(args.child)
    quick = quick_mode()
    cases = tuple(TARGETS) if args.case == "all" else (args.case,)
    missed = [line for case in cases for line in benchmark(case, args.runs, quick)]
    for line in missed:
        print(f"MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
