"""ControllerRole under mocks: trust policy, policy statements, Pod Identity, bad input."""

import json

import pulumi
import pytest
from joiner.infra.iam import ControllerPolicyParams, controller_policy
from pulumi_harness import ACCOUNT, OIDC_ISSUER, OIDC_PROVIDER_ARN, REGION, component_outputs
from pulumi_joiner import ControllerRole

NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/demo-node"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:demo"
IRSA = {
    "cluster_name": "demo",
    "node_role_arn": NODE_ROLE,
    "queue_arn": QUEUE,
    "oidc_provider_arn": OIDC_PROVIDER_ARN,
    "oidc_provider_url": f"https://{OIDC_ISSUER}",
}


def build(args):
    return component_outputs(lambda: ControllerRole("ctl", args))


def test_irsa_role_trusts_only_the_service_account(run):
    program = run(build(IRSA))
    role = program.one("aws:iam/role:Role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Federated": OIDC_PROVIDER_ARN}
    assert statement["Condition"]["StringEquals"] == {
        f"{OIDC_ISSUER}:sub": "system:serviceaccount:karpenter:karpenter",
        f"{OIDC_ISSUER}:aud": "sts.amazonaws.com",
    }
    assert not program.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert program.ancestors(role) == ["joiner:index:ControllerRole"]


def test_policy_is_the_pure_document_for_the_provider_context(run):
    program = run(build(IRSA))
    policy = program.one("aws:iam/policy:Policy")
    expected = controller_policy(
        ControllerPolicyParams("demo", REGION, ACCOUNT, NODE_ROLE, QUEUE, "aws")
    )
    assert json.loads(policy.inputs["policy"]) == expected
    assert json.loads(program.outputs["policy_json"]) == expected
    attachment = program.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachment.inputs["role"] == "ctl-role"
    assert attachment.inputs["policyArn"] == f"arn:aws:iam::{ACCOUNT}:policy/ctl-policy"
    assert program.outputs["role_arn"] == f"arn:aws:iam::{ACCOUNT}:role/ctl-role"
    assert program.outputs["policy_arn"] == f"arn:aws:iam::{ACCOUNT}:policy/ctl-policy"
    assert program.outputs["uses_pod_identity"] is False


def test_explicit_region_account_and_custom_service_account(run):
    args = {
        **IRSA,
        "region": "eu-west-1",
        "account_id": "999999999999",
        "namespace": "ops",
        "service_account": "joiner",
    }
    program = run(build(args))
    statements = json.loads(program.outputs["policy_json"])["Statement"]
    describe = next(s for s in statements if s["Sid"] == "AllowAPIServerEndpointDiscovery")
    assert describe["Resource"] == ["arn:aws:eks:eu-west-1:999999999999:cluster/demo"]
    trust = json.loads(program.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    assert (
        trust["Statement"][0]["Condition"]["StringEquals"][f"{OIDC_ISSUER}:sub"]
        == "system:serviceaccount:ops:joiner"
    )


def test_pod_identity_association_instead_of_irsa(run):
    args = {"cluster_name": "demo", "node_role_arn": NODE_ROLE, "use_pod_identity": True}
    program = run(build(args))
    trust = json.loads(program.one("aws:iam/role:Role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    association = program.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association.inputs["clusterName"] == "demo"
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == (
        "karpenter",
        "karpenter",
    )
    assert association.inputs["roleArn"] == program.outputs["role_arn"]
    assert program.outputs["uses_pod_identity"] is True
    assert not [
        s
        for s in json.loads(program.outputs["policy_json"])["Statement"]
        if "sqs:ReceiveMessage" in s["Action"]
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({**IRSA, "cluster_name": ""}, "ControllerRole 'ctl': argument 'cluster_name' is required"),
        (
            {k: v for k, v in IRSA.items() if k != "node_role_arn"},
            "argument 'node_role_arn' is required",
        ),
        (
            {k: v for k, v in IRSA.items() if k != "oidc_provider_url"},
            "argument 'oidc_provider_url' is required for IRSA",
        ),
    ],
)
def test_bad_input_names_the_argument(run, args, message):
    with pytest.raises(pulumi.RunError, match=message):
        run(build(args), preview=True)
