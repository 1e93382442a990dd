"""Cluster: a NEW EKS cluster with Joiner on it (VPC or given subnets, OIDC, a small
on-demand system node group for the controller, then the Autoscaler)."""

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Required, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from pulumi_joiner._common import (
    TYPE_PREFIX,
    ArgumentError,
    after,
    child_opts,
    declared_outputs,
    invoke_opts,
    require,
)
from pulumi_joiner.autoscaler import CONTROLLER_PASSTHROUGH, Autoscaler, AutoscalerArgs
from pulumi_joiner.node_role import NO_ACCESS, NodeRole
from pulumi_joiner.nodepool import DISCOVERY_TAG

DEFAULT_KUBERNETES_VERSION = "1.33"
DEFAULT_VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 3
SYSTEM_NODE_LABEL = "joiner.sh/system-node"
CRITICAL_ADDONS_TAINT = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}
# What EKS accepts as an encryption provider: a KMS key or alias ARN.
KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/\S+$")
# Autoscaler arguments the Cluster passes through unchanged.
AUTOSCALER_PASSTHROUGH = (
    *CONTROLLER_PASSTHROUGH,
    "use_pod_identity",
    "enable_interruption",
    "node_pools",
)


class _Network:
    def __init__(
        self,
        vpc_id: pulumi.Input[str],
        private_subnet_ids: list[pulumi.Input[str]],
        public_subnet_ids: list[pulumi.Input[str]],
        subnets_to_tag: list[pulumi.Input[str]],
    ) -> None:
        self.vpc_id = vpc_id
        self.private_subnet_ids = private_subnet_ids
        self.public_subnet_ids = public_subnet_ids
        self.subnets_to_tag = subnets_to_tag


class ClusterArgs(TypedDict, total=False):
    """Inputs of Cluster."""

    cluster_name: Required[str]
    """Name of the EKS cluster to create."""
    kubernetes_version: str
    """Kubernetes version of the control plane (default 1.33)."""
    vpc_cidr: str
    """CIDR of the VPC to create (default 10.0.0.0/16); ignored with vpc_id."""
    availability_zone_count: int
    """Zones to spread the created subnets over, 1-3 (default 2)."""
    vpc_id: pulumi.Input[str]
    """Use this VPC instead of creating one (requires private_subnet_ids)."""
    private_subnet_ids: Sequence[pulumi.Input[str]]
    """Subnets of vpc_id for the nodes; they are tagged karpenter.sh/discovery."""
    public_subnet_ids: Sequence[pulumi.Input[str]]
    """Public subnets of vpc_id for load balancers (optional)."""
    system_node_instance_types: Sequence[str]
    """Instance types of the system node group (default [m5.large])."""
    system_node_count: int
    """Nodes in the system node group (default 2: one per controller replica)."""
    endpoint_public_access: bool
    """Keep the public API server endpoint (default true; it then needs public_access_cidrs).
    False leaves only the private endpoint: Pulumi and kubectl must run inside the VPC."""
    public_access_cidrs: Sequence[pulumi.Input[str]]
    """IPv4 CIDR blocks allowed to reach the public endpoint, e.g. ["203.0.113.7/32"] (your
    address: curl -s https://checkip.amazonaws.com); required while the endpoint is public."""
    secrets_encryption_key_arn: pulumi.Input[str]
    """KMS key (or alias) ARN to envelope-encrypt Kubernetes secrets with; no key is created."""
    create_secrets_encryption_key: bool
    """Create a KMS key (yearly rotation) for secrets when secrets_encryption_key_arn is unset
    (default true; false leaves secrets under the AWS-owned key)."""
    node_pools: Mapping[str, Any]
    """NodePools: name -> {"node_pool": overrides, "node_class": overrides} (see Autoscaler)."""
    use_pod_identity: bool
    """Use EKS Pod Identity for the controller instead of IRSA (default false)."""
    enable_interruption: bool
    """Create the interruption queue and rules (default true)."""
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
    tags: Mapping[str, str]
    """Tags for every AWS resource."""


