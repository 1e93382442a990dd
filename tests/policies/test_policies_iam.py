"""IAM policies: least-privilege documents pass, each weakening is reported exactly."""

import json

import pytest
from joiner.infra.iam import (
    ControllerPolicyParams,
    controller_policy,
    irsa_trust_policy,
    node_role_trust_policy,
)
from joiner_policies.iam import (
    iam_ec2_tag_conditions,
    iam_irsa_trust_pinned,
    iam_no_wildcard_actions,
    iam_passrole_scoped,
)
from policy_calls import check

POLICY = "aws:iam/policy:Policy"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE = "aws:iam/role:Role"
NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/demo-node"
PROVIDER = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/ABC"
ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/ABC"
PERMISSION_POLICIES = [iam_no_wildcard_actions, iam_ec2_tag_conditions, iam_passrole_scoped]


def joiner_controller_policy() -> dict:
    return controller_policy(
        ControllerPolicyParams(
            cluster_name="demo",
            region="us-west-2",
            account_id="123456789012",
            node_role_arn=NODE_ROLE_ARN,
            queue_arn="arn:aws:sqs:us-west-2:123456789012:demo",
        )
    )


def doc(*statements: dict) -> dict:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def allow(action, resource="*", **extra) -> dict:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


@pytest.mark.parametrize("policy", PERMISSION_POLICIES, ids=lambda p: p.name)
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "object"])
def test_the_joiner_controller_policy_passes(policy, as_json):
    document = joiner_controller_policy()
    props = {"policy": json.dumps(document) if as_json else document}
    assert check(policy, POLICY, props) == []


def test_wildcard_actions_are_reported_per_statement():
    document = doc(
        allow("*"),
        allow(["ec2:DescribeInstances", "s3:*"], Sid="Storage"),
        allow("ec2:Describe*"),
        {"Effect": "Deny", "Action": "*", "Resource": "*"},
    )
    assert check(iam_no_wildcard_actions, ROLE_POLICY, {"policy": json.dumps(document)}) == [
        "policy: statement 0 allows '*'; name the actions it needs instead",
        "policy: statement 1 (Storage) allows 's3:*'; name the actions it needs instead",
    ]


def test_a_single_statement_object_and_not_action_are_understood():
    document = {"Statement": {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}}
    assert check(iam_no_wildcard_actions, POLICY, {"policy": document}) == [
        "policy: statement 0 is an Allow with NotAction ['iam:*'], which grants every other "
        "action; list the actions it needs instead"
    ]


def test_role_inline_policies_are_checked():
    props = {
        "assumeRolePolicy": json.dumps(node_role_trust_policy()),
        "inlinePolicies": [
            {"name": "ok", "policy": json.dumps(doc(allow("sqs:ReceiveMessage")))},
            {"name": "bad", "policy": json.dumps(doc(allow("ec2:*")))},
        ],
    }
    assert check(iam_no_wildcard_actions, ROLE, props) == [
        "inlinePolicies[1]: statement 0 allows 'ec2:*'; name the actions it needs instead"
    ]


def test_unreadable_documents_are_reported_once():
    assert check(iam_no_wildcard_actions, POLICY, {"policy": "{not json"}) == [
        "policy: the policy document is not valid JSON "
        "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
    ]
    assert check(iam_no_wildcard_actions, POLICY, {"policy": {"Version": "2012-10-17"}}) == [
        "policy: the policy document has no Statement"
    ]
    assert check(iam_ec2_tag_conditions, POLICY, {"policy": "{not json"}) == []
    assert check(iam_passrole_scoped, POLICY, {"policy": "[]"}) == []


def test_other_resource_types_are_not_iam_documents():
    assert check(iam_no_wildcard_actions, "aws:sqs/queue:Queue", {"policy": "{}"}) == []


