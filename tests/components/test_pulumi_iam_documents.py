"""The IAM documents, evaluated: a small IAM evaluator (joiner.infra.policyeval) answers
"would AWS allow this call" for the controller policy, so least privilege is checked by
behaviour, not by shape."""

import json

import pytest
from joiner.cli import main
from joiner.infra.iam import (
    ControllerPolicyParams,
    check_field,
    controller_policy,
    interruption_queue_policy,
    irsa_trust_policy,
    node_role_managed_policy_arns,
    node_role_trust_policy,
    pod_identity_trust_policy,
)
from joiner.infra.policyeval import Request, as_list
from joiner.infra.policyeval import allowed as evaluate

CLUSTER = "demo"
REGION = "us-west-2"
ACCOUNT = "123456789012"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/demo-node"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:demo"
OWNED = f"kubernetes.io/cluster/{CLUSTER}"
PARAMS = ControllerPolicyParams(CLUSTER, REGION, ACCOUNT, NODE_ROLE, QUEUE)
MUTATING_EC2 = (
    "ec2:RunInstances",
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateTags",
    "ec2:TerminateInstances",
    "ec2:DeleteLaunchTemplate",
)
CREATED_TYPES = ("instance", "volume", "network-interface", "launch-template", "fleet")


def allowed(policy: dict, action: str, resource: str, context: dict | None = None) -> bool:
    return evaluate(policy, Request(action, resource, context or {}))


def ec2_arn(resource_type: str, resource_id: str = "x-1") -> str:
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:{resource_type}/{resource_id}"


def request_tags(cluster: str = CLUSTER, nodepool: str | None = "default") -> dict:
    tags = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster,
    }
    if nodepool:
        tags["aws:RequestTag/karpenter.sh/nodepool"] = nodepool
    return tags


def resource_tags(cluster: str = CLUSTER) -> dict:
    return {
        f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned",
        "aws:ResourceTag/karpenter.sh/nodepool": "default",
    }


@pytest.fixture(scope="module")
def policy() -> dict:
    return controller_policy(PARAMS)


# -- least privilege -------------------------------------------------------------------------


def test_no_wildcard_actions_and_star_resources_only_for_reads(policy):
    actions = [a for s in policy["Statement"] for a in as_list(s["Action"])]
    assert not [a for a in actions if "*" in a]
    for statement in policy["Statement"]:
        if "*" in as_list(statement["Resource"]):
            assert all(
                a.startswith("ec2:Describe") or a == "pricing:GetProducts"
                for a in statement["Action"]
            ), statement["Sid"]


def test_every_mutating_ec2_statement_is_conditioned_on_the_cluster_tag(policy):
    referenced_only = (
        "image/",
        "snapshot/",
        "security-group/",
        "subnet/",
        "capacity-reservation/",
        "placement-group/",
    )
    for statement in policy["Statement"]:
        if not set(MUTATING_EC2) & set(statement["Action"]):
            continue
        keys = [k for pairs in statement.get("Condition", {}).values() for k in pairs]
        if any(OWNED in key for key in keys):
            continue
        # Only resources a launch references, never creates or destroys.
        assert all(any(t in r for t in referenced_only) for r in statement["Resource"]), statement


@pytest.mark.parametrize("action", MUTATING_EC2)
@pytest.mark.parametrize("resource_type", CREATED_TYPES)
def test_mutating_ec2_calls_on_untagged_or_foreign_resources_are_denied(
    policy, action, resource_type
):
    arn = ec2_arn(resource_type)
    assert not allowed(policy, action, arn)
    assert not allowed(policy, action, arn, {**request_tags("other"), **resource_tags("other")})
    assert not allowed(policy, action, arn, request_tags(nodepool=None))


def test_launch_with_the_clusters_tags_is_allowed(policy):
    for resource_type in (
        "instance",
        "volume",
        "network-interface",
        "fleet",
        "spot-instances-request",
    ):
        assert allowed(policy, "ec2:CreateFleet", ec2_arn(resource_type), request_tags())
        assert allowed(policy, "ec2:RunInstances", ec2_arn(resource_type), request_tags())
    assert allowed(policy, "ec2:CreateLaunchTemplate", ec2_arn("launch-template"), request_tags())
    assert allowed(policy, "ec2:RunInstances", ec2_arn("launch-template"), resource_tags())
    assert not allowed(
        policy, "ec2:RunInstances", ec2_arn("launch-template"), resource_tags("other")
    )
    ami = f"arn:aws:ec2:{REGION}::image/ami-1"
    assert allowed(policy, "ec2:RunInstances", ami)
    assert not allowed(policy, "ec2:RunInstances", "arn:aws:ec2:eu-west-1::image/ami-1")


