"""Run the benchmarks: ``python -m benchmarks [NAME ...] [--quick] [--list]``.

Discovers ``benchmarks/bench_*.py`` in name order, runs each module's ``main()``
under a header, then prints a summary; exits nonzero when any benchmark returned
nonzero or failed to run. NAME is ``bench_scheduling`` or just ``scheduling``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

from benchmarks import QUICK_ENV

PREFIX = "bench_"


def discover(directory: Path) -> list[str]:
    """Module names of the benchmarks in ``directory``, in name order."""
    return sorted(path.stem for path in directory.glob(f"{PREFIX}*.py"))


def select(available: list[str], wanted: list[str]) -> list[str]:
    """The modules named in ``wanted`` (all when empty); raises ValueError for unknown names."""
    if not wanted:
        return available
    chosen = [name if name.startswith(PREFIX) else PREFIX + name for name in wanted]
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise ValueError(
            f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(available)}"
        )
    return chosen


def run_one(package: str, name: str) -> tuple[int, str]:
    """Import and run one benchmark; returns (exit code, outcome text)."""
    try:
        module = importlib.import_module(f"{package}.{name}")
        entry = getattr(module, "main", None)
        if not callable(entry):
            return 1, "error: module has no main()"
        code = entry()
    except Exception as error:  # a crashing benchmark is reported, and the others still run
        return 1, f"error: {type(error).__name__}: {error}"
    if not isinstance(code, int) or isinstance(code, bool):
        return 1, f"error: main() returned {code!r}, not an int"
    return code, "ok" if code == 0 else f"FAILED (exit {code})"


def run(package: str, names: list[str]) -> int:
    """Run ``names`` from ``package`` with a header each and a summary; 0 when all passed."""
    results: list[tuple[str, int, str, float]] = []
    for name in names:
        print(f"=== {name} ===", flush=True)
        started = time.perf_counter()
        code, outcome = run_one(package, name)
        elapsed = time.perf_counter() - started
        if outcome.startswith("error"):
            print(outcome, flush=True)
        results.append((name, code, outcome, elapsed))
    print("=== summary ===")
    width = max((len(name) for name in names), default=0)
    for name, _, outcome, elapsed in results:
        print(f"{name:<{width}}  {elapsed:8.1f} s  {outcome}")
    failed = sum(1 for _, code, _, _ in results if code != 0)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--quick", action="store_true", help=f"smoke mode (sets {QUICK_ENV}=1)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    available = discover(Path(__file__).parent)
    if args.list:
        print("\n".join(available))
        return 0
    try:
        names = select(available, args.names)
    except ValueError as error:
        parser.error(str(error))
    if args.quick:
        os.environ[QUICK_ENV] = "1"
    return run(__package__ or "benchmarks", names)


if __name__ == "__main__":
    sys.exit(main())
