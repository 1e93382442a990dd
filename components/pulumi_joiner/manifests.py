"""The Kubernetes objects the Controller component creates, as pure functions returning
plain dicts [DEPLOY].

Values may be plain strings (tests, reviews) or Pulumi Inputs (the component), so the
same functions serve both; nothing here creates a resource.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from joiner.api import capacitybuffer as cb
from joiner.api import labels as wk
from joiner.infra.iam import DEFAULT_NAMESPACE, DEFAULT_SERVICE_ACCOUNT
from joiner.settings import SETTINGS, Settings, SettingsError

from pulumi_joiner._common import ArgumentError

NAME = "joiner"
CONTAINER_NAME = "controller"
METRICS_PORT = 8080
HEALTH_PORT = 8081
METRICS_PORT_NAME = "http-metrics"
HEALTH_PORT_NAME = "http-health"
RUN_AS_ID = 65532
LEADER_ELECTION_LEASE = "karpenter-leader-election"
PRIORITY_CLASS = "system-cluster-critical"
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
KARPENTER_GROUPS = (wk.KARPENTER_GROUP, wk.AWS_GROUP)
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API = f"{RBAC_GROUP}/v1"

# Settings the component derives from its own arguments [SPEC 2]; `settings` may not
# override them, so the Deployment cannot disagree with the infrastructure.
MANAGED_SETTINGS = (
    "CLUSTER_NAME",
    "CLUSTER_ENDPOINT",
    "AWS_REGION",
    "INTERRUPTION_QUEUE",
    "METRICS_PORT",
    "HEALTH_PROBE_PORT",
    "LEADER_ELECTION_NAME",
    "LEADER_ELECTION_NAMESPACE",
)
DEFAULT_RESOURCES = {
    "requests": {"cpu": "250m", "memory": "512Mi"},
    "limits": {"memory": "1Gi"},
}

WATCH = ["list", "watch"]  # the controller's view of the cluster (its watches)


@dataclass(frozen=True)
class ControllerConfig:
    """What the controller's manifests depend on. Fields may hold Pulumi Inputs."""

    image: pulumi.Input[str]
    cluster_name: pulumi.Input[str]
    cluster_endpoint: pulumi.Input[str] | None = None
    interruption_queue: pulumi.Input[str] | None = None
    region: pulumi.Input[str] | None = None
    role_arn: pulumi.Input[str] | None = None
    namespace: str = DEFAULT_NAMESPACE
    service_account: str = DEFAULT_SERVICE_ACCOUNT
    replicas: int = 2
    log_level: str = "info"
    settings: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    resources: Mapping[str, Any] = field(default_factory=lambda: DEFAULT_RESOURCES)
    image_pull_policy: str = "IfNotPresent"


def check_settings(
    owner: str, settings: Mapping[str, pulumi.Input[str]]
) -> dict[str, pulumi.Input[str]]:
    """``settings`` if every name is a controller setting the caller may set and every
    plain value parses; otherwise an ArgumentError naming the setting."""
    known = {setting.env for setting in SETTINGS}
    for key in settings:
        if key in MANAGED_SETTINGS:
            raise ArgumentError(f"{owner}: argument 'settings.{key}' is set by the component")
        if key not in known:
            raise ArgumentError(
                f"{owner}: argument 'settings.{key}' is not a controller setting"
                f" (known: {', '.join(sorted(known - set(MANAGED_SETTINGS)))})"
            )
    plain = {key: value for key, value in settings.items() if isinstance(value, str)}
    try:
        parsed = Settings.from_env({**plain, "CLUSTER_NAME": "check"}, strict=True)
    except SettingsError as error:
        raise ArgumentError(f"{owner}: argument 'settings' is invalid: {error}") from None
    if ipaddress.ip_address(parsed.bind_address).is_loopback:
        raise ArgumentError(
            f"{owner}: argument 'settings.BIND_ADDRESS' is a loopback address: the kubelet's"
            " probes and Prometheus reach the pod on its own IP (use 0.0.0.0, or :: on an IPv6"
            " cluster)"
        )
    return dict(settings)


def selector_labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": NAME}


def common_labels() -> dict[str, str]:
    return {**selector_labels(), "app.kubernetes.io/managed-by": "pulumi"}


def _metadata(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": common_labels(), **extra}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def _object(api_version: str, kind: str, metadata: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def _controller_object(
    api_version: str, kind: str, config: ControllerConfig, spec: dict[str, Any]
) -> dict[str, Any]:
    """An object named after the controller, in its namespace."""
    return _object(api_version, kind, _metadata(NAME, config.namespace), spec=spec)


