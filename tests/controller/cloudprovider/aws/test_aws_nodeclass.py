"""EC2NodeClass status resolution against moto: subnets, security groups, AMIs,
instance profile, and bad input as NotReady conditions with messages."""

from __future__ import annotations

from typing import Any

import pytest
from aws_moto_seed import CLUSTER, CLUSTER_INFO_KWARGS, DISCOVERY, ROLE, Env, nodeclass_dict
from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.nodeclass import NodeClassResolver, is_ready

CLUSTER_INFO = ClusterInfo(**CLUSTER_INFO_KWARGS)


def resolve(env: Env, **spec: Any) -> tuple[EC2NodeClass, dict[str, Any]]:
    nodeclass = EC2NodeClass.from_dict(nodeclass_dict(**spec))
    resolver = NodeClassResolver(env.controller, FakeClock(), CLUSTER_INFO, "us-east-1")
    status = resolver.resolve(nodeclass)
    nodeclass.status = status
    return nodeclass, status


def condition(status: dict[str, Any], type_: str) -> tuple[str, str]:
    found = cond.get_condition(status["conditions"], type_)
    assert found is not None, type_
    return found["status"], found["message"]


def test_default_class_resolves_everything(env: Env) -> None:
    nodeclass, status = resolve(env)
    assert status["subnets"] == [
        {"id": i, "zone": z, "zoneID": zid}
        for i, z, zid in sorted(
            [
                (env.subnets["a-big"], "us-east-1a", "use1-az6"),
                (env.subnets["a-small"], "us-east-1a", "use1-az6"),
                (env.subnets["b"], "us-east-1b", "use1-az1"),
                (env.subnets["c"], "us-east-1c", "use1-az2"),
            ],
            key=lambda t: (t[1], t[0]),
        )
    ]
    assert status["securityGroups"] == [
        {"id": g, "name": "default"} for g in env.node_security_groups
    ]
    ids = [ami["id"] for ami in status["amis"]]
    assert ids == [
        env.amis[("al2023", "amd64", "nvidia")],
        env.amis[("al2023", "amd64", "standard")],
        env.amis[("al2023", "arm64", "standard")],
    ]
    assert status["amis"][0]["requirements"] == [
        {"key": wk.INSTANCE_GPU_MANUFACTURER, "operator": "In", "values": ["nvidia"]},
        {"key": wk.ARCH, "operator": "In", "values": ["amd64"]},
    ]
    assert status["amis"][1]["requirements"] == [
        {"key": wk.INSTANCE_GPU_MANUFACTURER, "operator": "NotIn", "values": ["nvidia"]},
        {"key": wk.ARCH, "operator": "In", "values": ["amd64"]},
    ]
    assert status["amis"][2]["requirements"] == [
        {"key": wk.ARCH, "operator": "In", "values": ["arm64"]}
    ]
    assert status["amis"][1]["name"] == "al2023-standard-amd64"
    for type_ in (
        "SubnetsReady",
        "SecurityGroupsReady",
        "AMIsReady",
        "InstanceProfileReady",
        "ValidationSucceeded",
        "Ready",
    ):
        assert condition(status, type_) == ("True", ""), type_
    assert is_ready(nodeclass)


