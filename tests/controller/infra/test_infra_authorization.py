"""What the audit asks IAM for a call (joiner.infra.authorization) and how the evaluator
answers (joiner.infra.policyeval), on the edges the AWS tests do not reach."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from joiner.infra.authorization import Call, LaunchTemplateFacts, call_requests
from joiner.infra.policyeval import Request, allowed

ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/node"
OWNED = {"kubernetes.io/cluster/demo": "owned", "karpenter.sh/nodepool": "default"}


class Facts:
    """The account as the audit would read it: one template and its profile's role."""

    def instance_tags(self, instance_id: str) -> Mapping[str, str]:
        return OWNED

    def launch_template(self, name_or_id: str) -> LaunchTemplateFacts | None:
        reservations = {"joiner/demo/abc": None, "joiner/demo/reserved": "cr-1"}
        if name_or_id not in reservations:
            return None
        return LaunchTemplateFacts(
            "lt-1",
            OWNED,
            "ami-1",
            ["sg-1"],
            "demo_profile",
            {"network-interface": OWNED},
            reservations[name_or_id],
        )

    def instance_profile(self, name: str) -> tuple[Mapping[str, str], list[str]] | None:
        return (OWNED, [ROLE]) if name == "demo_profile" else None

    def role_arn(self, name: str) -> str:
        return f"arn:aws:iam::{ACCOUNT}:role/{name}"


def call(service: str, operation: str, **params: object) -> Call:
    return Call(service, operation, params, "us-west-2", ACCOUNT)


def test_an_operation_not_modelled_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^ec2:RunInstances is not modelled"):
        call_requests(call("ec2", "RunInstances"), Facts())


def test_every_describe_is_a_regional_read() -> None:
    (request,) = call_requests(call("ec2", "DescribeVpcs"), Facts())
    assert request == Request("ec2:DescribeVpcs", "*", {"aws:RequestedRegion": "us-west-2"})


def test_a_launch_into_a_capacity_reservation_references_it() -> None:
    def fleet(template: str) -> set[tuple[str, str]]:
        launch = call(
            "ec2",
            "CreateFleet",
            TargetCapacitySpecification={"DefaultTargetCapacityType": "on-demand"},
            LaunchTemplateConfigs=[
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": template},
                    "Overrides": [{"SubnetId": "subnet-1", "InstanceType": "m5.large"}],
                }
            ],
        )
        return {(r.action, r.resource) for r in call_requests(launch, Facts())}

    reservation = f"arn:aws:ec2:us-west-2:{ACCOUNT}:capacity-reservation/cr-1"
    for action in ("ec2:CreateFleet", "ec2:RunInstances"):
        assert (action, reservation) in fleet("joiner/demo/reserved")
    assert not any("capacity-reservation" in r for _, r in fleet("joiner/demo/abc"))


def test_a_fleet_launch_needs_run_instances_tags_and_the_node_role() -> None:
    fleet = call(
        "ec2",
        "CreateFleet",
        TargetCapacitySpecification={"DefaultTargetCapacityType": "spot"},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "joiner/demo/abc"},
                "Overrides": [{"SubnetId": "subnet-1", "InstanceType": "m5.large"}],
            }
        ],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "a", "Value": "b"}]}],
    )
    requests = call_requests(fleet, Facts())
    pairs = {(r.action, r.resource) for r in requests}
    arn = "arn:aws:ec2:us-west-2:{}:{}"
    for action in ("ec2:CreateFleet", "ec2:RunInstances"):
        assert (action, arn.format(ACCOUNT, "launch-template/lt-1")) in pairs
        assert (action, arn.format("", "image/ami-1")) in pairs
        assert (action, arn.format(ACCOUNT, "subnet/subnet-1")) in pairs
        assert (action, arn.format(ACCOUNT, "security-group/sg-1")) in pairs
        assert (action, arn.format(ACCOUNT, "spot-instances-request/*")) in pairs
    assert ("iam:PassRole", ROLE) in pairs
    instance = next(
        r for r in requests if r.action == "ec2:CreateTags" and "instance/" in r.resource
    )
    assert instance.context["ec2:CreateAction"] == "RunInstances"
    assert instance.context["aws:RequestTag/a"] == "b"
    interface = next(
        r
        for r in requests
        if r.action == "ec2:RunInstances" and r.resource.endswith("network-interface/*")
    )
    assert interface.context["aws:RequestTag/karpenter.sh/nodepool"] == "default"


@pytest.mark.parametrize(
    ("name", "arn"),
    [
        ("/aws/service/eks/x", "arn:aws:ssm:us-west-2::parameter/aws/service/eks/x"),
        ("/team/ami", f"arn:aws:ssm:us-west-2:{ACCOUNT}:parameter/team/ami"),
        ("team/ami", f"arn:aws:ssm:us-west-2:{ACCOUNT}:parameter/team/ami"),
    ],
)
def test_parameters_are_public_or_the_accounts(name: str, arn: str) -> None:
    (request,) = call_requests(call("ssm", "GetParameter", Name=name), Facts())
    assert request.resource == arn


def test_batch_deletes_are_authorized_as_delete_message() -> None:
    url = f"https://sqs.us-west-2.amazonaws.com/{ACCOUNT}/demo"
    (request,) = call_requests(call("sqs", "DeleteMessageBatch", QueueUrl=url), Facts())
    assert (request.action, request.resource) == (
        "sqs:DeleteMessage",
        f"arn:aws:sqs:us-west-2:{ACCOUNT}:demo",
    )


def test_an_unknown_condition_operator_is_an_error() -> None:
    policy = {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "ec2:DescribeVpcs",
                "Resource": "*",
                "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": "3600"}},
            }
        ]
    }
    with pytest.raises(ValueError, match="'NumericLessThan' is not known"):
        allowed(policy, Request("ec2:DescribeVpcs", "*"))


def test_deny_wins_and_nothing_is_allowed_by_default() -> None:
    allow = {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}
    deny = {"Effect": "Deny", "Action": "sqs:DeleteQueue", "Resource": "*"}
    policy = {"Statement": [allow, deny]}
    assert allowed(policy, Request("sqs:ReceiveMessage", "arn:aws:sqs:us-west-2:1:q"))
    assert not allowed(policy, Request("sqs:DeleteQueue", "arn:aws:sqs:us-west-2:1:q"))
    assert not allowed(policy, Request("ec2:DescribeVpcs", "*"))