@pytest.mark.parametrize(
    ("statement", "granted"),
    [
        (allow("ec2:TerminateInstances"), "ec2:TerminateInstances"),
        (allow(["ec2:Delete*"]), "ec2:DeleteLaunchTemplate"),
        (allow("EC2:createtags", "arn:aws:ec2:*:*:instance/*"), "ec2:CreateTags"),
        (
            allow("ec2:RunInstances", "arn:aws:ec2:us-west-2:*:launch-template/*"),
            "ec2:RunInstances on launch templates",
        ),
        (allow(["ec2:CreateFleet"]), "ec2:CreateFleet on launch templates"),
        (
            {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"},
            "ec2:TerminateInstances, ec2:DeleteLaunchTemplate, ec2:CreateTags, "
            "ec2:RunInstances on launch templates, ec2:CreateFleet on launch templates",
        ),
    ],
)
def test_destructive_ec2_actions_without_a_tag_condition_are_reported(statement, granted):
    assert check(iam_ec2_tag_conditions, POLICY, {"policy": doc(statement)}) == [
        f"policy: statement 0 allows {granted} without an aws:ResourceTag/... or "
        "aws:RequestTag/... condition; scope it to the resources the workload owns"
    ]


@pytest.mark.parametrize(
    "statement",
    [
        allow("ec2:TerminateInstances", Condition={"StringEquals": {"aws:ResourceTag/team": "a"}}),
        allow("ec2:CreateTags", Condition={"StringLike": {"aws:RequestTag/owner": "*"}}),
        allow("ec2:RunInstances", Condition={"StringEquals": {"ec2:ResourceTag/env": "dev"}}),
        allow(["ec2:RunInstances", "ec2:CreateFleet"], "arn:aws:ec2:*:*:subnet/*"),
        {
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "NotResource": "arn:aws:ec2:*:*:launch-template/*",
        },
        {"Effect": "Deny", "Action": "ec2:TerminateInstances", "Resource": "*"},
    ],
)
def test_tag_scoped_or_unrelated_statements_pass(statement):
    assert check(iam_ec2_tag_conditions, POLICY, {"policy": doc(statement)}) == []


@pytest.mark.parametrize(
    "statement",
    [
        allow("iam:PassRole"),
        allow("iam:Pass*", "arn:aws:iam::123456789012:role/*"),
        allow(["iam:*"], "arn:aws:iam::*:*"),
        {"Effect": "Allow", "Action": "iam:PassRole", "NotResource": NODE_ROLE_ARN},
    ],
)
def test_passrole_on_any_role_is_reported(statement):
    assert check(iam_passrole_scoped, POLICY, {"policy": doc(statement)}) == [
        "policy: statement 0 allows iam:PassRole on any role; name the role ARNs that may be passed"
    ]


@pytest.mark.parametrize(
    "resource",
    [NODE_ROLE_ARN, "arn:aws:iam::123456789012:role/karpenter/*", ["arn:aws:iam::1:role/a"]],
)
def test_passrole_on_named_roles_passes(resource):
    assert (
        check(iam_passrole_scoped, POLICY, {"policy": doc(allow("iam:PassRole", resource))}) == []
    )


def test_the_joiner_irsa_trust_passes():
    trust = irsa_trust_policy(PROVIDER, f"https://{ISSUER}")
    assert check(iam_irsa_trust_pinned, ROLE, {"assumeRolePolicy": json.dumps(trust)}) == []
    assert check(iam_irsa_trust_pinned, ROLE, {"assumeRolePolicy": trust}) == []


def irsa(condition: dict | None) -> dict:
    statement = {
        "Effect": "Allow",
        "Principal": {"Federated": PROVIDER},
        "Action": "sts:AssumeRoleWithWebIdentity",
    }
    if condition is not None:
        statement["Condition"] = condition
    return doc(statement)


@pytest.mark.parametrize(
    ("condition", "missing"),
    [
        (None, f"{ISSUER}:sub and {ISSUER}:aud"),
        ({"StringEquals": {f"{ISSUER}:aud": "sts.amazonaws.com"}}, f"{ISSUER}:sub"),
        (
            {
                "StringLike": {f"{ISSUER}:sub": "system:serviceaccount:*"},
                "StringEquals": {f"{ISSUER}:aud": "sts.amazonaws.com"},
            },
            f"{ISSUER}:sub",
        ),
        (
            {"StringEquals": {f"{ISSUER}:sub": "system:serviceaccount:karpenter:karpenter"}},
            f"{ISSUER}:aud",
        ),
        (
            # Claims of another issuer do not pin this provider's tokens.
            {
                "StringEquals": {
                    "oidc.eks.us-east-1.amazonaws.com/id/OTHER:sub": "system:serviceaccount:a:b",
                    "oidc.eks.us-east-1.amazonaws.com/id/OTHER:aud": "sts.amazonaws.com",
                }
            },
            f"{ISSUER}:sub and {ISSUER}:aud",
        ),
    ],
)
def test_irsa_trust_without_pinned_claims_is_reported(condition, missing):
    assert check(iam_irsa_trust_pinned, ROLE, {"assumeRolePolicy": irsa(condition)}) == [
        f"assumeRolePolicy: statement 0 lets tokens of {PROVIDER} assume the role without "
        f"pinning {missing} (StringEquals); any service account of the cluster could assume it"
    ]


def test_irsa_sub_pinned_with_an_exact_string_like_passes():
    condition = {
        "StringLike": {f"{ISSUER.upper()}:SUB": "system:serviceaccount:karpenter:karpenter"},
        "stringequals": {f"{ISSUER}:aud": ["sts.amazonaws.com"]},
    }
    assert check(iam_irsa_trust_pinned, ROLE, {"assumeRolePolicy": irsa(condition)}) == []


def test_service_trusts_are_not_irsa():
    props = {"assumeRolePolicy": json.dumps(node_role_trust_policy())}
    assert check(iam_irsa_trust_pinned, ROLE, props) == []
    assert check(iam_irsa_trust_pinned, POLICY, {"policy": json.dumps(irsa(None))}) == []