def test_instance_profile_is_created_for_the_role_and_tagged(env: Env) -> None:
    _, status = resolve(env)
    profile = env.clients.iam.get_instance_profile(InstanceProfileName=status["instanceProfile"])
    assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == [ROLE]
    tags = profile["InstanceProfile"]["Tags"]
    assert {t["Key"]: t["Value"] for t in tags} == {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
        "topology.kubernetes.io/region": "us-east-1",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    assert status["instanceProfile"].startswith(f"{CLUSTER}_")
    _, again = resolve(env)  # idempotent
    assert again["instanceProfile"] == status["instanceProfile"]


def test_selectors_by_id_name_and_tags(env: Env) -> None:
    _, status = resolve(
        env,
        subnetSelectorTerms=[{"id": env.subnets["b"]}, {"tags": {"team": "other"}}],
        securityGroupSelectorTerms=[{"name": "other-nodes"}, {"id": env.node_security_groups[0]}],
        amiSelectorTerms=[
            {"name": "al2-standard-arm64"},
            {"id": env.amis[("bottlerocket", "amd64", "standard")]},
        ],
    )
    assert [s["id"] for s in status["subnets"]] == [env.subnets["b"], env.subnets["d-untagged"]]
    assert {g["id"] for g in status["securityGroups"]} == {
        env.node_security_groups[0],
        env.other_security_group,
    }
    assert {a["id"]: a["requirements"][0]["values"] for a in status["amis"]} == {
        env.amis[("al2", "arm64", "standard")]: ["arm64"],
        env.amis[("bottlerocket", "amd64", "standard")]: ["amd64"],
    }


def test_ssm_parameter_and_pinned_alias(env: Env) -> None:
    parameter = "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id"
    _, status = resolve(env, amiSelectorTerms=[{"ssmParameter": parameter}])
    assert [a["id"] for a in status["amis"]] == [env.amis[("bottlerocket", "arm64", "standard")]]
    _, pinned = resolve(env, amiSelectorTerms=[{"alias": "al2023@v20240807"}])
    assert [a["id"] for a in pinned["amis"]] == [env.amis[("al2023@pinned", "amd64", "standard")]]


def test_ssm_parameter_of_the_account_resolves_under_the_controller_policy(env: Env) -> None:
    """docs/aws.md promises any parameter a class names; the policy once granted only
    AWS's public ``/aws/service/*`` ones (every call here is checked against it)."""
    image = env.amis[("al2023", "amd64", "standard")]
    env.clients.ssm.put_parameter(Name="/team/golden-ami", Value=image, Type="String")
    _, status = resolve(env, amiSelectorTerms=[{"ssmParameter": "/team/golden-ami"}])
    assert [a["id"] for a in status["amis"]] == [image]
    assert condition(status, "AMIsReady") == ("True", "")


@pytest.mark.parametrize(
    ("spec", "failing", "message"),
    [
        (
            {"subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "nobody"}}]},
            "SubnetsReady",
            "no subnet matches spec.subnetSelectorTerms"
            " [{'tags': {'karpenter.sh/discovery': 'nobody'}}]",
        ),
        (
            {"securityGroupSelectorTerms": [{}]},
            "SecurityGroupsReady",
            "spec.securityGroupSelectorTerms[0] selects nothing: set one of id, name, tags",
        ),
        (
            {"amiSelectorTerms": [{"alias": "ubuntu@latest"}]},
            "AMIsReady",
            "spec.amiSelectorTerms[0].alias: unknown AMI family 'ubuntu'"
            " (want one of al2, al2023, bottlerocket)",
        ),
        (
            {"amiSelectorTerms": [{"alias": "al2023@v19990101"}]},
            "AMIsReady",
            "no AMI matches spec.amiSelectorTerms [{'alias': 'al2023@v19990101'}]",
        ),
        (
            {"amiSelectorTerms": [{"tags": ["not", "a", "map"]}]},
            "AMIsReady",
            "spec.amiSelectorTerms[0].tags must be a map of tag keys to values",
        ),
        (
            {"subnetSelectorTerms": ["subnet-1"]},
            "SubnetsReady",
            "spec.subnetSelectorTerms[0] must be a map, got 'subnet-1'",
        ),
        (
            {"role": "no-such-role"},
            "InstanceProfileReady",
            "spec.role: IAM role 'no-such-role' not found",
        ),
        (
            {"kubelet": {"maxPods": 0}},
            "ValidationSucceeded",
            "spec.kubelet.maxPods must be an integer >= 1, got 0",
        ),
        (
            {"tags": {"karpenter.sh/nodepool": "x"}},
            "ValidationSucceeded",
            "spec.tags: key 'karpenter.sh/nodepool' is reserved for the controller",
        ),
    ],
)
def test_bad_input_is_a_not_ready_condition(
    env: Env, spec: dict, failing: str, message: str
) -> None:
    nodeclass, status = resolve(env, **spec)
    assert condition(status, failing) == ("False", message)
    ready, ready_message = condition(status, "Ready")
    assert ready == "False"
    assert ready_message == f"{failing}: {message}"
    assert not is_ready(nodeclass)


def test_static_hash_ignores_selectors_and_follows_the_rest() -> None:
    base = EC2NodeClass.from_dict(nodeclass_dict())
    moved = EC2NodeClass.from_dict(nodeclass_dict(subnetSelectorTerms=[{"id": "subnet-1"}]))
    tagged = EC2NodeClass.from_dict(nodeclass_dict(tags={"team": "a"}))
    assert base.static_hash() == moved.static_hash()
    assert base.static_hash() != tagged.static_hash()
    assert DISCOVERY  # the fixture's selector is the discovery tag
