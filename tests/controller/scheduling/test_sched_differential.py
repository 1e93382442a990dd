"""Differential suite: the same random workloads through upstream Karpenter's scheduler
(the oracle) and Joiner's ``solve``, compared by ``differential.divergences``.

Upstream is not deterministic on ties, so each workload runs through it ``RUNS`` times
(processes in parallel); when Joiner's plan diverges from those, ``CONFIRM_RUNS`` more
runs are made before it counts (a pod upstream places in most runs but not all is not
"placed by every run"). The seed is fixed. ``JOINER_DIFFERENTIAL_EXAMPLES`` sets the number
of workloads (default 300, what ``make test`` runs); ``JOINER_DIFFERENTIAL_SEED`` another
seed. A failure is shrunk by hypothesis and printed as the oracle input document that
reproduces it (``karpenter-solve < input.json``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import sched_differential as differential
from hypothesis import HealthCheck, given, note, seed, settings
from joiner.testing import oracle
from joiner.testing.workload import solve_workload
from sched_workloads import workloads

EXAMPLES_ENV = "JOINER_DIFFERENTIAL_EXAMPLES"
SEED_ENV = "JOINER_DIFFERENTIAL_SEED"
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


def test_joiner_decides_as_karpenter_on_random_workloads(
    karpenter_oracle: Path, tmp_path: Path
) -> None:
    reproducer = tmp_path / "oracle-input.json"

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(workloads())
    def check(document: dict[str, Any]) -> None:
        found = compare(karpenter_oracle, document)
        if found:
            reproducer.write_text(json.dumps(document, indent=1))
            note(f"oracle input reproducing it ({reproducer}):\n{json.dumps(document, indent=1)}")
        assert not found, "\n".join(str(d) for d in found)

    check()
