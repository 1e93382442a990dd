"""Controller under mocks: every Kubernetes object its own resource, the Deployment as
[DEPLOY] describes it, RBAC and nothing more, CRDs from `joiner render crds`, settings that
`joiner controller` accepts, and the image built into ECR unless given."""

from pathlib import Path

import pulumi
import pytest
from joiner.api.crds import render_crds
from joiner.kube.resources import default_registry
from joiner.settings import SETTINGS, Settings
from joiner.state.cluster import WATCHED_KINDS
from pulumi_harness import ACCOUNT, REGION, component_outputs
from pulumi_joiner import Controller
from pulumi_joiner._common import ArgumentError
from pulumi_joiner.manifests import (
    ControllerConfig,
    check_settings,
    cluster_role_rules,
    controller_env,
)

ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/ctl"
BASE = {
    "cluster_name": "demo",
    "cluster_endpoint": "https://api.demo",
    "interruption_queue": "demo",
    "role_arn": ROLE_ARN,
    "region": REGION,
    "image": "registry.example/joiner:1",
}
SELECTOR = {"app.kubernetes.io/name": "joiner", "app.kubernetes.io/instance": "joiner"}


def controller(args):
    return component_outputs(lambda: Controller("ctl", args))


@pytest.fixture(scope="module")
def program():
    from pulumi_harness import run_program

    return run_program(controller(BASE))


def deployment_spec(program):
    return program.one("kubernetes:apps/v1:Deployment").inputs["spec"]


def test_each_object_is_its_own_kubernetes_resource(program):
    kinds = sorted(r.inputs["kind"] for r in program.resources if r.type.startswith("kubernetes:"))
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",  # NodePool ... CapacityBuffer
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "PodDisruptionBudget",
            "Service",
        ]
    )
    assert all(
        program.ancestors(r) == ["joiner:index:Controller"] for r in program.resources if r.custom
    )


def test_crds_are_the_rendered_ones(program):
    crds = program.kubernetes("CustomResourceDefinition")
    rendered = {crd["metadata"]["name"]: crd for crd in render_crds()}
    assert {c.inputs["metadata"]["name"] for c in crds} == set(rendered)
    for crd in crds:
        assert crd.inputs["spec"] == rendered[crd.inputs["metadata"]["name"]]["spec"]
    assert sorted(program.outputs["crd_names"]) == sorted(rendered)


def test_deployment_spec(program):
    spec = deployment_spec(program)
    assert spec["replicas"] == 2
    assert spec["selector"] == {"matchLabels": SELECTOR}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "karpenter"
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}
        ]
    }
    (anti,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": SELECTOR},
    }
    (spread,) = pod["topologySpreadConstraints"]
    assert (spread["topologyKey"], spread["maxSkew"]) == ("topology.kubernetes.io/zone", 1)
    assert pod["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    (container,) = pod["containers"]
    assert container["image"] == "registry.example/joiner:1"
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "http-metrics": 8080,
        "http-health": 8081,
    }
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-health"}