def test_tagging_only_at_creation_or_limited_keys_on_owned_instances(policy):
    at_creation = {**request_tags(), "ec2:CreateAction": "RunInstances"}
    assert allowed(policy, "ec2:CreateTags", ec2_arn("volume"), at_creation)
    assert not allowed(
        policy,
        "ec2:CreateTags",
        ec2_arn("volume"),
        {**request_tags(), "ec2:CreateAction": "CreateVolume"},
    )
    owned = {**resource_tags(), "aws:TagKeys": ["karpenter.sh/nodeclaim", "Name"]}
    assert allowed(policy, "ec2:CreateTags", ec2_arn("instance"), owned)
    assert not allowed(
        policy, "ec2:CreateTags", ec2_arn("instance"), {**resource_tags(), "aws:TagKeys": ["team"]}
    )


def test_termination_only_of_owned_instances_and_templates(policy):
    assert allowed(policy, "ec2:TerminateInstances", ec2_arn("instance"), resource_tags())
    assert allowed(policy, "ec2:DeleteLaunchTemplate", ec2_arn("launch-template"), resource_tags())
    assert not allowed(
        policy, "ec2:TerminateInstances", ec2_arn("instance"), resource_tags("other")
    )


def test_reads_are_limited_to_the_region(policy):
    assert allowed(policy, "ec2:DescribeInstanceTypes", "*", {"aws:RequestedRegion": REGION})
    assert not allowed(
        policy, "ec2:DescribeInstanceTypes", "*", {"aws:RequestedRegion": "eu-west-1"}
    )
    assert allowed(policy, "ssm:GetParameter", f"arn:aws:ssm:{REGION}::parameter/aws/service/eks/x")
    assert allowed(policy, "pricing:GetProducts", "*")


def test_ssm_parameters_public_or_the_accounts_own_in_the_region(policy):
    """A class's amiSelectorTerms ssmParameter may name any parameter of the account."""
    assert allowed(policy, "ssm:GetParameter", f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/team/ami")
    assert not allowed(policy, "ssm:GetParameter", f"arn:aws:ssm:{REGION}::parameter/secret/db")
    assert not allowed(policy, "ssm:GetParameter", f"arn:aws:ssm:{REGION}:999999999999:parameter/x")
    assert not allowed(policy, "ssm:GetParameter", f"arn:aws:ssm:eu-west-1:{ACCOUNT}:parameter/x")


def test_roles_of_the_account_can_be_read(policy):
    """The provider checks a class's spec.role exists (GetRole) before making its profile."""
    assert allowed(policy, "iam:GetRole", f"arn:aws:iam::{ACCOUNT}:role/demo-node")
    assert not allowed(policy, "iam:GetRole", "arn:aws:iam::999999999999:role/demo-node")


def test_pass_role_only_the_node_role_only_to_ec2(policy):
    to_ec2 = {"iam:PassedToService": "ec2.amazonaws.com"}
    assert allowed(policy, "iam:PassRole", NODE_ROLE, to_ec2)
    assert not allowed(
        policy, "iam:PassRole", NODE_ROLE, {"iam:PassedToService": "lambda.amazonaws.com"}
    )
    assert not allowed(policy, "iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/admin", to_ec2)


def test_queue_and_cluster_access_are_scoped(policy):
    for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueUrl"):
        assert allowed(policy, action, QUEUE)
        assert not allowed(policy, action, f"arn:aws:sqs:{REGION}:{ACCOUNT}:other")
    assert not allowed(policy, "sqs:SendMessage", QUEUE)
    assert allowed(
        policy, "eks:DescribeCluster", f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"
    )
    assert not allowed(
        policy, "eks:DescribeCluster", f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/other"
    )


def test_without_a_queue_there_is_no_sqs_access():
    policy = controller_policy(ControllerPolicyParams(CLUSTER, REGION, ACCOUNT, NODE_ROLE))
    assert not [a for s in policy["Statement"] for a in s["Action"] if a.startswith("sqs:")]


def test_instance_profiles_only_with_the_clusters_tags(policy):
    profile = f"arn:aws:iam::{ACCOUNT}:instance-profile/demo_123"
    create = {
        f"aws:RequestTag/{OWNED}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
        "aws:RequestTag/topology.kubernetes.io/region": REGION,
        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "default",
    }
    assert allowed(policy, "iam:CreateInstanceProfile", profile, create)
    assert not allowed(policy, "iam:CreateInstanceProfile", profile)
    owned = {
        f"aws:ResourceTag/{OWNED}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": REGION,
        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "default",
    }
    for action in (
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
    ):
        assert allowed(policy, action, profile, owned)
        assert not allowed(policy, action, profile)
    assert allowed(policy, "iam:TagInstanceProfile", profile, {**owned, **create})
    assert allowed(policy, "iam:GetInstanceProfile", profile)
    assert not allowed(policy, "iam:ListInstanceProfiles", "*")


def test_partition_flows_into_every_arn():
    policy = controller_policy(
        ControllerPolicyParams(
            CLUSTER, "cn-north-1", ACCOUNT, f"arn:aws-cn:iam::{ACCOUNT}:role/n", None, "aws-cn"
        )
    )
    arns = [r for s in policy["Statement"] for r in s["Resource"] if r.startswith("arn:")]
    assert arns and all(r.startswith("arn:aws-cn:") for r in arns)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("cluster_name", ""),
        ("region", "usw2"),
        ("account_id", "1234"),
        ("node_role_arn", "arn:aws:iam::123456789012:user/bob"),
        ("queue_arn", "my-queue"),
        ("partition", "azure"),
    ],
)
def test_bad_parameters_name_the_field(field, value):
    params = {**PARAMS.__dict__, field: value}
    with pytest.raises(ValueError, match=f"^{field}: '{value}' is not valid"):
        controller_policy(ControllerPolicyParams(**params))
    with pytest.raises(ValueError, match="is not valid"):
        check_field(field, value)


