"""Crash anywhere, lose nothing: for generated workloads, a restart or a fault at each
point of the controller's work in turn, and the invariants checked at every virtual
instant and at the end (crash_suite says which). A failure names the invariant and
prints the scenario that replays it: save it and run `joiner simulate FILE`.

Fixed examples by default (CI); to explore more:
    JOINER_CRASH_WORKLOADS=100 JOINER_CRASH_POINTS=200 JOINER_CRASH_SEED=7 \\
        .venv/bin/pytest -q tests/controller/sim/test_sim_properties.py
(``JOINER_CRASH_SEED`` picks other workloads; hypothesis's ``--hypothesis-seed`` does
too when the seed variable is set to ``random``.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import crash_suite
import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from joiner import testing

WORKLOADS = int(os.environ.get("JOINER_CRASH_WORKLOADS", "8"))
POINTS = int(os.environ.get("JOINER_CRASH_POINTS", "80"))
SEED = os.environ.get("JOINER_CRASH_SEED", "19")
LOG = os.environ.get("JOINER_CRASH_LOG")  # a file: one line of progress per workload
PAIRS: list[int] = []  # pairs run by this process, reported at the end
PHASED: list[int] = []  # of those, held by a phase without the fault (explained_by_phase)
PINNED = Path(__file__).parents[2] / "e2e" / "crash"  # scenarios that pin findings


def _seeded(test: Any) -> Any:
    return test if SEED == "random" else seed(int(SEED))(test)


@_seeded
@settings(
    max_examples=WORKLOADS,
    deadline=None,
    database=None,
    derandomize=False,
    phases=(Phase.explicit, Phase.generate),  # the failure prints its own replay
    suppress_health_check=list(HealthCheck),
)
@given(workload=crash_suite.workloads())
def test_no_restart_or_fault_loses_anything(workload: crash_suite.Workload):
    baseline = crash_suite.run(workload, None)
    if baseline.violations:
        pytest.fail(
            "without a fault:\n  " + "\n  ".join(baseline.violations) + "\n\nReplay it with "
            "`joiner simulate FILE --output table`, FILE:\n" + crash_suite.repro(workload, None),
            pytrace=False,
        )
    for fault in crash_suite.iter_points(baseline, POINTS):
        outcome = crash_suite.run(workload, fault)
        PAIRS.append(1)
        problems = crash_suite.compare(baseline, outcome)
        delay = crash_suite.explained_by_phase(workload, baseline, outcome, problems)
        if delay is not None:
            _list_phased(workload, fault, problems[0], delay)
            continue
        if problems:
            pytest.fail(
                f"with {fault}:\n  "
                + "\n  ".join(problems)
                + crash_suite.phase_note(workload, outcome, baseline)
                + "\n\nReplay it with "
                "`joiner simulate FILE --output table`, FILE:\n"
                + crash_suite.repro(workload, fault),
                pytrace=False,
            )
    if LOG:
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"{len(PAIRS)} pairs, all held ({len(PHASED)} by a phase)\n")


def _list_phased(
    workload: crash_suite.Workload, fault: dict[str, Any], problem: str, delay: int
) -> None:
    """A pair held because a run without the fault, ``delay`` s later, makes as many
    NodeClaims: listed in the log with its replay, so its decisions can be read."""
    PHASED.append(1)
    if LOG:
        replay = Path(f"{LOG}.phased-{len(PHASED)}.yaml")
        replay.write_text(crash_suite.repro(workload, fault), encoding="utf-8")
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"held by a phase of {delay} s: {fault}: {problem} ({replay.name})\n")


def test_enough_pairs_were_run():
    """The suite above covers at least 500 (workload, fault point) pairs per run (the
    count is printed for `pytest -s`)."""
    print(f"\ncrash suite: {len(PAIRS)} (workload, fault point) pairs")
    if WORKLOADS * POINTS >= 500 and PAIRS:
        assert len(PAIRS) >= 500


def test_no_capacity_anywhere_leaves_pods_pending_without_a_hot_loop():
    """Every offering fails with insufficient capacity: the pods stay pending with the
    reason, and the controller's API calls per virtual minute stay bounded."""
    unavailable = [
        {"instanceType": name, "zone": zone, "capacityType": kind}
        for name in ("small", "large")
        for zone in ("zone-a", "zone-b")
        for kind in ("spot", "on-demand")
        if not (zone == "zone-b" and kind == "spot")
    ]
    document = testing.scenario(
        "no-capacity",
        crash_suite.CATALOGUE,
        [testing.ec2nodeclass(), testing.nodepool(), testing.deployment("app", 4, "1", "1Gi")],
        [{"fault": {"insufficientCapacity": unavailable}}, {"advance": "30m"}],
        zones=("zone-a", "zone-b"),
    )
    workload = crash_suite.Workload(document, cpu_limit=None, budget=1)
    outcome = crash_suite.run(workload, None)
    final = outcome.result.final
    assert len(final.pending_pods) == 4 and final.nodes == []
    why = ("offering", "capacity", "available")  # the reason names what ran out
    assert all(any(w in p.reason for w in why) for p in final.pending_pods), [
        p.reason for p in final.pending_pods
    ]
    assert outcome.kube_calls / 30 <= crash_suite.MAX_CALLS_PER_MINUTE
    assert outcome.violations == []


def test_a_phase_without_the_fault_that_creates_as_many_nodeclaims_holds_the_pair():
    """Finding 2037-15 (its pinned scenario without the expectations): 4 NodeClaims
    without a fault, 5 with a restart after 7 reconciles, and 5 without a fault when the
    workload starts 5 s or more later (the second empty node is deleted just before the
    scale-up). The suite holds the pair by that phase (and its note names the delay); no
    delay gives 6, and a pair with another problem besides the count is not held."""
    pinned = PINNED / "empty-node-kept-when-pods-arrive-during-validation.yaml"
    document = yaml.safe_load(pinned.read_text())
    steps = document["spec"]["steps"]
    document["spec"]["steps"] = [step for step in steps if "expect" not in step]
    workload = crash_suite.Workload(document, cpu_limit=None, budget=1)
    baseline = crash_suite.run(workload, None)
    restarted = crash_suite.run(workload, {"restart": {"afterReconciles": 7}})
    assert crash_suite.compare(baseline, restarted) == [
        "5 NodeClaims created, without the fault 4 (+0 that failed to start)"
    ]
    problems = crash_suite.compare(baseline, restarted)
    assert crash_suite.explained_by_phase(workload, baseline, restarted, problems) == 5
    note = crash_suite.phase_note(workload, restarted, baseline)
    assert "A run without the fault, the workload 5 s later, creates as many" in note
    assert crash_suite.phase_note(workload, baseline, baseline) == ""
    assert crash_suite.same_count_later(workload, 6) is None
    assert crash_suite.explained_by_phase(workload, baseline, baseline, []) is None
    other = [*problems, "pods pending at the end"]  # the count is not all that is wrong
    assert crash_suite.explained_by_phase(workload, baseline, restarted, other) is None
