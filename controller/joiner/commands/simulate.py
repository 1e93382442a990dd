"""``joiner simulate FILE``: run the controller against a simulated cluster.

Exit status: 0 when the run completed, every ``expect`` held and every ``settle``
settled; 1 when an expectation failed; 2 when the scenario is invalid (the message
names the field) or a ``settle`` step reached its bound with work still in flight.
Failed expectations and unsettled steps are also printed to standard error, one line
each, whatever the output format.
"""

from __future__ import annotations

import argparse
import sys

from joiner.sim.engine import Simulation
from joiner.sim.scenario import ScenarioError, load_scenario

# A run whose settle step did not settle answers nothing it was asked: as bad as bad input.
UNSETTLED_EXIT_CODE = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="show what your NodePools would do, on a simulated cluster",
        description="Run the real controller on a virtual clock against a simulated "
        "cluster described by a scenario file (see docs/scenario.md) and print what "
        "happened: nodes launched, where pods went, cost per hour, pending pods and why.",
    )
    parser.add_argument("file", metavar="FILE", help="scenario YAML (apiVersion joiner.sim/v1)")
    parser.add_argument(
        "--output", choices=("table", "json"), default="table", help="output format"
    )
    parser.add_argument("--report", metavar="DIR", help="also write an HTML report with plots")
    parser.add_argument("--seed", type=int, default=0, help="seed for generated names and uids")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        result = Simulation(load_scenario(args.file), seed=args.seed).run()
    except ScenarioError as err:
        print(f"joiner simulate: {args.file}: {err}", file=sys.stderr)
        return ScenarioError.exit_code
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