class Cluster(pulumi.ComponentResource):
    """A new EKS cluster running Joiner."""

    cluster_name: pulumi.Output[str]
    """Name of the EKS cluster."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig of the cluster, as JSON (secret)."""
    cluster_endpoint: pulumi.Output[str]
    """API server endpoint of the cluster."""
    oidc_provider_arn: pulumi.Output[str]
    """ARN of the cluster's IAM OIDC provider."""
    oidc_provider_url: pulumi.Output[str]
    """Issuer URL of the cluster's OIDC provider."""
    vpc_id: pulumi.Output[str]
    """VPC of the cluster."""
    private_subnet_ids: pulumi.Output[list[str]]
    """Subnets the nodes launch into."""
    controller_role_arn: pulumi.Output[str]
    """ARN of the controller's IAM role."""
    node_role_arn: pulumi.Output[str]
    """ARN of the role of the nodes Joiner launches."""
    node_role_name: pulumi.Output[str]
    """Name of that role."""
    queue_name: pulumi.Output[str | None]
    """Name of the interruption queue."""
    namespace: pulumi.Output[str]
    """Namespace of the controller."""
    secrets_encryption_key_arn: pulumi.Output[str | None]
    """ARN of the KMS key that encrypts Kubernetes secrets (None when encryption is off)."""

    def __init__(
        self,
        name: str,
        args: ClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}Cluster", name, None, opts)
        cluster_name = require("Cluster", name, args, "cluster_name")
        endpoint_access = endpoint_access_args(name, args)
        tags = dict(args.get("tags") or {})
        secrets_key_arn = self._secrets_key(name, cluster_name, args, tags)
        network = self._network(name, cluster_name, args, tags)
        cluster = eks.Cluster(
            f"{name}-eks",
            name=cluster_name,
            version=args.get("kubernetes_version") or DEFAULT_KUBERNETES_VERSION,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            public_subnet_ids=network.public_subnet_ids or None,
            create_oidc_provider=True,
            skip_default_node_group=True,
            skip_default_security_groups=True,
            authentication_mode=eks.AuthenticationMode.API,
            node_associate_public_ip_address=False,
            encryption_config_key_arn=secrets_key_arn,
            tags=tags,
            **endpoint_access,
            opts=child_opts(self),
        )
        # The name, available once the control plane exists.
        existing_name = after(cluster.oidc_provider_arn, cluster_name)
        system_nodes = self._system_node_group(name, existing_name, network, args, tags)
        provider = k8s.Provider(
            f"{name}-kubernetes",
            kubeconfig=cluster.kubeconfig_json,
            enable_server_side_apply=True,
            opts=child_opts(self),
        )
        endpoint = cluster.kubeconfig_json.apply(_endpoint_of)
        autoscaler_args: AutoscalerArgs = {
            key: args[key]
            for key in AUTOSCALER_PASSTHROUGH
            if key in args  # type: ignore[misc]
        }
        autoscaler_args.update(
            # The controller needs the system nodes to run on.
            cluster_name=after(system_nodes.arn, cluster_name),
            cluster_endpoint=endpoint,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_provider_url=cluster.oidc_provider_url,
            discovery_security_group_ids=[cluster.cluster_security_group_id],
            discovery_subnet_ids=network.subnets_to_tag,
            tags=tags,
        )
        autoscaler = Autoscaler(
            f"{name}-joiner", autoscaler_args, opts=child_opts(self, providers=[provider])
        )
        self.cluster_name = existing_name
        self.kubeconfig = pulumi.Output.secret(cluster.kubeconfig_json)
        self.cluster_endpoint = endpoint
        self.oidc_provider_arn = cluster.oidc_provider_arn
        self.oidc_provider_url = cluster.oidc_provider_url
        self.vpc_id = pulumi.Output.from_input(network.vpc_id)
        self.private_subnet_ids = pulumi.Output.all(*network.private_subnet_ids)
        self.controller_role_arn = autoscaler.controller_role_arn
        self.node_role_arn = autoscaler.node_role_arn
        self.node_role_name = autoscaler.node_role_name
        self.queue_name = autoscaler.queue_name
        self.namespace = autoscaler.namespace
        self.secrets_encryption_key_arn = pulumi.Output.from_input(secrets_key_arn)
        self.register_outputs(declared_outputs(self))

    def _secrets_key(
        self, name: str, cluster_name: str, args: ClusterArgs, tags: dict[str, str]
    ) -> pulumi.Input[str] | None:
        """The KMS key ARN for envelope encryption of secrets: the given key, else a new one,
        or None when turned off. On by default: a key costs little, and enabling it later
        leaves the secrets written before under the AWS-owned key until they are rewritten."""
        given = args.get("secrets_encryption_key_arn")
        create = args.get("create_secrets_encryption_key")
        if given:
            if create:
                raise ArgumentError(
                    f"Cluster {name!r}: arguments 'secrets_encryption_key_arn' and"
                    " 'create_secrets_encryption_key' exclude each other: give a key or have"
                    " one created"
                )
            return _checked_key_arn(name, given)
        if create is False:
            return None
        key = aws.kms.Key(
            f"{name}-secrets",
            description=f"Envelope encryption of Kubernetes secrets of EKS cluster {cluster_name}",
            enable_key_rotation=True,
            tags=tags,
            opts=child_opts(self),
        )
        return key.arn

    def _network(
        self, name: str, cluster_name: str, args: ClusterArgs, tags: dict[str, str]
    ) -> _Network:
        if args.get("vpc_id"):
            private = list(args.get("private_subnet_ids") or [])
            if not private:
                raise ArgumentError(
                    f"Cluster {name!r}: argument 'private_subnet_ids' is required with 'vpc_id'"
                )
            public = list(args.get("public_subnet_ids") or [])
            return _Network(args["vpc_id"], private, public, subnets_to_tag=private)
        return _Vpc(self, name, cluster_name, args, tags).network()

    def _system_node_group(
        self,
        name: str,
        cluster_name: pulumi.Input[str],
        network: _Network,
        args: ClusterArgs,
        tags: dict[str, str],
    ) -> aws.eks.NodeGroup:
        count = args.get("system_node_count", 2)
        if count < 1:
            raise ArgumentError(f"Cluster {name!r}: argument 'system_node_count' must be >= 1")
        # A managed node group creates its own access entry, hence access_mode none.
        role = NodeRole(
            f"{name}-system",
            {"cluster_name": cluster_name, "access_mode": NO_ACCESS, "tags": tags},
            opts=child_opts(self),
        )
        return aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster_name,
            node_role_arn=role.role_arn,
            subnet_ids=network.private_subnet_ids,
            instance_types=list(args.get("system_node_instance_types") or ["m5.large"]),
            capacity_type="ON_DEMAND",
            ami_type="AL2023_x86_64_STANDARD",
            scaling_config={"desired_size": count, "min_size": count, "max_size": count + 1},
            labels={SYSTEM_NODE_LABEL: "true"},
            taints=[CRITICAL_ADDONS_TAINT],
            tags=tags,
            opts=child_opts(self),
        )


