"""ControllerRole: the IAM role the Joiner controller runs as (IRSA or EKS Pod Identity)."""

from collections.abc import Mapping
from typing import Required, TypedDict

import pulumi
import pulumi_aws as aws
from joiner.infra.iam import DEFAULT_NAMESPACE, DEFAULT_SERVICE_ACCOUNT

from pulumi_joiner import iam
from pulumi_joiner._common import (
    TYPE_PREFIX,
    ArgumentError,
    child_opts,
    declared_outputs,
    json_output,
    require,
)


class ControllerRoleArgs(TypedDict, total=False):
    """Inputs of ControllerRole."""

    cluster_name: Required[pulumi.Input[str]]
    """Name of the EKS cluster the controller manages; scopes every policy statement."""
    node_role_arn: Required[pulumi.Input[str]]
    """ARN of the node role: the only role the controller may pass (iam:PassRole)."""
    queue_arn: pulumi.Input[str]
    """ARN of the interruption queue; without it the policy grants no SQS access."""
    use_pod_identity: bool
    """Trust EKS Pod Identity and create the association instead of IRSA (default false)."""
    oidc_provider_arn: pulumi.Input[str]
    """ARN of the cluster's IAM OIDC provider (required for IRSA)."""
    oidc_provider_url: pulumi.Input[str]
    """Issuer URL of the cluster's OIDC provider, with or without https:// (IRSA)."""
    namespace: str
    """Namespace of the controller's service account (default karpenter)."""
    service_account: str
    """Name of the controller's service account (default karpenter)."""
    region: pulumi.Input[str]
    """AWS region of the cluster (default: the AWS provider's region)."""
    account_id: pulumi.Input[str]
    """AWS account id (default: the caller's account)."""
    partition: pulumi.Input[str]
    """AWS partition (default: the provider's partition, e.g. aws)."""
    tags: Mapping[str, pulumi.Input[str]]
    """Tags for the role and the policy."""


class ControllerRole(pulumi.ComponentResource):
    """The controller's IAM role and its least-privilege policy."""

    role_arn: pulumi.Output[str]
    """ARN of the controller role (annotate the service account with it for IRSA)."""
    role_name: pulumi.Output[str]
    """Name of the controller role."""
    policy_arn: pulumi.Output[str]
    """ARN of the controller policy."""
    policy_json: pulumi.Output[str]
    """The controller policy document, as JSON."""
    uses_pod_identity: pulumi.Output[bool]
    """True when the role is bound through an EKS Pod Identity association."""

    def __init__(
        self,
        name: str,
        args: ControllerRoleArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}ControllerRole", name, None, opts)
        cluster_name = require("ControllerRole", name, args, "cluster_name")
        node_role_arn = require("ControllerRole", name, args, "node_role_arn")
        namespace = args.get("namespace") or DEFAULT_NAMESPACE
        service_account = args.get("service_account") or DEFAULT_SERVICE_ACCOUNT
        pod_identity = bool(args.get("use_pod_identity"))
        tags = dict(args.get("tags") or {})
        context = iam.aws_context(
            self, args.get("region"), args.get("account_id"), args.get("partition")
        )

        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=self._trust_policy(name, args, namespace, service_account),
            description=pulumi.Output.concat("Joiner controller of cluster ", cluster_name),
            tags=tags,
            opts=child_opts(self),
        )
        self.policy_json = iam.controller_policy_json(
            cluster_name, context, node_role_arn, args.get("queue_arn")
        )
        policy = aws.iam.Policy(
            f"{name}-policy",
            policy=self.policy_json,
            description=pulumi.Output.concat("Joiner controller policy of cluster ", cluster_name),
            tags=tags,
            opts=child_opts(self),
        )
        aws.iam.RolePolicyAttachment(
            f"{name}-policy", role=role.name, policy_arn=policy.arn, opts=child_opts(self)
        )
        if pod_identity:
            aws.eks.PodIdentityAssociation(
                f"{name}-pod-identity",
                cluster_name=cluster_name,
                namespace=namespace,
                service_account=service_account,
                role_arn=role.arn,
                tags=tags,
                opts=child_opts(self),
            )
        self.role_arn = role.arn
        self.role_name = role.name
        self.policy_arn = policy.arn
        self.uses_pod_identity = pulumi.Output.from_input(pod_identity)
        self.register_outputs(declared_outputs(self))

    @staticmethod
    def _trust_policy(
        name: str, args: ControllerRoleArgs, namespace: str, service_account: str
    ) -> pulumi.Output[str]:
        if args.get("use_pod_identity"):
            return json_output(iam.pod_identity_trust_policy)
        for key in ("oidc_provider_arn", "oidc_provider_url"):
            if not args.get(key):
                raise ArgumentError(
                    f"ControllerRole {name!r}: argument '{key}' is required for IRSA"
                    " (or set use_pod_identity)"
                )
        return json_output(
            lambda arn, url: iam.irsa_trust_policy(arn, url, namespace, service_account),
            args["oidc_provider_arn"],
            args["oidc_provider_url"],
        )
