"""The pack against the real components: run the stack programs under the components'
mocked runtime (tests/components/pulumi_harness.py), hand every registered resource to
every policy as the engine would, and compare what is reported. Our own stacks and
components pass every policy, advisory ones included; weakened variants are caught."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from policy_calls import Violation, evaluate
from pulumi_harness import Program, Registered, run_program
from pulumi_joiner import Cluster
from pulumi_policy import EnforcementLevel, PolicyResource, PolicyResourceOptions
from pulumi_policy.policy import PolicyCustomTimeouts
from pulumi_policy.proxy import unknown_checking_proxy
from test_pulumi_stacks import (
    EXISTING,
    EXISTING_CLUSTER,
    MY_ADDRESS,
    NEW_CLUSTER,
    readme_deployments,
    stack,
)

MANDATORY, ADVISORY = EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY
Transform = Callable[[Registered, dict[str, Any]], None]


def as_stack(program: Program, transform: Transform | None = None) -> list[PolicyResource]:
    """The registered resources as the engine passes them to policies (their inputs,
    behind the engine's proxy), after ``transform`` edits a copy of each one's inputs."""
    resources: dict[str, PolicyResource] = {}
    for registered in program.resources:
        props = copy.deepcopy(registered.inputs)
        if transform is not None:
            transform(registered, props)
        resources[registered.urn] = PolicyResource(
            registered.type,
            unknown_checking_proxy(props),
            registered.urn,
            registered.name,
            PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None),
            None,
            None,
            [],
            {},
        )
    for registered in program.resources:
        own = resources[registered.urn]
        own.parent = resources.get(registered.parent)
        own.dependencies = [resources[urn] for urn in registered.dependencies if urn in resources]
    return list(resources.values())


def findings(violations: list[Violation]) -> set[tuple[str, str, EnforcementLevel]]:
    return {(v.policy, v.resource, v.level) for v in violations}


NODE_POOLS = {
    "default": {"node_pool": {"limits": {"cpu": "200"}}},
    "arm": {"node_pool": {"weight": 10}},
}


def run_private_cluster(**extra: Any) -> Program:
    """Our Cluster component with a private API endpoint and two node pools."""
    args: dict[str, Any] = {
        "cluster_name": "demo",
        "endpoint_public_access": False,
        "node_pools": NODE_POOLS,
        **extra,
    }
    return run_program(
        lambda: {"name": Cluster("joiner", args).cluster_name},  # type: ignore[arg-type]
        config={"aws:region": "us-west-2"},
    )


@pytest.fixture(scope="module")
def private_cluster() -> Program:
    return run_private_cluster()


def test_our_cluster_passes_every_policy(private_cluster):
    # Mandatory and advisory alike: the component encrypts secrets with a key it creates.
    assert evaluate(as_stack(private_cluster)) == []


def test_our_cluster_without_secrets_encryption_gets_the_advice():
    program = run_private_cluster(create_secrets_encryption_key=False)
    assert findings(evaluate(as_stack(program))) == {
        ("eks-secrets-encryption", "joiner-eks", ADVISORY)
    }


def test_every_kind_of_resource_the_pack_checks_is_present(private_cluster):
    # So a clean result above means something: the checked types were all there.
    types = {r.type for r in private_cluster.resources}
    assert {
        "aws:iam/policy:Policy",
        "aws:iam/role:Role",
        "aws:sqs/queue:Queue",
        "aws:sqs/queuePolicy:QueuePolicy",
        "aws:cloudwatch/eventTarget:EventTarget",
        "eks:index:Cluster",
        "kubernetes:karpenter.sh/v1:NodePool",
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
        "kubernetes:apps/v1:Deployment",
    } <= types
    assert len(private_cluster.kubernetes("NodePool")) == 2


def test_the_existing_cluster_stack_passes_cleanly():
    """stacks/existing_cluster: Joiner into a cluster the stack does not own."""
    program = run_program(stack(EXISTING_CLUSTER), config=EXISTING)
    assert program.kubernetes("NodePool") and program.of_type("aws:iam/policy:Policy")
    assert evaluate(as_stack(program)) == []


def run_root_stack(**config: str) -> Program:
    """`pulumi up` at the root (stacks/new_cluster) as the README deploys it: the example
    Pulumi.dev.yaml plus the README's `pulumi config set` lines, then ``config``."""
    (program_path, stack_name, readme_config), _ = readme_deployments()
    assert program_path == NEW_CLUSTER
    return run_program(stack(program_path), config={**readme_config, **config}, stack=stack_name)


@pytest.fixture(scope="module")
def root_stack() -> Program:
    return run_root_stack()


def test_the_root_stack_passes_every_policy(root_stack):
    eks = root_stack.one("eks:index:Cluster")
    # A public endpoint, admitting the deploying machine only, and encrypted secrets.
    assert (eks.inputs["endpointPublicAccess"], eks.inputs["publicAccessCidrs"]) == (
        True,
        [f"{MY_ADDRESS}/32"],
    )
    assert eks.inputs["encryptionConfigKeyArn"]
    assert evaluate(as_stack(root_stack)) == []


def test_the_root_stack_within_the_organisations_ranges(root_stack):
    inside = {"eks-public-endpoint-restricted": {"allowedPublicAccessCidrs": ["203.0.113.0/24"]}}
    assert evaluate(as_stack(root_stack), inside) == []
    outside = {"eks-public-endpoint-restricted": {"allowedPublicAccessCidrs": ["10.0.0.0/8"]}}
    assert findings(evaluate(as_stack(root_stack), outside)) == {
        ("eks-public-endpoint-restricted", "joiner-eks", MANDATORY)
    }


def test_the_root_stack_opened_to_the_world_is_caught():
    program = run_root_stack(**{"joiner:publicAccessCidrs": '["0.0.0.0/0"]'})
    violations = evaluate(as_stack(program))
    assert findings(violations) == {("eks-public-endpoint-restricted", "joiner-eks", MANDATORY)}
    (violation,) = violations
    assert "reachable from 0.0.0.0/0" in violation.message
    # Accepting the risk explicitly is the organisation's call, in the policy configuration.
    allow_world = {"eks-public-endpoint-restricted": {"allowedPublicAccessCidrs": ["0.0.0.0/0"]}}
    assert evaluate(as_stack(program), allow_world) == []


ADMIN = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}


