"""Joiner into an EXISTING EKS cluster. The cluster is read from config or from the outputs
of the stack that created it (joiner:clusterStack); explicit config wins.

    aws:region                    region of the cluster
    joiner:clusterStack           optional StackReference (org/project/stack) whose outputs
                                  name clusterName, kubeconfig, oidcProviderArn,
                                  oidcProviderUrl (and optionally clusterEndpoint)
    joiner:clusterName            the cluster (required unless clusterStack exports it)
    joiner:oidcProviderArn        its IAM OIDC provider (IRSA)
    joiner:oidcProviderUrl        its OIDC issuer URL (IRSA)
    joiner:clusterEndpoint        optional API server endpoint
    joiner:kubeconfig             optional (secret); default: the ambient kubeconfig
    joiner:usePodIdentity         true to use EKS Pod Identity instead of IRSA
    joiner:subnetIds              subnets to tag karpenter.sh/discovery=<cluster>
    joiner:securityGroupIds       security groups to tag likewise
    joiner:nodePools              {name: {nodePool: {...}, nodeClass: {...}}} overrides
    joiner:image                  a prebuilt controller image
"""

import pulumi
from pulumi_joiner import Autoscaler
from pulumi_joiner.stack_config import (
    CONFIG_NAMESPACE,
    export_outputs,
    node_pools_from_config,
)

CLUSTER_KEYS = {
    "cluster_name": "clusterName",
    "oidc_provider_arn": "oidcProviderArn",
    "oidc_provider_url": "oidcProviderUrl",
    "cluster_endpoint": "clusterEndpoint",
    "kubeconfig": "kubeconfig",
}

config = pulumi.Config(CONFIG_NAMESPACE)
reference_name = config.get("clusterStack")
reference = pulumi.StackReference(reference_name) if reference_name else None


def cluster_value(argument: str) -> pulumi.Input[str] | None:
    """From config when set there, else from the referenced stack's outputs."""
    key = CLUSTER_KEYS[argument]
    value = config.get_secret(key) if key == "kubeconfig" else config.get(key)
    if value is None and reference is not None:
        value = reference.get_output(key)
    return value


args = {argument: cluster_value(argument) for argument in CLUSTER_KEYS}
args = {argument: value for argument, value in args.items() if value is not None}
if "cluster_name" not in args:
    raise pulumi.RunError(
        f"Missing required configuration '{CONFIG_NAMESPACE}:clusterName'"
        f" (or '{CONFIG_NAMESPACE}:clusterStack' whose outputs include clusterName)"
    )
args["use_pod_identity"] = config.get_bool("usePodIdentity") or False
args["discovery_subnet_ids"] = config.get_object("subnetIds") or []
args["discovery_security_group_ids"] = config.get_object("securityGroupIds") or []
if config.get("image"):
    args["image"] = config.get("image")
node_pools = node_pools_from_config(config)
if node_pools is not None:
    args["node_pools"] = node_pools

autoscaler = Autoscaler("joiner", args)

export_outputs(autoscaler, interruptionQueueUrl="queue_url")
