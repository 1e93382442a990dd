"""Benchmarks: one module ``bench_<name>.py`` per subject, each with ``main() -> int``
that prints its figures and returns nonzero when a target or correctness check fails.

Run them with ``python -m benchmarks [NAME ...] [--quick]`` (``make bench``). In quick
mode (``--quick`` or ``JOINER_BENCH_QUICK=1``) a benchmark runs a small smoke version
of itself: same code paths and correctness checks, fewer iterations, and it does not
judge speed targets, which need full-size runs.
"""

from __future__ import annotations

import os

QUICK_ENV = "JOINER_BENCH_QUICK"


def quick_mode() -> bool:
    """Whether the runner (or the caller's environment) asked for a smoke run."""
    return os.environ.get(QUICK_ENV, "") not in ("", "0")
