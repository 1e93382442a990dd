"""The ``joiner`` command. Each subcommand lives in its own module under
``joiner.commands`` and exposes ``register(subparsers)``; the handler it sets
returns the process exit code (0 ok, 1 failed expectation, 2 bad input)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from joiner import __version__

# Subcommand modules, in the order `joiner --help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "simulate",
    "validate",
    "convert",
    "render",
    "top",
    "explain",
    "controller",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="joiner",
        description="Joiner: a Karpenter-compatible node autoscaler for Amazon EKS.",
    )
    parser.add_argument("--version", action="version", version=f"joiner {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        importlib.import_module(f"joiner.commands.{module}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
