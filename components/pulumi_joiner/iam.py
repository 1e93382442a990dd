"""The IAM documents of the components, as Pulumi Outputs.

The documents themselves are pure functions in ``joiner.infra.iam`` (no Pulumi import, so
``joiner render iam-policy`` prints the very same JSON); this module only resolves the
inputs they need.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
from joiner.infra.iam import (
    NODE_ROLE_MANAGED_POLICIES,
    ControllerPolicyParams,
    controller_policy,
    interruption_queue_policy,
    irsa_trust_policy,
    managed_policy_arn,
    node_role_managed_policy_arns,
    node_role_trust_policy,
    pod_identity_trust_policy,
)

from pulumi_joiner._common import invoke_opts, json_output

__all__ = [
    "NODE_ROLE_MANAGED_POLICIES",
    "AwsContext",
    "ControllerPolicyParams",
    "aws_context",
    "controller_policy",
    "controller_policy_json",
    "interruption_queue_policy",
    "irsa_trust_policy",
    "managed_policy_arn",
    "node_role_managed_policy_arns",
    "node_role_trust_policy",
    "pod_identity_trust_policy",
]


@dataclass(frozen=True)
class AwsContext:
    """Where the resources live: given explicitly, or read from the AWS provider."""

    region: pulumi.Output[str]
    account_id: pulumi.Output[str]
    partition: pulumi.Output[str]


def aws_context(
    parent: pulumi.Resource,
    region: pulumi.Input[str] | None = None,
    account_id: pulumi.Input[str] | None = None,
    partition: pulumi.Input[str] | None = None,
) -> AwsContext:
    opts = invoke_opts(parent)
    return AwsContext(
        region=pulumi.Output.from_input(region)
        if region is not None
        else aws.get_region_output(opts=opts).region,
        account_id=pulumi.Output.from_input(account_id)
        if account_id is not None
        else aws.get_caller_identity_output(opts=opts).account_id,
        partition=pulumi.Output.from_input(partition)
        if partition is not None
        else aws.get_partition_output(opts=opts).partition,
    )


def controller_policy_json(
    cluster_name: pulumi.Input[str],
    context: AwsContext,
    node_role_arn: pulumi.Input[str],
    queue_arn: pulumi.Input[str] | None,
) -> pulumi.Output[str]:
    def build(cluster: str, region: str, account: str, role: str, queue: str | None, part: str):
        return controller_policy(
            ControllerPolicyParams(cluster, region, account, role, queue or None, part)
        )

    return json_output(
        build,
        cluster_name,
        context.region,
        context.account_id,
        node_role_arn,
        queue_arn,
        context.partition,
    )
