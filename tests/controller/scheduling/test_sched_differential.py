"""Differential suite: the same random workloads through upstream Karpenter's scheduler
(the oracle) and Joiner's ``solve``, compared by ``differential.divergences``.

Upstream is not deterministic on ties, so each workload runs through it ``RUNS`` times
(processes in parallel); when Joiner's plan diverges from those, ``CONFIRM_RUNS`` more
runs are made before it counts (a pod upstream places in most runs but not all is not
"placed by every run"). The seed is fixed. ``JOINER_DIFFERENTIAL_EXAMPLES`` sets the number
of workloads (default 300, what ``make test`` runs); ``JOINER_DIFFERENTIAL_SEED`` another
seed. A failure is shrunk by hypothesis and printed as the oracle input document that
reproduces it (``karpenter-solve < input.json``).

The long mode, ``JOINER_DIFFERENTIAL_FINDINGS=DIR``, does not stop at the first
divergence: it records every divergent workload of the run, shrinks each (``sched_shrink``)
and saves it as ``DIR/finding-NNN.json`` (the drawn document beside it as
``finding-NNN-drawn.json``, written as soon as it is found), then writes
``DIR/summary.txt`` (workloads, divergences, time, one line per finding), prints it and
fails if there was any. ``DIR/progress.txt`` says how far a run has got.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import sched_differential as differential
from hypothesis import HealthCheck, given, note, seed, settings
from joiner.testing import oracle
from joiner.testing.workload import solve_workload
from sched_shrink import shrink
from sched_workloads import workloads

EXAMPLES_ENV = "JOINER_DIFFERENTIAL_EXAMPLES"
SEED_ENV = "JOINER_DIFFERENTIAL_SEED"
FINDINGS_ENV = "JOINER_DIFFERENTIAL_FINDINGS"
EXAMPLES = int(os.environ.get(EXAMPLES_ENV, "300"))
SEED = int(os.environ.get(SEED_ENV, "20260127"))
RUNS = 3
CONFIRM_RUNS = 16


def compare(binary: Path, document: dict[str, Any]) -> list[differential.Divergence]:
    """Joiner's divergences from upstream on one workload, confirmed with more runs."""
    plan = solve_workload(document)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(binary, [document] * RUNS)]
    found = differential.divergences(document, runs, plan)
    if found:
        more = oracle.run_many(binary, [document] * CONFIRM_RUNS)
        runs += [oracle.Outcome.of(r) for r in more]
        found = differential.divergences(document, runs, plan)
    return found


def _settings(test: Any) -> Any:
    return seed(SEED)(
        settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            print_blob=False,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )(test)
    )


def test_joiner_decides_as_karpenter_on_random_workloads(
    karpenter_oracle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one test for both modes: a skipped test would fail a run that requires the tier
    if FINDINGS_ENV in os.environ:
        _record_every_divergence(karpenter_oracle, Path(os.environ[FINDINGS_ENV]), capsys)
        return
    reproducer = tmp_path / "oracle-input.json"

    @_settings
    @given(workloads())
    def check(document: dict[str, Any]) -> None:
        found = compare(karpenter_oracle, document)
        if found:
            reproducer.write_text(json.dumps(document, indent=1))
            note(f"oracle input reproducing it ({reproducer}):\n{json.dumps(document, indent=1)}")
        assert not found, "\n".join(str(d) for d in found)

    check()


def _record_every_divergence(
    karpenter_oracle: Path, findings_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The long mode: every divergent workload saved, shrunk after the run, summarised."""
    findings_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    checked = 0
    findings: list[tuple[dict[str, Any], list[differential.Divergence]]] = []

    def progress() -> str:
        minutes = (time.monotonic() - started) / 60
        return (
            f"seed {SEED}: {checked} workloads, {len(findings)} with a divergence, "
            f"{minutes:.1f} min"
        )

    @_settings
    @given(workloads())
    def record(document: dict[str, Any]) -> None:
        nonlocal checked
        found = compare(karpenter_oracle, document)
        checked += 1
        if found:
            findings.append((document, found))
            drawn = findings_dir / f"{_name(len(findings))}-drawn.json"
            drawn.write_text(json.dumps(document, indent=1))
        # what an interrupted run has shown so far
        (findings_dir / "progress.txt").write_text(progress() + "\n")

    record()
    lines = [_save(karpenter_oracle, findings_dir, n, *f) for n, f in enumerate(findings, 1)]
    summary = "\n".join([progress(), *lines])
    (findings_dir / "summary.txt").write_text(summary + "\n")
    with capsys.disabled():
        print(f"\n{summary}")
    assert not findings, summary


def _save(
    binary: Path,
    findings_dir: Path,
    number: int,
    document: dict[str, Any],
    found: list[differential.Divergence],
) -> str:
    """Shrink one finding to the fewest parts that still show the same kinds of
    divergence, save it, and say what it is in one line."""
    checks = {d.check for d in found}

    def same_kind(candidate: dict[str, Any]) -> bool:
        try:
            return any(d.check in checks for d in compare(binary, candidate))
        except Exception:  # a removal may leave a document either side rejects
            return False

    small = shrink(document, same_kind)
    name = _name(number)
    (findings_dir / f"{name}.json").write_text(json.dumps(small, indent=1))
    shown = compare(binary, small) or found
    return f"{name}.json: " + "; ".join(str(d) for d in shown)


def _name(number: int) -> str:
    return f"finding-{number:03d}"
