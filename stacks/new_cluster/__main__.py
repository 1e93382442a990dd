"""`pulumi up` at the repository root: a new EKS cluster (VPC, OIDC, a system node group)
with Joiner on it. Configuration (all under `joiner:` but aws:region):

    aws:region                 where to create the cluster
    joiner:clusterName         name of the EKS cluster (default: the stack name)
    joiner:kubernetesVersion   control plane version (default: pulumi_joiner.cluster's)
    joiner:nodePools           {name: {nodePool: {...}, nodeClass: {...}}} overrides
    joiner:image               a prebuilt controller image (default: build and push to ECR)
"""

import pulumi
from pulumi_joiner import Cluster
from pulumi_joiner.stack_config import CONFIG_NAMESPACE, node_pools_from_config, optional_settings

config = pulumi.Config(CONFIG_NAMESPACE)
args = {
    "cluster_name": config.get("clusterName") or pulumi.get_stack(),
    **optional_settings(config, kubernetes_version="kubernetesVersion", image="image"),
}
node_pools = node_pools_from_config(config)
if node_pools is not None:
    args["node_pools"] = node_pools

cluster = Cluster("joiner", args)

pulumi.export("clusterName", cluster.cluster_name)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("clusterEndpoint", cluster.cluster_endpoint)
pulumi.export("oidcProviderArn", cluster.oidc_provider_arn)
pulumi.export("oidcProviderUrl", cluster.oidc_provider_url)
pulumi.export("vpcId", cluster.vpc_id)
pulumi.export("privateSubnetIds", cluster.private_subnet_ids)
pulumi.export("controllerRoleArn", cluster.controller_role_arn)
pulumi.export("nodeRoleArn", cluster.node_role_arn)
pulumi.export("nodeRoleName", cluster.node_role_name)
pulumi.export("interruptionQueue", cluster.queue_name)
pulumi.export("namespace", cluster.namespace)
