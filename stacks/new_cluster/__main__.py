"""`pulumi up` at the repository root: a new EKS cluster (VPC, OIDC, a system node group)
with Joiner on it. Configuration (all under `joiner:` but aws:region):

    aws:region                 where to create the cluster
    joiner:clusterName         name of the EKS cluster (default: the stack name)
    joiner:kubernetesVersion   control plane version (default: pulumi_joiner.cluster's)
    joiner:publicAccessCidrs   IPv4 ranges allowed to reach the public API endpoint
                               (required: nothing opens it to 0.0.0.0/0)
    joiner:secretsEncryptionKeyArn
                               KMS key for secrets (default: a key created for the cluster)
    joiner:nodePools           {name: {nodePool: {...}, nodeClass: {...}}} overrides
    joiner:image               a prebuilt controller image (default: build and push to ECR)
"""

import pulumi
from pulumi_joiner import Cluster
from pulumi_joiner.stack_config import (
    CONFIG_NAMESPACE,
    export_outputs,
    node_pools_from_config,
    optional_settings,
    string_list_from_config,
)

# Pulumi deploys the controller through the public endpoint, so it must admit this machine.
SET_CIDRS = (
    f"pulumi config set --path '{CONFIG_NAMESPACE}:publicAccessCidrs[0]'"
    ' "$(curl -s https://checkip.amazonaws.com)/32"'
)

config = pulumi.Config(CONFIG_NAMESPACE)
public_access_cidrs = string_list_from_config(config, "publicAccessCidrs", "203.0.113.7/32")
if not public_access_cidrs:
    raise pulumi.RunError(
        f"Missing required configuration '{CONFIG_NAMESPACE}:publicAccessCidrs': the IPv4 ranges"
        " allowed to reach the cluster's public API endpoint (Pulumi and kubectl use it),"
        f" e.g. this machine's address: {SET_CIDRS}"
    )
args = {
    "cluster_name": config.get("clusterName") or pulumi.get_stack(),
    "public_access_cidrs": public_access_cidrs,
    **optional_settings(
        config,
        kubernetes_version="kubernetesVersion",
        image="image",
        secrets_encryption_key_arn="secretsEncryptionKeyArn",
    ),
}
node_pools = node_pools_from_config(config)
if node_pools is not None:
    args["node_pools"] = node_pools

cluster = Cluster("joiner", args)

export_outputs(
    cluster,
    clusterName="cluster_name",
    kubeconfig="kubeconfig",
    clusterEndpoint="cluster_endpoint",
    oidcProviderArn="oidc_provider_arn",
    oidcProviderUrl="oidc_provider_url",
    vpcId="vpc_id",
    privateSubnetIds="private_subnet_ids",
    secretsEncryptionKeyArn="secrets_encryption_key_arn",
)
