"""Autoscaler (existing cluster) under mocks: wiring between the parts, outputs, and the
teardown order that leaves no instance, template or profile behind."""

import json

import pulumi
import pytest
from pulumi_harness import ACCOUNT, OIDC_ISSUER, OIDC_PROVIDER_ARN, REGION, component_outputs
from pulumi_joiner import Autoscaler

BASE = {
    "cluster_name": "demo",
    "cluster_endpoint": "https://api.demo",
    "oidc_provider_arn": OIDC_PROVIDER_ARN,
    "oidc_provider_url": f"https://{OIDC_ISSUER}",
    "image": "registry.example/joiner:1",
}
DYNAMIC = "pulumi-python:dynamic:Resource"


def autoscaler(args):
    return component_outputs(lambda: Autoscaler("joiner", args))


@pytest.fixture(scope="module")
def program():
    from pulumi_harness import run_program

    return run_program(
        autoscaler(
            {
                **BASE,
                "discovery_subnet_ids": ["subnet-1", "subnet-2"],
                "discovery_security_group_ids": ["sg-1"],
            }
        )
    )


def env_of(program):
    (container,) = program.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"][
        "containers"
    ]
    return {item["name"]: item["value"] for item in container["env"]}


def test_outputs_are_wired_through(program):
    assert program.outputs == {
        "controller_role_arn": f"arn:aws:iam::{ACCOUNT}:role/joiner-controller-role",
        "node_role_arn": f"arn:aws:iam::{ACCOUNT}:role/joiner-node-role",
        "node_role_name": "joiner-node-role",
        "queue_name": "demo",
        "queue_url": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/demo",
        "namespace": "karpenter",
        "image": "registry.example/joiner:1",
        "node_pool_names": ["default"],
    }