# -- the other documents ----------------------------------------------------------------------


def test_irsa_trust_is_limited_to_the_service_account_and_sts():
    trust = irsa_trust_policy(
        "arn:aws:iam::1:oidc-provider/oidc.example/id/X", "https://oidc.example/id/X", "ns", "sa"
    )
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Federated": "arn:aws:iam::1:oidc-provider/oidc.example/id/X"}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {
        "StringEquals": {
            "oidc.example/id/X:sub": "system:serviceaccount:ns:sa",
            "oidc.example/id/X:aud": "sts.amazonaws.com",
        }
    }


def test_service_trusts():
    assert pod_identity_trust_policy()["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ]
    assert node_role_trust_policy()["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": ["sts:AssumeRole"],
        }
    ]
    assert node_role_managed_policy_arns("aws") == [
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]


EVENTBRIDGE = ("Service", "events.amazonaws.com")
OWN_RULE = {
    "aws:SourceAccount": ACCOUNT,
    "aws:SourceArn": f"arn:aws:events:{REGION}:{ACCOUNT}:rule/x",
}
TLS = {"aws:SecureTransport": "true"}


def send(context: dict, principal: tuple[str, str] = EVENTBRIDGE) -> bool:
    request = Request("sqs:SendMessage", QUEUE, context, principal)
    return evaluate(interruption_queue_policy(QUEUE), request)


def test_queue_takes_eventbridge_sends_of_its_own_accounts_rules_only():
    assert send({**OWN_RULE, **TLS})
    other_account = {
        "aws:SourceAccount": "999999999999",
        "aws:SourceArn": f"arn:aws:events:{REGION}:999999999999:rule/x",
    }
    assert not send({**other_account, **TLS})
    other_region = {**OWN_RULE, "aws:SourceArn": f"arn:aws:events:eu-west-1:{ACCOUNT}:rule/x"}
    assert not send({**other_region, **TLS})
    assert not send(TLS)  # no source: not a rule of this account
    assert not send({**OWN_RULE, **TLS}, ("Service", "sqs.amazonaws.com"))


def test_queue_refuses_everything_without_tls():
    assert not send({**OWN_RULE, "aws:SecureTransport": "false"})
    deny = interruption_queue_policy(QUEUE)["Statement"][-1]
    assert (deny["Sid"], deny["Effect"], deny["Action"]) == ("DenyHTTP", "Deny", "sqs:*")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_queue_policy_names_a_bad_queue_arn():
    with pytest.raises(ValueError, match="'demo' is not valid"):
        interruption_queue_policy("demo")


# -- joiner render iam-policy ------------------------------------------------------------------

RENDER = [
    "render",
    "iam-policy",
    "--cluster-name",
    CLUSTER,
    "--region",
    REGION,
    "--account-id",
    ACCOUNT,
    "--node-role-arn",
    NODE_ROLE,
]


def test_render_prints_the_policy_json(capsys):
    assert main([*RENDER, "--queue-arn", QUEUE]) == 0
    assert json.loads(capsys.readouterr().out) == controller_policy(PARAMS)


def test_render_bad_input_names_the_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*RENDER, "--partition", "gcp"])
    assert exit_info.value.code == 2
    assert "argument --partition: 'gcp' is not valid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["render", "iam-policy", "--region", REGION])
    assert "--cluster-name" in capsys.readouterr().err