def _runs_as_non_root() -> dict[str, Any]:
    """The security context fields the pod and its container share."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_ID,
        "runAsGroup": RUN_AS_ID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def namespace(config: ControllerConfig) -> dict[str, Any]:
    return _object("v1", "Namespace", _metadata(config.namespace))


def service_account(config: ControllerConfig) -> dict[str, Any]:
    annotations = {IRSA_ANNOTATION: config.role_arn} if config.role_arn else {}
    metadata = _metadata(config.service_account, config.namespace, annotations=annotations)
    return _object("v1", "ServiceAccount", metadata)


def cluster_role_rules() -> list[dict[str, Any]]:
    """What the controller's code does with the API and nothing more: the real-server
    round trip (tests/e2e/test_real_cluster.py) fails on any request RBAC refuses and on
    any grant neither used nor listed there with the code path that needs it."""
    return [
        # joiner.state.cluster.WATCHED_KINDS, listed and watched
        _rule("", ["pods", "persistentvolumes", "persistentvolumeclaims"], WATCH),
        _rule("storage.k8s.io", ["storageclasses", "csinodes"], WATCH),
        _rule("apps", ["daemonsets"], WATCH),
        _rule("policy", ["poddisruptionbudgets"], WATCH),
        # Nodes: registration, taints and finalizers written whole (update), then deleted
        _rule("", ["nodes"], ["get", *WATCH, "update", "delete"]),
        # NodeClaims: launched, labelled, finalized and deleted; their conditions
        _rule(wk.KARPENTER_GROUP, ["nodeclaims"], ["get", *WATCH, "create", "update", "delete"]),
        # NodePools and EC2NodeClasses: hash annotations and the class's finalizer (update);
        # a NodePool is written from the watched copy, never read on its own
        _rule(wk.KARPENTER_GROUP, ["nodepools"], [*WATCH, "update"]),
        _rule(wk.AWS_GROUP, ["ec2nodeclasses"], ["get", *WATCH, "update"]),
        # NodeOverlays (gate NodeOverlay): read, and their conflicts reported in status
        _rule(wk.KARPENTER_GROUP, ["nodeoverlays"], WATCH),
        # CapacityBuffers: read, resolved from the PodTemplate or workload each names (read
        # one by one, not watched), and their status written
        _rule(cb.GROUP, ["capacitybuffers"], WATCH),
        _rule(cb.GROUP, ["capacitybuffers/status"], ["update"]),
        _rule("", ["podtemplates"], ["get"]),
        _rule("apps", ["deployments", "replicasets", "statefulsets"], ["get"]),
        _rule(
            wk.KARPENTER_GROUP,
            ["nodeclaims/status", "nodepools/status", "nodeoverlays/status"],
            ["update"],
        ),
        _rule(wk.AWS_GROUP, ["ec2nodeclasses/status"], ["update"]),
        # Draining: evictions, and deletion once terminationGracePeriod runs out
        _rule("", ["pods/eviction"], ["create"]),
        _rule("", ["pods"], ["delete"]),
        # Pod deletion cost (gate PodDeletionCostManagement): the annotation, patched
        _rule("", ["pods"], ["patch"]),
        # Events, a repeat bumping the count of the first
        _rule("", ["events"], ["create", "patch"]),
    ]


def leader_election_rules() -> list[dict[str, Any]]:
    """Leases in the controller's namespace: only its own may be read and renewed (a
    create cannot be limited to a name: RBAC does not know it before the object exists)."""
    return [
        _rule("coordination.k8s.io", ["leases"], ["create"]),
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [LEADER_ELECTION_LEASE],
            "verbs": ["get", "update"],
        },
    ]


def _rule(group: str, resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": resources, "verbs": list(verbs)}


def cluster_role() -> dict[str, Any]:
    return _object(RBAC_API, "ClusterRole", _metadata(NAME), rules=cluster_role_rules())


def cluster_role_binding(config: ControllerConfig) -> dict[str, Any]:
    return _binding("ClusterRoleBinding", "ClusterRole", None, config)


def leader_election_role(config: ControllerConfig) -> dict[str, Any]:
    metadata = _metadata(NAME, config.namespace)
    return _object(RBAC_API, "Role", metadata, rules=leader_election_rules())


def leader_election_role_binding(config: ControllerConfig) -> dict[str, Any]:
    return _binding("RoleBinding", "Role", config.namespace, config)


def _binding(
    kind: str, role_kind: str, namespace_name: str | None, config: ControllerConfig
) -> dict[str, Any]:
    return _object(
        RBAC_API,
        kind,
        _metadata(NAME, namespace_name),
        roleRef={"apiGroup": RBAC_GROUP, "kind": role_kind, "name": NAME},
        subjects=[
            {
                "kind": "ServiceAccount",
                "name": config.service_account,
                "namespace": config.namespace,
            }
        ],
    )


def controller_env(config: ControllerConfig) -> list[dict[str, Any]]:
    """The controller's settings as environment variables [SPEC 2]."""
    env: dict[str, Any] = {
        "CLUSTER_NAME": config.cluster_name,
        "CLUSTER_ENDPOINT": config.cluster_endpoint,
        "INTERRUPTION_QUEUE": config.interruption_queue or "",
        "LOG_LEVEL": config.log_level,
        "AWS_REGION": config.region,
        "METRICS_PORT": str(METRICS_PORT),
        "HEALTH_PROBE_PORT": str(HEALTH_PORT),
        "LEADER_ELECTION_NAME": LEADER_ELECTION_LEASE,
        "LEADER_ELECTION_NAMESPACE": config.namespace,
        **dict(config.settings),
    }
    return [{"name": key, "value": value} for key, value in env.items() if value is not None]


