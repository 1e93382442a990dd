"""``joiner simulate FILE``: run the controller against a simulated cluster.

Exit status: 0 when the run completed, every ``expect`` held and every ``settle``
settled; 1 when an expectation failed; 2 when the scenario is invalid (the message
names the field) or a ``settle`` step reached its bound with work still in flight; 3
when the run reached one of its bounds (wall time, steps, NodeClaims, an instant that
never settles: it did not converge), with a message naming the step. Failed
expectations and unsettled steps are also printed to standard error, one line each,
whatever the output format. On a terminal, a table run shows a progress bar on
standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys

from joiner.api.duration import format_duration
from joiner.sim import bounds, progress
from joiner.sim.bounds import BoundReached
from joiner.sim.engine import Simulation
from joiner.sim.scenario import ScenarioError, load_scenario
from joiner.top import rich_installed

# A run whose settle step did not settle answers nothing it was asked: as bad as bad input.
UNSETTLED_EXIT_CODE = 2


EXIT_STATUS = (
    "exit status: 0 done, every expect held and every settle settled; 1 an expect failed; "
    f"{ScenarioError.exit_code} invalid scenario (the message names the field) or a settle "
    f"that did not settle; {BoundReached.exit_code} the run reached a bound and did not "
    f"converge (spec.limits.wallTime, default {format_duration(bounds.DEFAULT_WALL_SECONDS)}; "
    f"spec.limits.steps, default {bounds.DEFAULT_STEPS:,}; {bounds.MAX_NODECLAIMS:,} "
    f"NodeClaims at once; an instant that never ends). Workloads may ask for at most "
    f"{bounds.MAX_PODS:,} pods."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="show what your NodePools would do, on a simulated cluster",
        description="Run the real controller on a virtual clock against a simulated "
        "cluster described by a scenario file (see docs/scenario.md) and print what "
        "happened: nodes launched, where pods went, cost per hour, pending pods and why.",
        epilog=EXIT_STATUS,
    )
    parser.add_argument("file", metavar="FILE", help="scenario YAML (apiVersion joiner.sim/v1)")
    parser.add_argument(
        "--output", choices=("table", "json"), default="table", help="output format"
    )
    parser.add_argument("--report", metavar="DIR", help="also write an HTML report with plots")
    parser.add_argument("--seed", type=int, default=0, help="seed for generated names and uids")
    parser.add_argument(
        "--explain-at",
        metavar="STEP",
        help="instead of the whole run: run up to this step (its index or name) and explain "
        "each pod waiting for capacity and each NodePool there, as `joiner explain` does "
        "(docs/explain.md)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.explain_at is not None:
        return _explain_at(args)
    if args.output == "table" and not rich_installed():  # before a run whose table is lost
        print(
            "joiner simulate: --output table needs rich: pip install 'joiner[sim]' "
            "(or use --output json)",
            file=sys.stderr,
        )
        return 2
    try:
        scenario = load_scenario(args.file)
        for warning in scenario.conversion_warnings:
            print(f"joiner simulate: {args.file}: warning: {warning}", file=sys.stderr)
        with _progress_bar(args.output) as bar:
            result = Simulation(scenario, seed=args.seed, progress=bar).run()
    except (ScenarioError, BoundReached) as err:
        print(f"joiner simulate: {args.file}: {err}", file=sys.stderr)
        return err.exit_code
    if args.output == "json":
        print(result.to_json())
    else:
        from joiner.sim.table import render_table

        print(render_table(result))
    if args.report:
        from joiner.sim.report import write_report

        path = write_report(result, args.report)
        print(f"report: {path}", file=sys.stderr)
    for problem in result.unsettled + result.failures:
        print(f"joiner simulate: {args.file}: {problem}", file=sys.stderr)
    if result.unsettled:
        return UNSETTLED_EXIT_CODE
    return 1 if result.failures else 0


def _explain_at(args: argparse.Namespace) -> int:
    """The answers of ``joiner explain`` for every pending pod and NodePool after a step."""
    if args.report:
        print("joiner simulate: --report needs the whole run, not --explain-at", file=sys.stderr)
        return 2
    from joiner.explain.cluster import Cluster
    from joiner.explain.overview import explain_all
    from joiner.explain.simulation import snapshot_at

    try:
        scenario = load_scenario(args.file)
        overview = explain_all(
            Cluster(snapshot_at(scenario, args.explain_at, args.seed, "--explain-at"))
        )
    except (ScenarioError, BoundReached) as err:
        print(f"joiner simulate: {args.file}: {err}", file=sys.stderr)
        return err.exit_code
    if args.output == "json":
        print(json.dumps(dataclasses.asdict(overview), indent=2))
    else:
        print("\n".join(overview.lines()))
    return 0


def _progress_bar(output: str) -> contextlib.AbstractContextManager[progress.Reporter | None]:
    """A bar on standard error for people watching a terminal; nothing when the output
    is for a program (json), standard error is not a terminal, or tqdm is missing."""
    if output == "json" or not sys.stderr.isatty() or not progress.bar_available():
        return contextlib.nullcontext()
    return progress.ProgressBar(sys.stderr)
