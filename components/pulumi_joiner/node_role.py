"""NodeRole: the IAM role the nodes Joiner launches run with, and how they join the cluster."""

from collections.abc import Mapping
from typing import Any, Required, TypedDict

import pulumi
import pulumi_aws as aws

from pulumi_joiner import iam
from pulumi_joiner._common import (
    TYPE_PREFIX,
    check_choice,
    child_opts,
    declared_outputs,
    invoke_opts,
    json_output,
    require,
)

ACCESS_ENTRY = "access_entry"
AWS_AUTH = "aws_auth"
NO_ACCESS = "none"
ACCESS_MODES = (ACCESS_ENTRY, AWS_AUTH, NO_ACCESS)


class NodeRoleArgs(TypedDict, total=False):
    """Inputs of NodeRole."""

    cluster_name: Required[pulumi.Input[str]]
    """Name of the EKS cluster the nodes join."""
    access_mode: str
    """How nodes are authorised to join: access_entry (an EKS access entry of type
    EC2_LINUX, the default), aws_auth (the role mapping is returned in
    aws_auth_role_mapping for the aws-auth ConfigMap) or none."""
    create_instance_profile: bool
    """Also create an instance profile for the role (default false: the controller
    creates instance profiles per EC2NodeClass)."""
    role_name: pulumi.Input[str]
    """Name of the role (default: generated from the component name)."""
    partition: pulumi.Input[str]
    """AWS partition of the managed policies (default: the provider's partition)."""
    tags: Mapping[str, pulumi.Input[str]]
    """Tags for the role and instance profile."""


class NodeRole(pulumi.ComponentResource):
    """The node role: trusts EC2, carries the four managed node policies."""

    role_arn: pulumi.Output[str]
    """ARN of the node role."""
    role_name: pulumi.Output[str]
    """Name of the node role (what an EC2NodeClass's spec.role names)."""
    instance_profile_name: pulumi.Output[str | None]
    """Name of the instance profile, when one was created."""
    aws_auth_role_mapping: pulumi.Output[dict[str, Any]]
    """The mapRoles entry for the aws-auth ConfigMap (for clusters without access entries)."""

    def __init__(
        self,
        name: str,
        args: NodeRoleArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}NodeRole", name, None, opts)
        cluster_name = require("NodeRole", name, args, "cluster_name")
        access_mode = check_choice(
            "NodeRole", name, "access_mode", args.get("access_mode") or ACCESS_ENTRY, ACCESS_MODES
        )
        tags = dict(args.get("tags") or {})
        partition = (
            pulumi.Output.from_input(args["partition"])
            if args.get("partition") is not None
            else aws.get_partition_output(opts=invoke_opts(self)).partition
        )
        role = aws.iam.Role(
            f"{name}-role",
            name=args.get("role_name"),
            assume_role_policy=json_output(iam.node_role_trust_policy),
            description=pulumi.Output.concat("Nodes Joiner launches in cluster ", cluster_name),
            tags=tags,
            opts=child_opts(self),
        )
        for policy_name in iam.NODE_ROLE_MANAGED_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy_name}",
                role=role.name,
                policy_arn=partition.apply(lambda p, n=policy_name: iam.managed_policy_arn(p, n)),
                opts=child_opts(self),
            )
        if access_mode == ACCESS_ENTRY:
            aws.eks.AccessEntry(
                f"{name}-access-entry",
                cluster_name=cluster_name,
                principal_arn=role.arn,
                type="EC2_LINUX",
                tags=tags,
                opts=child_opts(self),
            )
        self.instance_profile_name = pulumi.Output.from_input(None)
        if args.get("create_instance_profile"):
            profile = aws.iam.InstanceProfile(
                f"{name}-profile", role=role.name, tags=tags, opts=child_opts(self)
            )
            self.instance_profile_name = profile.name
        self.role_arn = role.arn
        self.role_name = role.name
        self.aws_auth_role_mapping = role.arn.apply(_aws_auth_mapping)
        self.register_outputs(declared_outputs(self))


def _aws_auth_mapping(role_arn: str) -> dict[str, Any]:
    return {
        "rolearn": role_arn,
        "username": "system:node:{{EC2PrivateDNSName}}",
        "groups": ["system:bootstrappers", "system:nodes"],
    }
