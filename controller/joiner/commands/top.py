"""``joiner top``: the cluster at a glance, live in a terminal.

Each node with its pool, type, zone, capacity type, price and its CPU and memory
requests against allocatable as bars; NodeClaims still launching and nodes being
deleted marked; totals and $/h per pool and for the cluster. Redrawn on watch events
and when the terminal is resized, at most once a second. ``--once`` prints one frame
and exits. Ctrl-C exits with 0. Read-only: it needs get/list/watch on nodes, pods,
nodeclaims and nodepools (docs/operations.md). Prices: ``joiner.top.prices``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from joiner.kube.api import ApiError
from joiner.kube.http import ClusterConfig, ConfigError, HttpKube
from joiner.top import rich_installed

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "top",
        help="show the cluster's nodes, pools, requests and prices, live",
        description="Show each node with its NodePool, instance type, zone, capacity type, "
        "price and its CPU and memory requests against allocatable; NodeClaims still "
        "launching and nodes being deleted; totals and $/h per pool and for the cluster. "
        "Redrawn when the cluster changes (at most once a second) until Ctrl-C. Needs "
        "get/list/watch on nodes, pods, nodeclaims, nodepools. See docs/operations.md.",
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    parser.add_argument(
        "--once", action="store_true", help="print one frame and exit (for scripts)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not rich_installed():
        return _fail("needs rich: pip install 'joiner[top]'", EXIT_BAD_INPUT)
    from joiner.top.live import follow, list_once  # rich is there: import what needs it
    from joiner.top.screen import Screen

    try:
        config = ClusterConfig.from_kubeconfig(args.kubeconfig, args.context)
    except ConfigError as err:
        return _fail(str(err), EXIT_BAD_INPUT)
    # A failing watch is named on the frame; its log line would scribble over the screen.
    logging.getLogger("joiner").addHandler(logging.NullHandler())
    kube = HttpKube(config, managed_fields=False)
    screen = Screen(title=f"joiner top {config.server}")
    try:
        objects = list_once(kube)  # a refused list fails here, in one line
        if args.once:
            screen.draw(objects)
            return 0
        resized = threading.Event()
        signal.signal(signal.SIGWINCH, lambda *_: resized.set())
        with screen.live():
            screen.draw(objects)
            follow(kube, screen.draw, threading.Event(), redraw=resized)
    except ApiError as err:
        return _fail(str(err), EXIT_FAILED)
    except KeyboardInterrupt:
        pass  # Ctrl-C: the way to leave
    finally:
        kube.close()
    return 0


def _fail(message: str, code: int) -> int:
    print(f"joiner top: {message}", file=sys.stderr)
    return code
