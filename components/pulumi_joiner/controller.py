"""Controller: the Joiner controller in the cluster, each Kubernetes object its own
resource (namespace, service account, CRDs, RBAC, Deployment, PDB, metrics Service,
optional ServiceMonitor), and the bundled image built into ECR unless one is given."""

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Required, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build
import pulumi_kubernetes as k8s
from joiner import __version__
from joiner.api.crds import render_crds
from joiner.infra.iam import DEFAULT_NAMESPACE, DEFAULT_SERVICE_ACCOUNT

from pulumi_joiner import manifests
from pulumi_joiner._common import (
    TYPE_PREFIX,
    ArgumentError,
    check_choice,
    child_opts,
    custom_resource,
    declared_outputs,
    invoke_opts,
    require,
)

# The repository root when the components run from a source checkout.
SOURCE_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = Path("controller") / "Dockerfile"


class ControllerArgs(TypedDict, total=False):
    """Inputs of Controller."""

    cluster_name: Required[pulumi.Input[str]]
    """Name of the EKS cluster (the controller's CLUSTER_NAME)."""
    cluster_endpoint: pulumi.Input[str]
    """API server endpoint (CLUSTER_ENDPOINT); discovered by the controller when absent."""
    interruption_queue: pulumi.Input[str]
    """Name of the interruption queue (INTERRUPTION_QUEUE); empty disables interruption."""
    role_arn: pulumi.Input[str]
    """Controller role ARN to annotate the service account with (IRSA). Leave unset
    with EKS Pod Identity."""
    region: pulumi.Input[str]
    """AWS region for the controller's AWS clients (AWS_REGION)."""
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