def test_deployment_env_is_what_joiner_controller_accepts(program):
    (container,) = deployment_spec(program)["template"]["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert set(env) <= {s.env for s in SETTINGS}
    settings = Settings.from_env(env, strict=True)
    assert (settings.cluster_name, settings.cluster_endpoint, settings.interruption_queue) == (
        "demo",
        "https://api.demo",
        "demo",
    )
    assert (settings.aws_region, settings.log_level) == (REGION, "info")
    assert (settings.metrics_port, settings.health_probe_port) == (8080, 8081)
    assert (settings.leader_election_name, settings.leader_election_namespace) == (
        "karpenter-leader-election",
        "karpenter",
    )


def test_bind_address_passes_to_the_container_for_ipv6_clusters():
    config = ControllerConfig(image="i", cluster_name="c", settings={"BIND_ADDRESS": "::"})
    env = {item["name"]: item["value"] for item in controller_env(config)}
    assert Settings.from_env(env, strict=True).bind_address == "::"


def test_pure_env_with_extra_settings_parses():
    config = ControllerConfig(
        image="i",
        cluster_name="c",
        settings={"BATCH_IDLE_DURATION": "2s", "FEATURE_GATES": "SpotToSpotConsolidation=true"},
    )
    env = {item["name"]: item["value"] for item in controller_env(config)}
    settings = Settings.from_env(env, strict=True)
    assert settings.batch_idle_duration == 2
    assert settings.feature_gates.spot_to_spot_consolidation is True
    assert env["INTERRUPTION_QUEUE"] == ""
    assert "CLUSTER_ENDPOINT" not in env


def test_the_static_capacity_gate_reaches_the_controller():
    """Static NodePools run only with the gate; the component passes it through (and its
    NodePool CRD, render_crds', has replicas and the scale subresource)."""
    config = ControllerConfig(
        image="i",
        cluster_name="c",
        settings=check_settings("Controller 'x'", {"FEATURE_GATES": "StaticCapacity=true"}),
    )
    env = {item["name"]: item["value"] for item in controller_env(config)}
    assert Settings.from_env(env, strict=True).feature_gates.static_capacity is True
    with pytest.raises(ArgumentError, match="unknown feature gate 'StaticCapacities'"):
        check_settings("Controller 'x'", {"FEATURE_GATES": "StaticCapacities=true"})


def test_rbac_is_what_the_controller_uses(program):
    """The Controller renders manifests.cluster_role_rules(), which the real-server round
    trip (tests/e2e/test_real_cluster.py) holds to what the controller does; this pins the
    result so a change to the role is a visible change here."""
    (cluster_role,) = program.kubernetes("ClusterRole")
    rules = cluster_role.inputs["rules"]
    assert rules == cluster_role_rules()
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    watched = {(g, r) for g, r, v in granted if v == "watch"}
    assert watched == {(g, r) for g, r, v in granted if v == "list"}
    assert watched == {
        ("", "pods"),
        ("", "nodes"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("apps", "daemonsets"),
        ("policy", "poddisruptionbudgets"),
        ("karpenter.sh", "nodepools"),
        ("karpenter.sh", "nodeclaims"),
        ("karpenter.k8s.aws", "ec2nodeclasses"),
        ("karpenter.sh", "nodeoverlays"),
        ("autoscaling.x-k8s.io", "capacitybuffers"),
    }
    assert {(g, r, v) for g, r, v in granted if v not in ("list", "watch")} == {
        ("", "nodes", "get"),
        ("", "nodes", "update"),
        ("", "nodes", "delete"),
        ("karpenter.sh", "nodeclaims", "get"),
        ("karpenter.sh", "nodeclaims", "create"),
        ("karpenter.sh", "nodeclaims", "update"),
        ("karpenter.sh", "nodeclaims", "delete"),
        ("karpenter.sh", "nodepools", "update"),
        ("karpenter.k8s.aws", "ec2nodeclasses", "get"),
        ("karpenter.k8s.aws", "ec2nodeclasses", "update"),
        ("karpenter.sh", "nodeclaims/status", "update"),
        ("karpenter.sh", "nodepools/status", "update"),
        ("karpenter.sh", "nodeoverlays/status", "update"),
        ("karpenter.k8s.aws", "ec2nodeclasses/status", "update"),
        ("autoscaling.x-k8s.io", "capacitybuffers/status", "update"),
        ("", "podtemplates", "get"),
        ("apps", "deployments", "get"),
        ("apps", "replicasets", "get"),
        ("apps", "statefulsets", "get"),
        ("", "pods/eviction", "create"),
        ("", "pods", "delete"),
        ("", "pods", "patch"),
        ("", "events", "create"),
        ("", "events", "patch"),
    }
    (role,) = program.kubernetes("Role")
    assert role.inputs["metadata"]["namespace"] == "karpenter"
    assert {g for rule in role.inputs["rules"] for g in rule["apiGroups"]} == {
        "coordination.k8s.io"
    }
    assert role.inputs["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["karpenter-leader-election"],
            "verbs": ["get", "update"],
        },
    ]
    for binding in program.kubernetes("ClusterRoleBinding") + program.kubernetes("RoleBinding"):
        assert binding.inputs["subjects"] == [
            {"kind": "ServiceAccount", "name": "karpenter", "namespace": "karpenter"}
        ]


def test_every_kind_the_controller_watches_may_be_listed_and_watched():
    """A kind added to the controller's watches without the role would be refused at
    start-up (the cluster state would never sync)."""
    registry = default_registry()
    rules = cluster_role_rules()
    for kind in WATCHED_KINDS:
        rk = registry.lookup(kind)
        verbs = {
            verb
            for rule in rules
            if rk.group in rule["apiGroups"] and rk.plural in rule["resources"]
            for verb in rule["verbs"]
        }
        assert {"list", "watch"} <= verbs, kind


def test_service_account_pdb_and_metrics_service(program):
    (account,) = program.kubernetes("ServiceAccount")
    assert account.inputs["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": ROLE_ARN}
    (pdb,) = program.kubernetes("PodDisruptionBudget")
    assert pdb.inputs["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SELECTOR}}
    (service,) = program.kubernetes("Service")
    assert service.inputs["spec"]["ports"][0]["port"] == 8080
    assert program.outputs["namespace"] == "karpenter"
    assert program.outputs["deployment_name"] == "joiner"


def test_namespaced_objects_wait_for_the_namespace(program):
    (namespace,) = program.kubernetes("Namespace")
    namespaced = [r for r in program.resources if r.type.startswith("kubernetes:")]
    namespaced = [r for r in namespaced if r.inputs["metadata"].get("namespace")]
    assert len(namespaced) == 6
    for resource in namespaced:
        assert program.depends_on(resource, namespace), resource.name


def test_deployment_waits_for_crds_and_rbac(program):
    deployment = program.one("kubernetes:apps/v1:Deployment")
    for kind in ("CustomResourceDefinition", "ServiceAccount", "ClusterRoleBinding", "RoleBinding"):
        for resource in program.kubernetes(kind):
            assert program.depends_on(deployment, resource), kind


def test_service_monitor_pod_identity_and_existing_namespace(run):
    args = {k: v for k, v in BASE.items() if k != "role_arn"}
    program = run(
        controller({**args, "service_monitor": True, "create_namespace": False, "namespace": "ops"})
    )
    monitor = program.one("kubernetes:monitoring.coreos.com/v1:ServiceMonitor")
    assert monitor.inputs["spec"]["endpoints"] == [{"port": "http-metrics", "path": "/metrics"}]
    assert not program.kubernetes("Namespace")
    (account,) = program.kubernetes("ServiceAccount")
    assert account.inputs["metadata"]["namespace"] == "ops"
    assert not account.inputs["metadata"].get("annotations")


def test_image_is_built_into_a_new_ecr_repository(run):
    args = {k: v for k, v in BASE.items() if k != "image"}
    program = run(controller(args))
    repository = program.one("aws:ecr/repository:Repository")
    image = program.one("docker-build:index:Image")
    url = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{repository.name}"
    root = Path(__file__).resolve().parents[2]
    assert image.inputs["push"] is True
    assert image.inputs["context"] == {"location": str(root)}
    assert image.inputs["dockerfile"] == {"location": str(root / "controller" / "Dockerfile")}
    assert image.inputs["platforms"] == ["linux/amd64"]
    assert image.inputs["tags"][0].startswith(url + ":")
    assert image.inputs["registries"][0]["address"] == url
    assert program.outputs["image"].startswith(url + ":") and "@sha256:" in program.outputs["image"]
    (container,) = deployment_spec(program)["template"]["spec"]["containers"]
    assert container["image"] == program.outputs["image"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"cluster_name": None}, "Controller 'ctl': argument 'cluster_name' is required"),
        (
            {"settings": {"CLUSTER_NAME": "x"}},
            "argument 'settings.CLUSTER_NAME' is set by the component",
        ),
        (
            {"settings": {"BATCH_IDLE": "1s"}},
            "argument 'settings.BATCH_IDLE' is not a controller setting",
        ),
        (
            {"settings": {"BATCH_IDLE_DURATION": "soon"}},
            "argument 'settings' is invalid: BATCH_IDLE_DURATION: invalid duration",
        ),
        (
            {"settings": {"BIND_ADDRESS": "127.0.0.1"}},
            "argument 'settings.BIND_ADDRESS' is a loopback address: the kubelet's probes",
        ),
        (
            {"settings": {"BIND_ADDRESS": "::1"}},
            "argument 'settings.BIND_ADDRESS' is a loopback address",
        ),
        ({"replicas": 0}, "argument 'replicas' must be at least 1"),
        (
            {"image": None, "build_context": "/nonexistent"},
            "argument 'image' is required: no controller/Dockerfile under /nonexistent",
        ),
        (
            {"image": None, "image_platform": "linux/sparc"},
            "argument 'image_platform' must be one of",
        ),
    ],
)
def test_bad_input_names_the_argument(run, extra, message):
    args = {k: v for k, v in {**BASE, **extra}.items() if v is not None}
    with pytest.raises(pulumi.RunError, match=message):
        run(controller(args), preview=True)


def test_every_env_var_is_documented_by_joiner_controller_help(program, capsys):
    from joiner.cli import main

    (container,) = deployment_spec(program)["template"]["spec"]["containers"]
    with pytest.raises(SystemExit) as exit_info:
        main(["controller", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for item in container["env"]:
        assert f"  {item['name']} " in help_text, item["name"]
