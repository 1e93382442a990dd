"""``joiner explain KIND NAME``: why a pod is pending or where it went, why a node (or
its NodeClaim) is this type and is or is not being disrupted, where a NodePool stands.

The answer comes from a snapshot of a simulation after one of its steps (``--simulate
FILE --at STEP``) or of a live cluster (``--kubeconfig``, read-only: docs/explain.md),
through the same code (``joiner.explain``). Exit status: 0 answered; 1 the cluster
refused a read; 2 bad input (an unknown object, scenario or kubeconfig: the message
names it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

from joiner.explain.answer import NotFoundError
from joiner.explain.cluster import Cluster
from joiner.explain.node import explain_node, explain_nodeclaim
from joiner.explain.nodepool import explain_nodepool
from joiner.explain.pod import explain_pod
from joiner.explain.snapshot import Snapshot
from joiner.kube.api import ApiError
from joiner.kube.http import ConfigError
from joiner.serve import StartupError
from joiner.settings import SettingsError
from joiner.sim.bounds import BoundReached
from joiner.sim.scenario import ScenarioError, load_scenario

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

QUESTIONS: dict[str, Callable[[Cluster, str], Any]] = {
    "pod": explain_pod,
    "node": explain_node,
    "nodeclaim": explain_nodeclaim,
    "nodepool": explain_nodepool,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="say why a pod is pending, why a node is there, where a NodePool stands",
        description="Explain one object: a pod (NAMESPACE/NAME: why it is pending, for each "
        "NodePool, or where it landed and why), a node or nodeclaim (why this type, zone "
        "and capacity type; why it is or is not being disrupted now), a nodepool (limits, "
        "budgets, drift). Reads a simulation after one of its steps (--simulate) or a live "
        "cluster (read-only). See docs/explain.md.",
        epilog="exit status: 0 answered; 1 the cluster refused a read; 2 bad input "
        "(unknown object, scenario or kubeconfig)",
    )
    parser.add_argument("kind", choices=tuple(QUESTIONS), help="what to explain")
    parser.add_argument("name", metavar="NAME", help="its name (a pod's as NAMESPACE/NAME)")
    parser.add_argument(
        "--simulate", metavar="FILE", help="explain a simulation of this scenario, not a cluster"
    )
    parser.add_argument(
        "--at",
        metavar="STEP",
        help="with --simulate: after this step (its index or name; default: the last)",
    )
    parser.add_argument("--seed", type=int, default=0, help="with --simulate: the run's seed")
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    parser.add_argument(
        "--cluster-name",
        metavar="NAME",
        help="the EKS cluster, for its instance types (default: $CLUSTER_NAME; AWS region "
        "and credentials as the AWS SDK finds them)",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.at is not None and not args.simulate:
        return _fail("--at needs --simulate", EXIT_BAD_INPUT)
    try:
        answer = QUESTIONS[args.kind](Cluster(_snapshot(args)), args.name)
    except (ScenarioError, BoundReached) as err:
        return _fail(f"{args.simulate}: {err}", err.exit_code)
    except (NotFoundError, ConfigError, SettingsError, StartupError) as err:
        return _fail(str(err), EXIT_BAD_INPUT)
    except ApiError as err:
        return _fail(str(err), EXIT_FAILED)
    if args.output == "json":
        print(json.dumps(dataclasses.asdict(answer), indent=2))
    else:
        print("\n".join(answer.lines()))
    return 0


def _snapshot(args: argparse.Namespace) -> Snapshot:
    if args.simulate:
        from joiner.explain.simulation import snapshot_at  # the simulator: only when asked

        return snapshot_at(load_scenario(args.simulate), args.at, args.seed)
    from joiner.explain.live import aws_instance_types, read_cluster

    return read_cluster(args.kubeconfig, args.context, aws_instance_types(args.cluster_name))


def _fail(message: str, code: int) -> int:
    print(f"joiner explain: {message}", file=sys.stderr)
    return code
