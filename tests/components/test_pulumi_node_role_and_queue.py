"""NodeRole and InterruptionQueue under mocks."""

import json

import pulumi
import pytest
from joiner.infra.events import INTERRUPTION_EVENT_PATTERNS
from pulumi_harness import ACCOUNT, REGION, component_outputs
from pulumi_joiner import InterruptionQueue, NodeRole

MANAGED = [
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
]


def node_role(args):
    return component_outputs(lambda: NodeRole("nodes", args))


def test_node_role_trusts_ec2_with_the_managed_policies_and_an_access_entry(run):
    program = run(node_role({"cluster_name": "demo"}))
    role = program.one("aws:iam/role:Role")
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }
    attachments = program.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert sorted(a.inputs["policyArn"] for a in attachments) == sorted(MANAGED)
    assert {a.inputs["role"] for a in attachments} == {"nodes-role"}
    entry = program.one("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["type"] == "EC2_LINUX"
    assert entry.inputs["clusterName"] == "demo"
    assert entry.inputs["principalArn"] == f"arn:aws:iam::{ACCOUNT}:role/nodes-role"
    assert not program.of_type("aws:iam/instanceProfile:InstanceProfile")
    assert program.outputs["instance_profile_name"] is None
    assert all(
        program.ancestors(r) == ["joiner:index:NodeRole"] for r in program.resources if r.custom
    )


def test_aws_auth_mode_returns_the_mapping_and_creates_no_access_entry(run):
    program = run(
        node_role(
            {
                "cluster_name": "demo",
                "access_mode": "aws_auth",
                "create_instance_profile": True,
                "partition": "aws-cn",
                "role_name": "n",
            }
        )
    )
    assert not program.of_type("aws:eks/accessEntry:AccessEntry")
    assert program.outputs["aws_auth_role_mapping"] == {
        "rolearn": f"arn:aws:iam::{ACCOUNT}:role/n",
        "username": "system:node:{{EC2PrivateDNSName}}",
        "groups": ["system:bootstrappers", "system:nodes"],
    }
    profile = program.one("aws:iam/instanceProfile:InstanceProfile")
    assert profile.inputs["role"] == "n"
    assert program.outputs["instance_profile_name"] == "nodes-profile"
    arns = [
        a.inputs["policyArn"]
        for a in program.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    ]
    assert all(a.startswith("arn:aws-cn:iam::aws:policy/") for a in arns)


def test_node_role_bad_access_mode(run):
    with pytest.raises(
        pulumi.RunError,
        match="NodeRole 'nodes': argument 'access_mode' must be one of access_entry, aws_auth",
    ):
        run(node_role({"cluster_name": "demo", "access_mode": "iam"}), preview=True)


def queue_program(args):
    return component_outputs(lambda: InterruptionQueue("irq", args))


def test_queue_settings_policy_and_rules(run):
    program = run(queue_program({"cluster_name": "demo", "tags": {"team": "infra"}}))
    queue = program.one("aws:sqs/queue:Queue")
    assert queue.inputs["name"] == "demo"
    assert queue.inputs["messageRetentionSeconds"] == 300
    assert queue.inputs["sqsManagedSseEnabled"] is True
    assert queue.inputs["tags"] == {"team": "infra"}
    arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:demo"
    assert program.outputs == {
        "queue_arn": arn,
        "queue_name": "demo",
        "queue_url": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/demo",
        "rule_names": [f"irq-{suffix}" for suffix in INTERRUPTION_EVENT_PATTERNS],
    }
    policy = json.loads(program.one("aws:sqs/queuePolicy:QueuePolicy").inputs["policy"])
    deny = next(s for s in policy["Statement"] if s["Sid"] == "DenyHTTP")
    assert (deny["Effect"], deny["Resource"], deny["Condition"]) == (
        "Deny",
        arn,
        {"Bool": {"aws:SecureTransport": "false"}},
    )
    patterns = sorted(
        (p["source"][0], p["detail-type"][0])
        for p in (
            json.loads(r.inputs["eventPattern"])
            for r in program.of_type("aws:cloudwatch/eventRule:EventRule")
        )
    )
    assert patterns == [
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.health", "AWS Health Event"),
    ]
    targets = program.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 5
    assert {t.inputs["arn"] for t in targets} == {arn}
    assert sorted(t.inputs["rule"] for t in targets) == sorted(program.outputs["rule_names"])


def test_queue_name_override_and_missing_cluster(run):
    program = run(queue_program({"cluster_name": "demo", "queue_name": "events"}))
    assert program.outputs["queue_name"] == "events"
    with pytest.raises(
        pulumi.RunError, match="InterruptionQueue 'irq': argument 'cluster_name' is required"
    ):
        run(queue_program({}), preview=True)
