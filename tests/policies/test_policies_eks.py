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


def world_open(blocks: str, where: str = "", unset: bool = False, why: str = "") -> str:
    return (
        f"the public API server endpoint is reachable from {blocks}"
        f"{f' ({where}publicAccessCidrs not set)' if unset else ''}, "
        f"{why or 'more of the internet than a /16 (IPv4) or a /48 (IPv6)'}: set "
        f"{where}publicAccessCidrs to your own ranges, turn {where}endpointPublicAccess off, "
        "or list the ranges in allowedPublicAccessCidrs"
    )


OUTSIDE = "outside allowedPublicAccessCidrs"


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
        world_open("198.51.100.0/24", why=OUTSIDE)
    ]
    # Allowing the world explicitly accepts the EKS default.
    everyone = {"allowedPublicAccessCidrs": ["0.0.0.0/0"]}
    assert check(eks_public_endpoint_restricted, AWS_EKS_CLUSTER, aws_cluster(), everyone) == []


@pytest.mark.parametrize(
    ("cidrs", "reported"),
    [
        (["0.0.0.0/1", "128.0.0.0/1"], "0.0.0.0/1, 128.0.0.0/1"),  # the whole internet
        (["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"], None),
        (["3.0.0.0/9"], None),  # a cloud region: anyone with a credit card
        (["198.51.100.0/24", "1.0.0.0/17", "1.0.128.0/17", "1.1.0.0/24"], None),
        (["1.0.0.0/15"], None),
        (["::/1", "8000::/1"], "::/1"),  # 8000::/1 holds no public address
        (["2000::/4", "3000::/4"], None),
        (["2600:1f00::/47"], None),
    ],
)
def test_ranges_are_judged_by_the_public_addresses_they_cover_together(cidrs, reported):
    """More than a /16 of public IPv4 or a /48 of public IPv6, however it is spelt."""
    props = {"publicAccessCidrs": cidrs}
    public = reported or ", ".join(c for c in cidrs if not c.startswith("198.51.100."))
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, props) == [world_open(public)]


@pytest.mark.parametrize(
    "cidrs",
    [
        ["1.0.0.0/16"],  # exactly the limit
        ["1.0.0.0/17", "1.0.0.0/17", "1.0.0.0/18"],  # overlaps count once
        ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"],  # not public
        ["224.0.0.0/3", "127.0.0.0/8", "169.254.0.0/16", "198.18.0.0/15"],  # nor these
        ["2600:1f00::/48", "fc00::/7", "fe80::/10", "2001:db8::/32", "::1/128"],
    ],
)
def test_ranges_within_the_limit_or_not_public_pass(cidrs):
    props = {"publicAccessCidrs": cidrs}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, props) == []


def test_configured_ranges_cover_together():
    """A block split across two allowed ranges is inside them; one part outside is not."""
    config = {"allowedPublicAccessCidrs": ["203.0.113.0/25", "203.0.113.128/25"]}
    inside = {"publicAccessCidrs": ["203.0.113.0/24"]}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, inside, config) == []
    straddling = {"publicAccessCidrs": ["203.0.112.0/23"]}
    assert check(eks_public_endpoint_restricted, PULUMI_EKS_CLUSTER, straddling, config) == [
        world_open("203.0.112.0/23", why=OUTSIDE)
    ]


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