def test_parts_are_connected(program):
    policy = json.loads(program.one("aws:iam/policy:Policy").inputs["policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert statements["AllowPassingInstanceRole"]["Resource"] == [program.outputs["node_role_arn"]]
    assert statements["AllowInterruptionQueueActions"]["Resource"] == [
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:demo"
    ]
    env = env_of(program)
    assert (
        env["CLUSTER_NAME"],
        env["CLUSTER_ENDPOINT"],
        env["INTERRUPTION_QUEUE"],
        env["AWS_REGION"],
    ) == ("demo", "https://api.demo", "demo", REGION)
    (account,) = program.kubernetes("ServiceAccount")
    assert account.inputs["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": program.outputs["controller_role_arn"]
    }
    (node_class,) = program.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    assert node_class.inputs["spec"]["role"] == "joiner-node-role"
    entry = program.one("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["principalArn"] == program.outputs["node_role_arn"]


def test_discovery_tags(program):
    tags = sorted(
        (t.inputs["resourceId"], t.inputs["key"], t.inputs["value"])
        for t in program.of_type("aws:ec2/tag:Tag")
    )
    assert tags == [
        ("sg-1", "karpenter.sh/discovery", "demo"),
        ("subnet-1", "karpenter.sh/discovery", "demo"),
        ("subnet-2", "karpenter.sh/discovery", "demo"),
    ]


def test_teardown_order(program):
    """Destroy runs in reverse dependency order: NodePools (their NodeClaims drained by the
    running controller), then the controller, then the sweep, then roles and queue."""
    cleanup = program.one(DYNAMIC)
    assert (cleanup.inputs["cluster_name"], cleanup.inputs["region"]) == ("demo", REGION)
    for type_token in (
        "aws:iam/role:Role",
        "aws:sqs/queue:Queue",
        "aws:eks/accessEntry:AccessEntry",
        "aws:iam/policy:Policy",
    ):
        for resource in program.of_type(type_token):
            assert program.depends_on(cleanup, resource), resource.name
    controller = program.one("joiner:index:Controller")
    assert program.depends_on(controller, cleanup)
    node_pool_component = program.one("joiner:index:NodePool")
    for kind in ("Deployment", "CustomResourceDefinition", "ClusterRoleBinding"):
        for resource in program.kubernetes(kind):
            assert program.depends_on(node_pool_component, resource), kind
    (node_pool,) = program.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert (
        node_pool.inputs["metadata"]["annotations"]["pulumi.com/deletionPropagationPolicy"]
        == "foreground"
    )


def test_children_are_parented(program):
    direct = {
        r.type for r in program.resources if program.ancestors(r)[:1] == ["joiner:index:Autoscaler"]
    }
    assert {
        "joiner:index:NodeRole",
        "joiner:index:ControllerRole",
        "joiner:index:InterruptionQueue",
        "joiner:index:Controller",
        "joiner:index:NodePool",
        DYNAMIC,
        "aws:ec2/tag:Tag",
    } == direct
    assert all(
        program.ancestors(r)[-1:] == ["joiner:index:Autoscaler"]
        for r in program.resources
        if r.type != "joiner:index:Autoscaler"
    )


def test_pod_identity_without_interruption_and_with_kubeconfig(run):
    args = {k: v for k, v in BASE.items() if not k.startswith("oidc")}
    program = run(
        autoscaler(
            {
                **args,
                "use_pod_identity": True,
                "enable_interruption": False,
                "kubeconfig": "{}",
                "node_pools": {},
            }
        )
    )
    assert (
        program.one("aws:eks/podIdentityAssociation:PodIdentityAssociation").inputs[
            "serviceAccount"
        ]
        == "karpenter"
    )
    (account,) = program.kubernetes("ServiceAccount")
    assert not account.inputs["metadata"].get("annotations")
    assert not program.of_type("aws:sqs/queue:Queue")
    assert env_of(program)["INTERRUPTION_QUEUE"] == ""
    assert (
        program.outputs["queue_name"],
        program.outputs["queue_url"],
        program.outputs["node_pool_names"],
    ) == (None, None, [])
    provider = program.one("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == "{}"
    assert not program.of_type("kubernetes:karpenter.sh/v1:NodePool")


def test_several_pools_with_overrides(run):
    pools = {
        "general": {},
        "gpu": {
            "node_pool": {
                "template": {"spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}}
            }
        },
    }
    program = run(autoscaler({**BASE, "node_pools": pools}))
    names = sorted(
        r.inputs["metadata"]["name"] for r in program.of_type("kubernetes:karpenter.sh/v1:NodePool")
    )
    assert names == ["general", "gpu"]
    gpu = next(
        r
        for r in program.of_type("kubernetes:karpenter.sh/v1:NodePool")
        if r.inputs["metadata"]["name"] == "gpu"
    )
    assert gpu.inputs["spec"]["template"]["spec"]["taints"] == [
        {"key": "gpu", "effect": "NoSchedule"}
    ]


def test_a_given_kubernetes_provider_is_used_for_every_kubernetes_object(run):
    import pulumi_kubernetes as k8s

    def program():
        provider = k8s.Provider("cluster", kubeconfig="{}")
        Autoscaler("joiner", {**BASE, "kubernetes_provider": provider})

    program = run(program)
    (provider,) = program.of_type("pulumi:providers:kubernetes")
    kubernetes = [r for r in program.resources if r.type.startswith("kubernetes:")]
    assert kubernetes
    assert all(r.provider.startswith(provider.urn + "::") for r in kubernetes)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {**BASE, "cluster_name": None},
            "Autoscaler 'joiner': argument 'cluster_name' is required",
        ),
        (
            {**BASE, "node_pools": {"default": {"limits": {}}}},
            r"argument 'node_pools.default' has unknown keys \['limits'\]",
        ),
        (
            {**BASE, "node_pools": {"default": {"node_pool": {"weight": 0}}}},
            "NodePool 'joiner-default': argument 'node_pool' is invalid: spec.weight",
        ),
        ({**BASE, "oidc_provider_arn": None}, "argument 'oidc_provider_arn' is required for IRSA"),
        (
            {**BASE, "kubeconfig": "{}", "kubernetes_provider": object()},
            "set argument 'kubernetes_provider' or 'kubeconfig', not both",
        ),
    ],
)
def test_bad_input_names_the_argument(run, args, message):
    with pytest.raises(pulumi.RunError, match=message):
        run(autoscaler({k: v for k, v in args.items() if v is not None}), preview=True)
