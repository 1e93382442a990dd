"""EKS API endpoint exposure and secrets encryption."""

import pytest
from joiner_policies.eks import (
    AWS_EKS_CLUSTER,
    PULUMI_EKS_CLUSTER,
    eks_public_endpoint_restricted,
    eks_secrets_encryption,
)
from policy_calls import check
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE


def world_open(blocks: str, where: str = "", unset: bool = False) -> str:
    return (
        f"the public API server endpoint is reachable from {blocks}"
        f"{f' ({where}publicAccessCidrs not set)' if unset else ''}: set {where}publicAccessCidrs "
        f"to your own ranges, turn {where}endpointPublicAccess off, or list the ranges in "
        "allowedPublicAccessCidrs"
    )


def aws_cluster(**vpc):
    return {"name": "demo", "roleArn": "arn:aws:iam::1:role/eks", "vpcConfig": vpc}


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        (AWS_EKS_CLUSTER, aws_cluster(endpointPublicAccess=False)),
        (AWS_EKS_CLUSTER, aws_cluster(publicAccessCidrs=["203.0.113.0/24"])),
        (PULUMI_EKS_CLUSTER, {"endpointPublicAccess": False}),
        (PULUMI_EKS_CLUSTER, {"publicAccessCidrs": ["198.51.100.7/32", "2001:db8::/32"]}),
    ],
)
def test_private_or_restricted_endpoints_pass(resource_type, props):
    assert check(eks_public_endpoint_restricted, resource_type, props) == []


def test_the_default_endpoint_is_open_to_the_world():
    assert check(eks_public_endpoint_restricted, AWS_EKS_CLUSTER, aws_cluster()) == [
        world_open("0.0.0.0/0", "vpcConfig.", unset=True)
    ]
    props = {"endpointPublicAccess": True, "name": "demo"}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, props) == [
        world_open("0.0.0.0/0", unset=True)
    ]


def test_world_open_ranges_are_reported():
    props = {"publicAccessCidrs": ["10.0.0.0/8", "::/0"]}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, props) == [world_open("::/0")]


def test_configured_ranges_bound_the_endpoint():
    config = {"allowedPublicAccessCidrs": ["203.0.113.0/24"]}
    inside = {"publicAccessCidrs": ["203.0.113.128/25"]}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, inside, config) == []
    outside = {"publicAccessCidrs": ["203.0.113.0/24", "198.51.100.0/24"]}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, outside, config) == [
        world_open("198.51.100.0/24")
    ]
    # Allowing the world explicitly accepts the EKS default.
    everyone = {"allowedPublicAccessCidrs": ["0.0.0.0/0"]}
    assert check(eks_public_endpoint_restricted, AWS_EKS_CLUSTER, aws_cluster(), everyone) == []


def test_bad_cidrs_are_named():
    config = {"allowedPublicAccessCidrs": ["10.0.0/33"]}
    props = {"publicAccessCidrs": ["somewhere"]}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, props, config) == [
        "config allowedPublicAccessCidrs: '10.0.0/33' is not a CIDR block",
        "publicAccessCidrs: 'somewhere' is not a CIDR block",
    ]


ADVICE = (
    "Kubernetes secrets are not envelope-encrypted with a KMS key you control: set "
    "encryptionConfig (resources: [secrets], provider.keyArn) or encryptionConfigKeyArn"
)
KEY = "arn:aws:kms:us-west-2:123456789012:key/1"


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        (
            AWS_EKS_CLUSTER,
            {"encryptionConfig": {"resources": ["secrets"], "provider": {"keyArn": KEY}}},
        ),
        (
            AWS_EKS_CLUSTER,
            {"encryptionConfig": [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]},
        ),
        (PULUMI_EKS_CLUSTER, {"encryptionConfigKeyArn": KEY}),
        (PULUMI_EKS_CLUSTER, {"encryptionConfigKeyArn": UNKNOWN_STRING_VALUE}),
    ],
)
def test_clusters_with_secrets_encryption_pass(resource_type, props):
    assert check(eks_secrets_encryption, resource_type, props) == []


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        (AWS_EKS_CLUSTER, {}),
        (AWS_EKS_CLUSTER, {"encryptionConfig": {"resources": [], "provider": {"keyArn": KEY}}}),
        (AWS_EKS_CLUSTER, {"encryptionConfig": {"resources": ["secrets"], "provider": {}}}),
        (PULUMI_EKS_CLUSTER, {"name": "demo"}),
    ],
)
def test_clusters_without_secrets_encryption_get_advice(resource_type, props):
    assert check(eks_secrets_encryption, resource_type, props) == [ADVICE]
    assert eks_secrets_encryption.enforcement_level == EnforcementLevel.ADVISORY


def test_other_resources_are_not_clusters():
    assert check(eks_secrets_encryption, "aws:eks/nodeGroup:NodeGroup", {}) == []
    assert check(eks_public_endpoint_restricted, "aws:eks/nodeGroup:NodeGroup", {}) == []
