"""Cluster (new cluster) under mocks: network, EKS with OIDC, the system node group, and the
Autoscaler wired to the cluster's OIDC provider."""

import json
import re

import pulumi
import pytest
from pulumi_harness import (
    ACCOUNT,
    CLUSTER_ENDPOINT,
    CLUSTER_SECURITY_GROUP,
    OIDC_ISSUER,
    OIDC_PROVIDER_ARN,
    REGION,
    component_outputs,
)
from pulumi_joiner import Cluster
from pulumi_joiner.cluster import subnet_cidrs

OFFICE = "203.0.113.0/24"
CREATED_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/joiner-secrets-id"
GIVEN_KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def cluster(args):
    given = {
        "cluster_name": "demo",
        "image": "registry.example/joiner:1",
        "public_access_cidrs": [OFFICE],
        **args,
    }
    return component_outputs(lambda: Cluster("joiner", given))


@pytest.fixture(scope="module")
def program():
    from pulumi_harness import run_program

    return run_program(cluster({}))


def test_network_is_tagged_for_discovery(program):
    vpc = program.one("aws:ec2/vpc:Vpc")
    assert vpc.inputs["cidrBlock"] == "10.0.0.0/16"
    subnets = program.of_type("aws:ec2/subnet:Subnet")
    # registered as their zones resolve, in no fixed order: read them by zone
    by_zone = sorted(subnets, key=lambda s: s.inputs["availabilityZone"])
    private = [s for s in by_zone if "private" in s.name]
    public = [s for s in by_zone if "public" in s.name]
    assert [s.inputs["cidrBlock"] for s in private] == ["10.0.0.0/18", "10.0.64.0/18"]
    assert [s.inputs["availabilityZone"] for s in private] == ["us-west-2a", "us-west-2b"]
    assert all(s.inputs["tags"]["karpenter.sh/discovery"] == "demo" for s in private)
    assert all("karpenter.sh/discovery" not in s.inputs["tags"] for s in public)
    assert all(s.inputs["tags"]["kubernetes.io/role/elb"] == "1" for s in public)
    assert len(program.of_type("aws:ec2/natGateway:NatGateway")) == 1
    assert len(program.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation")) == 4
    (sg_tag,) = program.of_type("aws:ec2/tag:Tag")
    assert (sg_tag.inputs["resourceId"], sg_tag.inputs["value"]) == (CLUSTER_SECURITY_GROUP, "demo")


def test_eks_cluster_with_oidc(program):
    eks = program.one("eks:index:Cluster")
    assert eks.inputs["name"] == "demo"
    assert eks.inputs["createOidcProvider"] is True
    assert eks.inputs["skipDefaultNodeGroup"] is True
    assert eks.inputs["version"] == "1.33"
    assert len(eks.inputs["privateSubnetIds"]) == 2


def test_system_node_group(program):
    group = program.one("aws:eks/nodeGroup:NodeGroup")
    assert group.inputs["capacityType"] == "ON_DEMAND"
    assert group.inputs["labels"] == {"joiner.sh/system-node": "true"}
    assert group.inputs["taints"] == [
        {"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}
    ]
    assert group.inputs["scalingConfig"] == {"desiredSize": 2, "minSize": 2, "maxSize": 3}
    assert group.inputs["clusterName"] == "demo"
    eks = program.one("eks:index:Cluster")
    assert program.depends_on(group, eks)
    # The system role joins through the managed node group's own access entry.
    (entry,) = program.of_type("aws:eks/accessEntry:AccessEntry")
    assert "joiner-joiner-node" in entry.name


def test_autoscaler_uses_the_clusters_oidc_provider(program):
    trust_policies = [
        json.loads(r.inputs["assumeRolePolicy"]) for r in program.of_type("aws:iam/role:Role")
    ]
    irsa = [t for t in trust_policies if "Federated" in t["Statement"][0]["Principal"]]
    (trust,) = irsa
    assert trust["Statement"][0]["Principal"]["Federated"] == OIDC_PROVIDER_ARN
    assert f"{OIDC_ISSUER}:sub" in trust["Statement"][0]["Condition"]["StringEquals"]
    controller_role = program.one("joiner:index:ControllerRole")
    assert program.ancestors(controller_role)[:2] == [
        "joiner:index:Autoscaler",
        "joiner:index:Cluster",
    ]
    # The controller is deployed once the system nodes it runs on exist.
    group = program.one("aws:eks/nodeGroup:NodeGroup")
    assert program.depends_on(program.one("kubernetes:apps/v1:Deployment"), group)
    provider = program.one("pulumi:providers:kubernetes")
    assert (
        json.loads(provider.inputs["kubeconfig"])["clusters"][0]["cluster"]["server"]
        == CLUSTER_ENDPOINT
    )


def test_outputs(program):
    outputs = program.outputs
    assert outputs["cluster_name"] == "demo"
    assert json.loads(outputs["kubeconfig"])["clusters"][0]["cluster"]["server"] == CLUSTER_ENDPOINT
    assert (
        outputs["cluster_endpoint"],
        outputs["oidc_provider_arn"],
        outputs["oidc_provider_url"],
    ) == (
        CLUSTER_ENDPOINT,
        OIDC_PROVIDER_ARN,
        f"https://{OIDC_ISSUER}",
    )
    assert outputs["private_subnet_ids"] == ["joiner-private-0-id", "joiner-private-1-id"]
    assert (outputs["queue_name"], outputs["namespace"]) == ("demo", "karpenter")


def test_given_subnets_are_tagged_and_no_vpc_is_created(run):
    program = run(cluster({"vpc_id": "vpc-1", "private_subnet_ids": ["subnet-a", "subnet-b"]}))
    assert not program.of_type("aws:ec2/vpc:Vpc")
    tagged = sorted(t.inputs["resourceId"] for t in program.of_type("aws:ec2/tag:Tag"))
    assert tagged == [CLUSTER_SECURITY_GROUP, "subnet-a", "subnet-b"]
    assert program.one("eks:index:Cluster").inputs["vpcId"] == "vpc-1"


def test_subnet_cidrs():
    assert subnet_cidrs("c", "10.1.0.0/16", 3) == (
        ["10.1.0.0/18", "10.1.64.0/18", "10.1.128.0/18"],
        ["10.1.192.0/20", "10.1.208.0/20", "10.1.224.0/20"],
    )


def test_public_endpoint_admits_only_the_given_ranges(program):
    eks = program.one("eks:index:Cluster")
    assert (
        eks.inputs["endpointPublicAccess"],
        eks.inputs["endpointPrivateAccess"],
        eks.inputs["publicAccessCidrs"],
    ) == (True, True, [OFFICE])


def test_ranges_known_only_at_deployment_are_passed_on(run):
    vpn = pulumi.Output.from_input("198.51.100.0/24")
    program = run(cluster({"public_access_cidrs": [OFFICE, vpn]}))
    assert program.one("eks:index:Cluster").inputs["publicAccessCidrs"] == [
        OFFICE,
        "198.51.100.0/24",
    ]


def test_private_endpoint_only(run):
    program = run(cluster({"endpoint_public_access": False, "public_access_cidrs": None}))
    eks = program.one("eks:index:Cluster")
    assert (eks.inputs["endpointPublicAccess"], eks.inputs["endpointPrivateAccess"]) == (
        False,
        True,
    )
    assert "publicAccessCidrs" not in eks.inputs


def test_secrets_are_encrypted_with_a_created_key_by_default(run):
    program = run(cluster({"tags": {"team": "platform"}}))
    key = program.one("aws:kms/key:Key")
    assert key.inputs == {
        "description": "Envelope encryption of Kubernetes secrets of EKS cluster demo",
        "enableKeyRotation": True,
        "tags": {"team": "platform"},
    }
    assert program.ancestors(key) == ["joiner:index:Cluster"]
    eks = program.one("eks:index:Cluster")
    assert eks.inputs["encryptionConfigKeyArn"] == CREATED_KEY_ARN
    assert program.depends_on(eks, key)
    assert program.outputs["secrets_encryption_key_arn"] == CREATED_KEY_ARN


def test_secrets_are_encrypted_with_a_given_key(run):
    program = run(cluster({"secrets_encryption_key_arn": GIVEN_KEY_ARN}))
    assert not program.of_type("aws:kms/key:Key")
    assert program.one("eks:index:Cluster").inputs["encryptionConfigKeyArn"] == GIVEN_KEY_ARN
    assert program.outputs["secrets_encryption_key_arn"] == GIVEN_KEY_ARN


def test_secrets_encryption_turned_off(run):
    program = run(cluster({"create_secrets_encryption_key": False}))
    assert not program.of_type("aws:kms/key:Key")
    assert "encryptionConfigKeyArn" not in program.one("eks:index:Cluster").inputs
    assert program.outputs["secrets_encryption_key_arn"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"cluster_name": ""}, "Cluster 'joiner': argument 'cluster_name' is required"),
        ({"vpc_cidr": "10.0.0.0/33"}, "argument 'vpc_cidr' is invalid"),
        ({"vpc_cidr": "10.0.0.0/24"}, "argument 'vpc_cidr' must be an IPv4 block of /20 or larger"),
        ({"availability_zone_count": 4}, "argument 'availability_zone_count' must be 1-3"),
        ({"vpc_id": "vpc-1"}, "argument 'private_subnet_ids' is required with 'vpc_id'"),
        ({"system_node_count": 0}, "argument 'system_node_count' must be >= 1"),
        (
            {"public_access_cidrs": None},
            "Cluster 'joiner': argument 'public_access_cidrs' is required while"
            " 'endpoint_public_access' is true (the EKS default would open the API server to"
            " 0.0.0.0/0): list the IPv4 ranges that run Pulumi and kubectl, e.g. your address"
            " as a /32 (curl -s https://checkip.amazonaws.com), or set 'endpoint_public_access'"
            " to false and deploy from inside the VPC",
        ),
        (
            {"public_access_cidrs": [], "endpoint_public_access": True},
            "Cluster 'joiner': argument 'public_access_cidrs' is required while"
            " 'endpoint_public_access' is true",
        ),
        (
            {"public_access_cidrs": OFFICE},
            "Cluster 'joiner': argument 'public_access_cidrs' must be a list of CIDR blocks,"
            " e.g. ['203.0.113.7/32']",
        ),
        (
            {"public_access_cidrs": ["203.0.113.7/24"]},
            "Cluster 'joiner': argument 'public_access_cidrs': '203.0.113.7/24' is not a CIDR"
            " block: 203.0.113.7/24 has host bits set",
        ),
        (
            {"public_access_cidrs": ["203.0.113.7"]},
            "Cluster 'joiner': argument 'public_access_cidrs': '203.0.113.7' is not a CIDR"
            " block (e.g. 203.0.113.7/32)",
        ),
        (
            {"public_access_cidrs": ["2001:db8::/32"]},
            "Cluster 'joiner': argument 'public_access_cidrs': '2001:db8::/32' is not an IPv4"
            " range",
        ),
        (
            {"endpoint_public_access": False},
            "Cluster 'joiner': argument 'public_access_cidrs' needs a public endpoint, but"
            " 'endpoint_public_access' is false: remove one of them",
        ),
        (
            {"secrets_encryption_key_arn": "1234abcd-12ab-34cd-56ef-1234567890ab"},
            "Cluster 'joiner': argument 'secrets_encryption_key_arn' must be a KMS key or alias"
            " ARN (arn:aws:kms:<region>:<account>:key/<id>), got"
            " '1234abcd-12ab-34cd-56ef-1234567890ab'",
        ),
        (
            {"secrets_encryption_key_arn": GIVEN_KEY_ARN, "create_secrets_encryption_key": True},
            "Cluster 'joiner': arguments 'secrets_encryption_key_arn' and"
            " 'create_secrets_encryption_key' exclude each other: give a key or have one created",
        ),
    ],
)
def test_bad_input_names_the_argument(run, args, message):
    with pytest.raises(pulumi.RunError, match=re.escape(message)):
        run(cluster(args), preview=True)


def test_an_alias_arn_is_a_key(run):
    alias = f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/eks-secrets"
    program = run(cluster({"secrets_encryption_key_arn": alias}))
    assert program.one("eks:index:Cluster").inputs["encryptionConfigKeyArn"] == alias
