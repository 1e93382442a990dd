"""The teardown sweep against moto (an in-process AWS): it removes exactly what the
controller launched for this cluster, and nothing of other clusters or of other owners."""

import boto3
import pytest
from moto import mock_aws
from pulumi_joiner.teardown import _CleanupProvider, sweep_cluster

REGION = "us-west-2"
AMI = "ami-12c6146b"  # one of moto's built-in images


def owned_tags(cluster: str, extra: dict[str, str]) -> list[dict[str, str]]:
    tags = {f"kubernetes.io/cluster/{cluster}": "owned", "eks:eks-cluster-name": cluster, **extra}
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def launch(ec2, tags: list[dict[str, str]]) -> str:
    spec = [{"ResourceType": "instance", "Tags": tags}] if tags else []
    reservation = ec2.run_instances(
        ImageId=AMI, MinCount=1, MaxCount=1, InstanceType="m5.large", TagSpecifications=spec
    )
    return reservation["Instances"][0]["InstanceId"]


def template(ec2, name: str, tags: list[dict[str, str]]) -> None:
    ec2.create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={"ImageId": AMI},
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": tags}],
    )


def profile(iam, name: str, tags: list[dict[str, str]], role: str) -> None:
    iam.create_instance_profile(InstanceProfileName=name, Tags=tags)
    iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)


@pytest.fixture
def aws():
    with mock_aws():
        session = boto3.session.Session(
            region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
        )
        ec2, iam = session.client("ec2"), session.client("iam")
        iam.create_role(RoleName="nodes", AssumeRolePolicyDocument="{}")
        yield ec2, iam


def seed(ec2, iam) -> dict[str, str]:
    ids = {
        "ours": launch(ec2, owned_tags("demo", {"karpenter.sh/nodepool": "default"})),
        "ours2": launch(ec2, owned_tags("demo", {"karpenter.sh/nodepool": "batch"})),
        "other_cluster": launch(ec2, owned_tags("other", {"karpenter.sh/nodepool": "default"})),
        "system_node": launch(ec2, owned_tags("demo", {})),  # managed node group: no nodepool tag
        "untagged": launch(ec2, []),
    }
    template(ec2, "demo-lt", owned_tags("demo", {"karpenter.sh/nodepool": "default"}))
    template(ec2, "other-lt", owned_tags("other", {"karpenter.sh/nodepool": "default"}))
    profile(
        iam,
        "demo_profile",
        owned_tags("demo", {"karpenter.k8s.aws/ec2nodeclass": "default"}),
        "nodes",
    )
    profile(
        iam,
        "other_profile",
        owned_tags("other", {"karpenter.k8s.aws/ec2nodeclass": "default"}),
        "nodes",
    )
    profile(iam, "hand_made", owned_tags("demo", {}), "nodes")
    return ids


def states(ec2) -> dict[str, str]:
    reservations = ec2.describe_instances()["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in reservations for i in r["Instances"]}


def test_sweep_removes_only_what_the_controller_launched_for_the_cluster(aws):
    ec2, iam = aws
    ids = seed(ec2, iam)
    report = sweep_cluster(ec2, iam, "demo", waiter_delay=1)
    assert sorted(report.terminated_instances) == sorted([ids["ours"], ids["ours2"]])
    assert report.deleted_launch_templates == ["demo-lt"]
    assert report.deleted_instance_profiles == ["demo_profile"]
    after = states(ec2)
    assert after[ids["ours"]] == after[ids["ours2"]] == "terminated"
    assert {after[ids[k]] for k in ("other_cluster", "system_node", "untagged")} == {"running"}
    templates = [
        t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]
    ]
    assert templates == ["other-lt"]
    profiles = sorted(
        p["InstanceProfileName"] for p in iam.list_instance_profiles()["InstanceProfiles"]
    )
    assert profiles == ["hand_made", "other_profile"]
    # The node role can now be deleted: no profile of this cluster holds it any more.
    assert not [
        p
        for p in iam.list_instance_profiles_for_role(RoleName="nodes")["InstanceProfiles"]
        if p["InstanceProfileName"] == "demo_profile"
    ]


def test_a_second_sweep_finds_nothing(aws):
    ec2, iam = aws
    seed(ec2, iam)
    sweep_cluster(ec2, iam, "demo", waiter_delay=1)
    report = sweep_cluster(ec2, iam, "demo", waiter_delay=1)
    assert (
        report.terminated_instances,
        report.deleted_launch_templates,
        report.deleted_instance_profiles,
    ) == ([], [], [])


def test_the_dynamic_resource_sweeps_on_delete_only(aws, monkeypatch):
    ec2, iam = aws
    ids = seed(ec2, iam)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    provider = _CleanupProvider()
    props = {"cluster_name": "demo", "region": REGION}
    created = provider.create(props)
    assert created.id == "joiner-cleanup-demo"
    assert states(ec2)[ids["ours"]] == "running"
    provider.delete(created.id, props)
    assert states(ec2)[ids["ours"]] == "terminated"
    assert states(ec2)[ids["other_cluster"]] == "running"