class _Vpc:
    """A VPC with public subnets (load balancers, one NAT gateway) and private subnets for
    the nodes, tagged for discovery."""

    def __init__(
        self,
        parent: pulumi.Resource,
        name: str,
        cluster_name: str,
        args: ClusterArgs,
        tags: dict[str, str],
    ) -> None:
        self.parent, self.name, self.cluster_name, self.tags = parent, name, cluster_name, tags
        self.zone_count = args.get("availability_zone_count", 2)
        if not 1 <= self.zone_count <= MAX_ZONES:
            raise ArgumentError(
                f"Cluster {name!r}: argument 'availability_zone_count' must be 1-{MAX_ZONES}"
            )
        self.vpc_cidr = args.get("vpc_cidr") or DEFAULT_VPC_CIDR
        self.private_cidrs, self.public_cidrs = subnet_cidrs(name, self.vpc_cidr, self.zone_count)

    def network(self) -> _Network:
        opts = child_opts(self.parent)
        vpc = aws.ec2.Vpc(
            f"{self.name}-vpc",
            cidr_block=self.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**self.tags, "Name": self.cluster_name},
            opts=opts,
        )
        zones = aws.get_availability_zones_output(state="available", opts=invoke_opts(self.parent))
        gateway = aws.ec2.InternetGateway(
            f"{self.name}-igw", vpc_id=vpc.id, tags=self.tags, opts=opts
        )
        public_routes = self._default_route(vpc, "public", gateway_id=gateway.id)
        public = self._subnets(vpc, zones, self.public_cidrs, public_routes, public=True)
        nat = aws.ec2.NatGateway(
            f"{self.name}-nat",
            subnet_id=public[0].id,
            allocation_id=aws.ec2.Eip(
                f"{self.name}-nat", domain="vpc", tags=self.tags, opts=opts
            ).id,
            tags=self.tags,
            opts=opts,
        )
        private_routes = self._default_route(vpc, "private", nat_gateway_id=nat.id)
        private = self._subnets(vpc, zones, self.private_cidrs, private_routes, public=False)
        # Created subnets carry the discovery tag already.
        return _Network(vpc.id, [s.id for s in private], [s.id for s in public], subnets_to_tag=[])

    def _default_route(
        self, vpc: aws.ec2.Vpc, kind: str, **target: pulumi.Input[str]
    ) -> aws.ec2.RouteTable:
        """A route table sending everything outside the VPC to ``target``."""
        return aws.ec2.RouteTable(
            f"{self.name}-{kind}",
            vpc_id=vpc.id,
            routes=[{"cidr_block": "0.0.0.0/0", **target}],
            tags=self.tags,
            opts=child_opts(self.parent),
        )

    def _subnets(
        self,
        vpc: aws.ec2.Vpc,
        zones: pulumi.Output[Any],
        cidrs: list[str],
        routes: aws.ec2.RouteTable,
        public: bool,
    ) -> list[aws.ec2.Subnet]:
        return [
            self._subnet(vpc, zones, i, cidrs[i], routes, public) for i in range(self.zone_count)
        ]

    def _subnet(
        self,
        vpc: aws.ec2.Vpc,
        zones: pulumi.Output[Any],
        index: int,
        cidr: str,
        routes: aws.ec2.RouteTable,
        public: bool,
    ) -> aws.ec2.Subnet:
        kind = "public" if public else "private"
        role_tag = (
            {"kubernetes.io/role/elb": "1"}
            if public
            else {"kubernetes.io/role/internal-elb": "1", DISCOVERY_TAG: self.cluster_name}
        )
        subnet = aws.ec2.Subnet(
            f"{self.name}-{kind}-{index}",
            vpc_id=vpc.id,
            cidr_block=cidr,
            availability_zone=zones.names[index],
            map_public_ip_on_launch=public,
            tags={**self.tags, **role_tag, "Name": f"{self.cluster_name}-{kind}-{index}"},
            opts=child_opts(self.parent),
        )
        aws.ec2.RouteTableAssociation(
            f"{self.name}-{kind}-{index}",
            subnet_id=subnet.id,
            route_table_id=routes.id,
            opts=child_opts(self.parent),
        )
        return subnet