def deployment(config: ControllerConfig) -> dict[str, Any]:
    spec = {
        "replicas": config.replicas,
        "revisionHistoryLimit": 10,
        "strategy": {"rollingUpdate": {"maxUnavailable": 1}},
        "selector": {"matchLabels": selector_labels()},
        "template": {"metadata": {"labels": common_labels()}, "spec": _pod_spec(config)},
    }
    return _controller_object("apps/v1", "Deployment", config, spec)


def _pod_spec(config: ControllerConfig) -> dict[str, Any]:
    return {
        "serviceAccountName": config.service_account,
        "priorityClassName": PRIORITY_CLASS,
        "securityContext": {**_runs_as_non_root(), "fsGroup": RUN_AS_ID},
        "affinity": _affinity(),
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": wk.ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": selector_labels()},
            }
        ],
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "containers": [_container(config)],
        # The root filesystem is read-only; Python and boto3 still want a scratch dir.
        "volumes": [{"name": "tmp", "emptyDir": {}}],
    }


def _affinity() -> dict[str, Any]:
    return {
        # Never on nodes it manages: deleting them would stop the controller [DEPLOY].
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": wk.NODEPOOL, "operator": "DoesNotExist"}]}
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": wk.HOSTNAME, "labelSelector": {"matchLabels": selector_labels()}}
            ]
        },
    }


def _container(config: ControllerConfig) -> dict[str, Any]:
    return {
        "name": CONTAINER_NAME,
        "image": config.image,
        "imagePullPolicy": config.image_pull_policy,
        "env": controller_env(config),
        "ports": [
            {"name": METRICS_PORT_NAME, "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": HEALTH_PORT_NAME, "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": _probe("/healthz", initial_delay=30),
        "readinessProbe": _probe("/readyz", initial_delay=5),
        "resources": dict(config.resources),
        "securityContext": {
            **_runs_as_non_root(),
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }


def _probe(path: str, initial_delay: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": HEALTH_PORT_NAME},
        "initialDelaySeconds": initial_delay,
        "timeoutSeconds": 30,
    }


def pod_disruption_budget(config: ControllerConfig) -> dict[str, Any]:
    spec = {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels()}}
    return _controller_object("policy/v1", "PodDisruptionBudget", config, spec)


def metrics_service(config: ControllerConfig) -> dict[str, Any]:
    port = {
        "name": METRICS_PORT_NAME,
        "port": METRICS_PORT,
        "targetPort": METRICS_PORT_NAME,
        "protocol": "TCP",
    }
    spec = {"type": "ClusterIP", "selector": selector_labels(), "ports": [port]}
    return _controller_object("v1", "Service", config, spec)


def service_monitor(config: ControllerConfig) -> dict[str, Any]:
    """A Prometheus Operator ServiceMonitor for the metrics Service."""
    spec = {
        "selector": {"matchLabels": selector_labels()},
        "namespaceSelector": {"matchNames": [config.namespace]},
        "endpoints": [{"port": METRICS_PORT_NAME, "path": "/metrics"}],
    }
    return _controller_object("monitoring.coreos.com/v1", "ServiceMonitor", config, spec)
