"""``joiner render WHAT``: print manifests Joiner installs, as YAML (or JSON).

Adding a renderer is one function returning the documents and one entry in RENDERERS;
a renderer that needs options declares them with ``add_arguments``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from joiner.api.crds import render_crds
from joiner.infra.iam import ControllerPolicyParams, check_field, controller_policy


@dataclass(frozen=True)
class Renderer:
    help: str
    render: Callable[[argparse.Namespace], list[dict[str, Any]]]
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    default_output: str = "yaml"


def _crds(args: argparse.Namespace) -> list[dict[str, Any]]:
    return render_crds()


def _iam_policy(args: argparse.Namespace) -> list[dict[str, Any]]:
    params = ControllerPolicyParams(
        args.cluster_name,
        args.region,
        args.account_id,
        args.node_role_arn,
        args.queue_arn,
        args.partition,
    )
    return [controller_policy(params)]


def _iam_policy_arguments(parser: argparse.ArgumentParser) -> None:
    def checked(field: str) -> Callable[[str], str]:
        def check(value: str) -> str:
            try:
                return check_field(field, value)
            except ValueError as error:
                raise argparse.ArgumentTypeError(str(error)) from None

        check.__name__ = field
        return check

    options = (
        ("--cluster-name", "cluster_name", True, "the EKS cluster the policy is scoped to"),
        ("--region", "region", True, "the cluster's AWS region"),
        ("--account-id", "account_id", True, "the AWS account id"),
        ("--node-role-arn", "node_role_arn", True, "the only role the controller may pass"),
        ("--queue-arn", "queue_arn", False, "the interruption queue (no SQS access without)"),
        ("--partition", "partition", False, "the AWS partition (default aws)"),
    )
    for flag, field, required, help_text in options:
        parser.add_argument(
            flag, dest=field, required=required, type=checked(field), help=help_text
        )
    parser.set_defaults(partition="aws", queue_arn=None)


RENDERERS: dict[str, Renderer] = {
    "crds": Renderer("the NodePool, NodeClaim and EC2NodeClass CustomResourceDefinitions", _crds),
    "iam-policy": Renderer(
        "the controller's least-privilege IAM policy", _iam_policy, _iam_policy_arguments, "json"
    ),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print manifests Joiner installs (CRDs, ...)",
        description="Print manifests Joiner installs, as multi-document YAML or JSON.",
    )
    targets = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    for name, renderer in RENDERERS.items():
        target = targets.add_parser(name, help=renderer.help, description=f"Print {renderer.help}.")
        target.add_argument(
            "-o",
            "--output",
            choices=("yaml", "json"),
            default=renderer.default_output,
            help=f"output format (default {renderer.default_output})",
        )
        if renderer.add_arguments:
            renderer.add_arguments(target)
        target.set_defaults(handler=lambda args, renderer=renderer: _print(renderer, args))


def _print(renderer: Renderer, args: argparse.Namespace) -> int:
    documents = renderer.render(args)
    sys.stdout.write(format_documents(documents, args.output))
    return 0


def format_documents(documents: list[dict[str, Any]], output: str) -> str:
    """Multi-document YAML, or JSON (one object, or a list when there are several)."""
    if output == "json":
        return json.dumps(documents[0] if len(documents) == 1 else documents, indent=2) + "\n"
    return yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True)