def wildcard_iam(r: Registered, props: dict[str, Any]) -> None:
    if r.type == "aws:iam/policy:Policy" and r.name.endswith("controller-policy"):
        props["policy"] = json.dumps(ADMIN)


def unencrypted_queue(r: Registered, props: dict[str, Any]) -> None:
    if r.type == "aws:sqs/queue:Queue":
        props.pop("sqsManagedSseEnabled")


def imds_v1(r: Registered, props: dict[str, Any]) -> None:
    if props.get("kind") == "EC2NodeClass":
        props["spec"]["metadataOptions"]["httpTokens"] = "optional"


def unbounded_nodepool(r: Registered, props: dict[str, Any]) -> None:
    if props.get("kind") == "NodePool" and props["metadata"]["name"] == "default":
        props["spec"].pop("limits")


def unpinned_trust(r: Registered, props: dict[str, Any]) -> None:
    if r.type == "aws:iam/role:Role" and r.name.endswith("controller-role"):
        trust = json.loads(props["assumeRolePolicy"])
        trust["Statement"][0].pop("Condition")
        props["assumeRolePolicy"] = json.dumps(trust)


def plaintext_queue_policy(r: Registered, props: dict[str, Any]) -> None:
    if r.type == "aws:sqs/queuePolicy:QueuePolicy":
        document = json.loads(props["policy"])
        document["Statement"] = [s for s in document["Statement"] if s["Effect"] == "Allow"]
        props["policy"] = json.dumps(document)


def root_controller(r: Registered, props: dict[str, Any]) -> None:
    if props.get("kind") == "Deployment":
        pod = props["spec"]["template"]["spec"]
        pod.pop("affinity")
        for container in pod["containers"]:
            container["securityContext"].update(runAsUser=0, readOnlyRootFilesystem=False)


def dangling_node_class(r: Registered, props: dict[str, Any]) -> None:
    if props.get("kind") == "EC2NodeClass" and props["metadata"]["name"] == "arm":
        props["metadata"]["name"] = "renamed"


@pytest.mark.parametrize(
    ("weaken", "caught"),
    [
        (
            wildcard_iam,
            {
                ("iam-no-wildcard-actions", "joiner-joiner-controller-policy"),
                ("iam-ec2-tag-conditions", "joiner-joiner-controller-policy"),
                ("iam-passrole-scoped", "joiner-joiner-controller-policy"),
            },
        ),
        (unencrypted_queue, {("sqs-queue-encrypted", "joiner-joiner-interruption-queue")}),
        (
            imds_v1,
            {
                ("ec2-imdsv2-required", "joiner-joiner-default-node-class"),
                ("ec2-imdsv2-required", "joiner-joiner-arm-node-class"),
            },
        ),
        (unbounded_nodepool, {("nodepool-limits", "joiner-joiner-default-node-pool")}),
        (unpinned_trust, {("iam-irsa-trust-pinned", "joiner-joiner-controller-role")}),
        (
            plaintext_queue_policy,
            {("sqs-queue-denies-insecure-transport", "joiner-joiner-interruption-queue")},
        ),
        (
            root_controller,
            {("autoscaler-controller-hardened", "joiner-joiner-controller-deployment")},
        ),
        (dangling_node_class, {("nodepool-nodeclass-exists", "joiner-joiner-arm-node-pool")}),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_weakened_variants_of_our_cluster_are_caught(private_cluster, weaken, caught):
    baseline = findings(evaluate(as_stack(private_cluster)))
    weakened = findings(evaluate(as_stack(private_cluster, weaken)))
    assert weakened - baseline == {(policy, name, MANDATORY) for policy, name in caught}
    assert baseline <= weakened