class Controller(pulumi.ComponentResource):
    """The Joiner controller deployment."""

    namespace: pulumi.Output[str]
    """Namespace the controller runs in."""
    service_account_name: pulumi.Output[str]
    """Name of the controller's service account."""
    image: pulumi.Output[str]
    """The image the Deployment runs."""
    deployment_name: pulumi.Output[str]
    """Name of the controller Deployment."""
    crd_names: pulumi.Output[list[str]]
    """Names of the CRDs installed (NodePool, NodeClaim, EC2NodeClass, NodeOverlay,
    CapacityBuffer)."""

    def __init__(
        self,
        name: str,
        args: ControllerArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}Controller", name, None, opts)
        config = manifests.ControllerConfig(
            image=self._image(name, args),
            cluster_name=require("Controller", name, args, "cluster_name"),
            cluster_endpoint=args.get("cluster_endpoint"),
            interruption_queue=args.get("interruption_queue"),
            region=args.get("region"),
            role_arn=args.get("role_arn"),
            namespace=args.get("namespace") or DEFAULT_NAMESPACE,
            service_account=args.get("service_account") or DEFAULT_SERVICE_ACCOUNT,
            replicas=args.get("replicas", 2),
            log_level=args.get("log_level") or "info",
            settings=manifests.check_settings(f"Controller {name!r}", args.get("settings") or {}),
            resources=args.get("resources") or manifests.DEFAULT_RESOURCES,
        )
        if config.replicas < 1:
            raise ArgumentError(f"Controller {name!r}: argument 'replicas' must be at least 1")
        namespace = self._namespace(name, config, args.get("create_namespace", True))
        crds = self._crds(name)
        access = self._access(name, config, namespace)
        deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            **_body(manifests.deployment(config)),
            opts=child_opts(self, depends_on=[*namespace, *crds, *access]),
        )
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            **_body(manifests.pod_disruption_budget(config)),
            opts=child_opts(self, depends_on=namespace),
        )
        service = k8s.core.v1.Service(
            f"{name}-metrics",
            **_body(manifests.metrics_service(config)),
            opts=child_opts(self, depends_on=namespace),
        )
        if args.get("service_monitor"):
            custom_resource(
                f"{name}-service-monitor",
                manifests.service_monitor(config),
                child_opts(self, depends_on=[*namespace, service]),
            )
        self.namespace = pulumi.Output.from_input(config.namespace)
        self.service_account_name = pulumi.Output.from_input(config.service_account)
        self.image = pulumi.Output.from_input(config.image)
        self.deployment_name = deployment.metadata.apply(lambda metadata: metadata["name"])
        self.crd_names = pulumi.Output.all(*[crd.metadata["name"] for crd in crds])
        self.register_outputs(declared_outputs(self))

    def _namespace(
        self, name: str, config: manifests.ControllerConfig, create: bool
    ) -> list[pulumi.Resource]:
        if not create:
            return []
        return [
            k8s.core.v1.Namespace(
                f"{name}-namespace",
                metadata=manifests.namespace(config)["metadata"],
                opts=child_opts(self),
            )
        ]

    def _crds(self, name: str) -> list[k8s.apiextensions.v1.CustomResourceDefinition]:
        return [
            k8s.apiextensions.v1.CustomResourceDefinition(
                f"{name}-crd-{crd['spec']['names']['plural']}",
                **_body(crd),
                opts=child_opts(self),
            )
            for crd in render_crds()
        ]

    def _access(
        self, name: str, config: manifests.ControllerConfig, namespace: list[pulumi.Resource]
    ) -> list[pulumi.Resource]:
        in_namespace = child_opts(self, depends_on=namespace)
        return [
            k8s.core.v1.ServiceAccount(
                f"{name}-service-account",
                metadata=manifests.service_account(config)["metadata"],
                opts=in_namespace,
            ),
            k8s.rbac.v1.ClusterRole(
                f"{name}-cluster-role", **_body(manifests.cluster_role()), opts=child_opts(self)
            ),
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-cluster-role-binding",
                **_body(manifests.cluster_role_binding(config)),
                opts=child_opts(self),
            ),
            k8s.rbac.v1.Role(
                f"{name}-leader-election",
                **_body(manifests.leader_election_role(config)),
                opts=in_namespace,
            ),
            k8s.rbac.v1.RoleBinding(
                f"{name}-leader-election",
                **_body(manifests.leader_election_role_binding(config)),
                opts=in_namespace,
            ),
        ]

    def _image(self, name: str, args: ControllerArgs) -> pulumi.Input[str]:
        if args.get("image"):
            return args["image"]
        context = Path(args.get("build_context") or SOURCE_ROOT)
        if not (context / DOCKERFILE).is_file():
            raise ArgumentError(
                f"Controller {name!r}: argument 'image' is required: no {DOCKERFILE} under"
                f" {context} to build from (or set 'build_context')"
            )
        repository = aws.ecr.Repository(
            f"{name}-repository",
            image_scanning_configuration={"scan_on_push": True},
            force_delete=True,
            opts=child_opts(self),
        )
        token = aws.ecr.get_authorization_token_output(
            registry_id=repository.registry_id, opts=invoke_opts(self)
        )
        image = docker_build.Image(
            f"{name}-image",
            context={"location": str(context)},
            dockerfile={"location": str(context / DOCKERFILE)},
            platforms=[_platform(name, args.get("image_platform") or "linux/amd64")],
            push=True,
            tags=[pulumi.Output.concat(repository.repository_url, ":", __version__)],
            registries=[
                {
                    "address": repository.repository_url,
                    "username": token.user_name,
                    "password": token.password,
                }
            ],
            opts=child_opts(self),
        )
        # ref carries the digest, so a rebuilt image rolls the Deployment.
        return image.ref


def _platform(name: str, platform: str) -> docker_build.Platform:
    choices = tuple(p.value for p in docker_build.Platform)
    return docker_build.Platform(
        check_choice("Controller", name, "image_platform", platform, choices)
    )


def _body(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor arguments of a typed Kubernetes resource: every top-level field but
    apiVersion/kind, named in Python style (roleRef -> role_ref); nested dicts keep the
    Kubernetes names, which the provider accepts as they are."""
    return {
        re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): value
        for key, value in manifest.items()
        if key not in ("apiVersion", "kind")
    }
