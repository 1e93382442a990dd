"""Autoscaler: everything Joiner needs, for an EXISTING EKS cluster."""

from collections.abc import Mapping, Sequence
from typing import Any, Required, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from pulumi_joiner import iam
from pulumi_joiner._common import TYPE_PREFIX, ArgumentError, child_opts, declared_outputs, require
from pulumi_joiner.controller import Controller, ControllerArgs
from pulumi_joiner.controller_role import ControllerRole
from pulumi_joiner.interruption_queue import InterruptionQueue
from pulumi_joiner.node_role import NodeRole
from pulumi_joiner.nodepool import DISCOVERY_TAG, NodePool
from pulumi_joiner.teardown import NodeCleanup

DEFAULT_NODE_POOLS: dict[str, Any] = {"default": {}}
# Controller arguments the Autoscaler passes through unchanged.
CONTROLLER_PASSTHROUGH = (
    "image",
    "build_context",
    "image_platform",
    "namespace",
    "create_namespace",
    "service_account",
    "replicas",
    "log_level",
    "settings",
    "resources",
    "service_monitor",
)
NODE_POOL_KEYS = ("node_pool", "node_class")


class AutoscalerArgs(TypedDict, total=False):
    """Inputs of Autoscaler."""

    cluster_name: Required[pulumi.Input[str]]
    """Name of the existing EKS cluster."""
    cluster_endpoint: pulumi.Input[str]
    """API server endpoint of the cluster (the controller discovers it when unset)."""
    oidc_provider_arn: pulumi.Input[str]
    """ARN of the cluster's IAM OIDC provider (required unless use_pod_identity)."""
    oidc_provider_url: pulumi.Input[str]
    """Issuer URL of the cluster's OIDC provider (required unless use_pod_identity)."""
    use_pod_identity: bool
    """Bind the controller role with EKS Pod Identity instead of IRSA (default false)."""
    kubernetes_provider: k8s.Provider
    """Kubernetes provider for the cluster (or set kubeconfig, or pass the provider in the
    component's providers option; without any, the ambient kubeconfig is used)."""
    kubeconfig: pulumi.Input[str]
    """Kubeconfig for the cluster; the component creates its Kubernetes provider from it."""
    region: pulumi.Input[str]
    """AWS region of the cluster (default: the AWS provider's region)."""
    account_id: pulumi.Input[str]
    """AWS account id (default: the caller's account)."""
    partition: pulumi.Input[str]
    """AWS partition (default: the provider's)."""
    node_access_mode: str
    """How the node role joins the cluster: access_entry (default), aws_auth or none."""
    enable_interruption: bool
    """Create the interruption queue and EventBridge rules (default true)."""
    discovery_subnet_ids: Sequence[pulumi.Input[str]]
    """Subnets to tag karpenter.sh/discovery=<cluster_name> (nodes launch into them)."""
    discovery_security_group_ids: Sequence[pulumi.Input[str]]
    """Security groups to tag karpenter.sh/discovery=<cluster_name> (nodes get them)."""
    node_pools: Mapping[str, Any]
    """NodePools to create: name -> {"node_pool": overrides, "node_class": overrides}.
    Default: one pool named default with the NodePool component's defaults; {} for none."""
    image: pulumi.Input[str]
    """A prebuilt controller image. When unset the component builds controller/Dockerfile
    and pushes it to an ECR repository it creates."""
    build_context: str
    """Directory holding controller/Dockerfile for the build (default: this checkout)."""
    image_platform: str
    """Platform of the built image (default linux/amd64)."""
    namespace: str
    """Namespace of the controller (default karpenter)."""
    create_namespace: bool
    """Create the namespace (default true; set false when it already exists)."""
    service_account: str
    """Name of the controller's service account (default karpenter)."""
    replicas: int
    """Controller replicas; one leads, the others stand by (default 2)."""
    log_level: str
    """LOG_LEVEL of the controller (default info)."""
    settings: Mapping[str, pulumi.Input[str]]
    """Further controller settings by their environment name (e.g. BATCH_IDLE_DURATION,
    FEATURE_GATES); see docs/settings.md."""
    resources: Mapping[str, Any]
    """Controller container resources (default requests 250m CPU / 512Mi, limit 1Gi memory)."""
    service_monitor: bool
    """Also create a Prometheus Operator ServiceMonitor (default false)."""
    tags: Mapping[str, pulumi.Input[str]]
    """Tags for the AWS resources."""