def endpoint_access_args(name: str, args: ClusterArgs) -> dict[str, Any]:
    """The eks.Cluster endpoint arguments. The private endpoint is always on, so nodes and the
    controller reach the API server inside the VPC and the public ranges only need to list
    whoever runs Pulumi and kubectl. A public endpoint without ranges is refused rather than
    left at the EKS default, 0.0.0.0/0."""
    public = args.get("endpoint_public_access")
    cidrs = args.get("public_access_cidrs")
    if public is False:
        if cidrs:
            raise ArgumentError(
                f"Cluster {name!r}: argument 'public_access_cidrs' needs a public endpoint, but"
                " 'endpoint_public_access' is false: remove one of them"
            )
        return {"endpoint_public_access": False, "endpoint_private_access": True}
    return {
        "endpoint_public_access": True,
        "endpoint_private_access": True,
        "public_access_cidrs": _public_access_cidrs(name, cidrs),
    }


def _public_access_cidrs(name: str, cidrs: Any) -> list[pulumi.Input[str]]:
    where = f"Cluster {name!r}: argument 'public_access_cidrs'"
    if isinstance(cidrs, str) or (cidrs is not None and not isinstance(cidrs, Sequence)):
        raise ArgumentError(f"{where} must be a list of CIDR blocks, e.g. ['203.0.113.7/32']")
    if not cidrs:
        raise ArgumentError(
            f"{where} is required while 'endpoint_public_access' is true (the EKS default would"
            " open the API server to 0.0.0.0/0): list the IPv4 ranges that run Pulumi and"
            " kubectl, e.g. your address as a /32 (curl -s https://checkip.amazonaws.com), or"
            " set 'endpoint_public_access' to false and deploy from inside the VPC"
        )
    for cidr in cidrs:
        if isinstance(cidr, str):  # Outputs are only known at deployment
            _check_cidr(where, cidr)
    return list(cidrs)


def _check_cidr(where: str, cidr: str) -> None:
    try:
        network = ipaddress.ip_network(cidr) if "/" in cidr else None
    except ValueError as error:
        raise ArgumentError(f"{where}: {cidr!r} is not a CIDR block: {error}") from None
    if network is None:
        raise ArgumentError(f"{where}: {cidr!r} is not a CIDR block (e.g. {cidr}/32)")
    if network.version != 4:
        # EKS rejects IPv6 ranges on IPv4 clusters, which is what this component creates.
        raise ArgumentError(f"{where}: {cidr!r} is not an IPv4 range")


def _checked_key_arn(name: str, arn: pulumi.Input[str]) -> pulumi.Input[str]:
    if isinstance(arn, str) and not KMS_KEY_ARN.match(arn):
        raise ArgumentError(
            f"Cluster {name!r}: argument 'secrets_encryption_key_arn' must be a KMS key or alias"
            f" ARN (arn:aws:kms:<region>:<account>:key/<id>), got {arn!r}"
        )
    return arn


def subnet_cidrs(name: str, vpc_cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Private subnets take a quarter of the VPC each (room for many pods); the public ones
    share the last quarter."""
    try:
        network = ipaddress.ip_network(vpc_cidr)
    except ValueError as error:
        raise ArgumentError(f"Cluster {name!r}: argument 'vpc_cidr' is invalid: {error}") from None
    if network.version != 4 or network.prefixlen > 20:
        raise ArgumentError(
            f"Cluster {name!r}: argument 'vpc_cidr' must be an IPv4 block of /20 or larger"
        )
    quarters = list(network.subnets(prefixlen_diff=2))
    publics = list(quarters[MAX_ZONES].subnets(prefixlen_diff=2))
    return [str(q) for q in quarters[:zones]], [str(p) for p in publics[:zones]]


def _endpoint_of(kubeconfig: str | Mapping[str, Any]) -> str:
    config = json.loads(kubeconfig) if isinstance(kubeconfig, str) else kubeconfig
    return config["clusters"][0]["cluster"]["server"]