class Autoscaler(pulumi.ComponentResource):
    """Joiner on an existing cluster: node role, interruption queue, controller role,
    controller, NodePools, and the teardown sweep that leaves no instance behind."""

    controller_role_arn: pulumi.Output[str]
    """ARN of the controller's IAM role."""
    node_role_arn: pulumi.Output[str]
    """ARN of the node role."""
    node_role_name: pulumi.Output[str]
    """Name of the node role (EC2NodeClass spec.role)."""
    queue_name: pulumi.Output[str | None]
    """Name of the interruption queue (None when interruption is disabled)."""
    queue_url: pulumi.Output[str | None]
    """URL of the interruption queue (None when interruption is disabled)."""
    namespace: pulumi.Output[str]
    """Namespace the controller runs in."""
    image: pulumi.Output[str]
    """Controller image."""
    node_pool_names: pulumi.Output[list[str]]
    """Names of the NodePools created."""

    def __init__(
        self,
        name: str,
        args: AutoscalerArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}Autoscaler", name, None, opts)
        cluster_name = require("Autoscaler", name, args, "cluster_name")
        node_pools = _node_pools(name, args)
        tags = dict(args.get("tags") or {})
        context = iam.aws_context(
            self, args.get("region"), args.get("account_id"), args.get("partition")
        )
        self._tag_for_discovery(name, cluster_name, args)
        node_role = NodeRole(
            f"{name}-node",
            {
                "cluster_name": cluster_name,
                "access_mode": args.get("node_access_mode") or "access_entry",
                "partition": context.partition,
                "tags": tags,
            },
            opts=child_opts(self),
        )
        queue = self._queue(name, cluster_name, tags, args.get("enable_interruption", True))
        role = ControllerRole(
            f"{name}-controller",
            {
                "cluster_name": cluster_name,
                "node_role_arn": node_role.role_arn,
                "queue_arn": queue.queue_arn if queue else None,
                "use_pod_identity": bool(args.get("use_pod_identity")),
                "oidc_provider_arn": args.get("oidc_provider_arn"),
                "oidc_provider_url": args.get("oidc_provider_url"),
                "namespace": args.get("namespace"),
                "service_account": args.get("service_account"),
                "region": context.region,
                "account_id": context.account_id,
                "partition": context.partition,
                "tags": tags,
            },
            opts=child_opts(self),
        )
        kubernetes = self._kubernetes_provider(name, args)
        cleanup = NodeCleanup(
            f"{name}-cleanup",
            cluster_name,
            context.region,
            opts=child_opts(self, depends_on=[r for r in (node_role, role, queue) if r]),
        )
        controller = Controller(
            f"{name}-controller",
            self._controller_args(args, cluster_name, context.region, role, queue),
            opts=child_opts(self, depends_on=[cleanup], providers=kubernetes),
        )
        pool_opts = child_opts(self, depends_on=[controller], providers=kubernetes)
        for pool_name, overrides in node_pools.items():
            NodePool(
                f"{name}-{pool_name}",
                {
                    "cluster_name": cluster_name,
                    "node_role_name": node_role.role_name,
                    "node_pool_name": pool_name,
                    **{key: overrides[key] for key in NODE_POOL_KEYS if key in overrides},
                },
                opts=pool_opts,
            )
        self.controller_role_arn = role.role_arn
        self.node_role_arn = node_role.role_arn
        self.node_role_name = node_role.role_name
        self.queue_name = queue.queue_name if queue else pulumi.Output.from_input(None)
        self.queue_url = queue.queue_url if queue else pulumi.Output.from_input(None)
        self.namespace = controller.namespace
        self.image = controller.image
        self.node_pool_names = pulumi.Output.from_input(list(node_pools))
        self.register_outputs(declared_outputs(self))

    def _tag_for_discovery(
        self, name: str, cluster_name: pulumi.Input[str], args: AutoscalerArgs
    ) -> None:
        kinds = (("subnet", "discovery_subnet_ids"), ("sg", "discovery_security_group_ids"))
        for kind, key in kinds:
            for index, resource_id in enumerate(args.get(key) or []):
                aws.ec2.Tag(
                    f"{name}-discovery-{kind}-{index}",
                    resource_id=resource_id,
                    key=DISCOVERY_TAG,
                    value=cluster_name,
                    opts=child_opts(self),
                )

    def _queue(
        self, name: str, cluster_name: pulumi.Input[str], tags: dict, enabled: bool
    ) -> InterruptionQueue | None:
        if not enabled:
            return None
        return InterruptionQueue(
            f"{name}-interruption",
            {"cluster_name": cluster_name, "tags": tags},
            opts=child_opts(self),
        )

    @staticmethod
    def _controller_args(
        args: AutoscalerArgs,
        cluster_name: pulumi.Input[str],
        region: pulumi.Output[str],
        role: ControllerRole,
        queue: InterruptionQueue | None,
    ) -> ControllerArgs:
        controller_args: ControllerArgs = {
            key: args[key]
            for key in CONTROLLER_PASSTHROUGH
            if key in args  # type: ignore[misc]
        }
        controller_args.update(
            cluster_name=cluster_name,
            region=region,
            interruption_queue=queue.queue_name if queue else "",
        )
        if args.get("cluster_endpoint"):
            controller_args["cluster_endpoint"] = args["cluster_endpoint"]
        if not args.get("use_pod_identity"):
            controller_args["role_arn"] = role.role_arn
        return controller_args

    def _kubernetes_provider(self, name: str, args: AutoscalerArgs) -> list[k8s.Provider]:
        """The given provider, or one for the given kubeconfig; none (inherit the parent's)
        without either."""
        if args.get("kubernetes_provider") and args.get("kubeconfig"):
            raise ArgumentError(
                f"Autoscaler {name!r}: set argument 'kubernetes_provider' or 'kubeconfig', not both"
            )
        if args.get("kubernetes_provider"):
            return [args["kubernetes_provider"]]
        if args.get("kubeconfig"):
            return [
                k8s.Provider(
                    f"{name}-kubernetes", kubeconfig=args["kubeconfig"], opts=child_opts(self)
                )
            ]
        return []


def _node_pools(name: str, args: AutoscalerArgs) -> dict[str, Mapping[str, Any]]:
    pools = args.get("node_pools")
    pools = DEFAULT_NODE_POOLS if pools is None else pools
    for pool_name, overrides in pools.items():
        unknown = set(overrides or {}) - set(NODE_POOL_KEYS)
        if unknown:
            raise ArgumentError(
                f"Autoscaler {name!r}: argument 'node_pools.{pool_name}' has unknown keys"
                f" {sorted(unknown)} (expected {', '.join(NODE_POOL_KEYS)})"
            )
    return {pool_name: dict(overrides or {}) for pool_name, overrides in pools.items()}
