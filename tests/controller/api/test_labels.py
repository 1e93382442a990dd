"""Well-known labels: instance-type name parsing, restricted keys, beta aliases."""

import pytest
from joiner.api import labels as wk


@pytest.mark.parametrize(
    ("name", "category", "generation", "family", "size"),
    [
        ("c6gd.large", "c", "6", "c6gd", "large"),
        ("m5.xlarge", "m", "5", "m5", "xlarge"),
        # The "-6tb" memory tag is skipped: generation is the digit after it.
        ("u-6tb1.112xlarge", "u", "1", "u-6tb1", "112xlarge"),
        ("u7i-12tb.224xlarge", "u", "7", "u7i-12tb", "224xlarge"),
        ("t3a.nano", "t", "3", "t3a", "nano"),
        ("g5.48xlarge", "g", "5", "g5", "48xlarge"),
        ("x2iedn.metal", "x", "2", "x2iedn", "metal"),
        ("mac2-m2pro.metal", "mac", "2", "mac2-m2pro", "metal"),
        ("inf2.xlarge", "inf", "2", "inf2", "xlarge"),
        ("trn1n.32xlarge", "trn", "1", "trn1n", "32xlarge"),
        ("c7i-flex.large", "c", "7", "c7i-flex", "large"),
    ],
)
def test_instance_type_labels(
    name: str, category: str, generation: str, family: str, size: str
) -> None:
    assert wk.instance_type_labels(name) == {
        wk.INSTANCE_TYPE: name,
        wk.INSTANCE_CATEGORY: category,
        wk.INSTANCE_GENERATION: generation,
        wk.INSTANCE_FAMILY: family,
        wk.INSTANCE_SIZE: size,
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Not an EC2 name: only the type label.
        ("fake-it-7", {wk.INSTANCE_TYPE: "fake-it-7"}),
        ("default", {wk.INSTANCE_TYPE: "default"}),
        # Family and size need exactly one dot; category needs digits before the dot.
        ("m5", {wk.INSTANCE_TYPE: "m5"}),
        ("a.b.c", {wk.INSTANCE_TYPE: "a.b.c"}),
        (
            "custom.large",
            {
                wk.INSTANCE_TYPE: "custom.large",
                wk.INSTANCE_FAMILY: "custom",
                wk.INSTANCE_SIZE: "large",
            },
        ),
    ],
)
def test_instance_type_labels_of_unusual_names(name: str, expected: dict[str, str]) -> None:
    assert wk.instance_type_labels(name) == expected


@pytest.mark.parametrize(
    "key",
    [
        wk.NODEPOOL,
        wk.HOSTNAME,
        wk.NODE_REGISTERED,
        wk.NODE_INITIALIZED,
        "karpenter.sh/anything",
        "sub.karpenter.sh/team",
        wk.EC2NODECLASS,
        "karpenter.k8s.aws/custom",
        "kubernetes.io/custom",
        "example.kubernetes.io/team",
        "k8s.io/custom",
        "example.k8s.io/team",
    ],
)
def test_restricted_template_labels(key: str) -> None:
    assert wk.is_restricted_label(key) is True


@pytest.mark.parametrize(
    "key",
    [
        wk.CAPACITY_TYPE,
        wk.ZONE,
        wk.REGION,
        wk.ARCH,
        wk.OS,
        wk.INSTANCE_TYPE,
        wk.WINDOWS_BUILD,
        wk.ZONE_ID,
        wk.INSTANCE_FAMILY,
        wk.INSTANCE_GPU_COUNT,
        "beta.kubernetes.io/arch",
        "failure-domain.beta.kubernetes.io/zone",
        "node.kubernetes.io/lifecycle",
        "node-restriction.kubernetes.io/team",
        "kops.k8s.io/instancegroup",
        "team",
        "example.com/team",
        "karpenter.shop/team",  # a different domain that merely starts alike
    ],
)
def test_allowed_template_labels(key: str) -> None:
    assert wk.is_restricted_label(key) is False


@pytest.mark.parametrize(
    ("key", "restricted"),
    [
        (wk.ZONE, True),  # set by the cloud provider, not copied from requirements
        (wk.CAPACITY_TYPE, True),
        (wk.INSTANCE_FAMILY, True),
        (wk.HOSTNAME, True),
        ("karpenter.sh/custom", True),
        ("example.kubernetes.io/x", True),
        ("node.kubernetes.io/lifecycle", False),
        ("team", False),
        ("example.com/team", False),
    ],
)
def test_restricted_node_labels(key: str, restricted: bool) -> None:
    assert wk.is_restricted_node_label(key) is restricted


@pytest.mark.parametrize(
    ("key", "normalized"),
    [
        ("beta.kubernetes.io/arch", wk.ARCH),
        ("beta.kubernetes.io/os", wk.OS),
        ("beta.kubernetes.io/instance-type", wk.INSTANCE_TYPE),
        ("failure-domain.beta.kubernetes.io/zone", wk.ZONE),
        ("failure-domain.beta.kubernetes.io/region", wk.REGION),
        (wk.ZONE, wk.ZONE),
        ("team", "team"),
    ],
)
def test_normalize_key(key: str, normalized: str) -> None:
    assert wk.normalize_key(key) == normalized


def test_well_known_labels_cover_the_spec_list() -> None:
    assert {wk.NODEPOOL, wk.CAPACITY_TYPE, wk.INSTANCE_TYPE, wk.ZONE, wk.REGION} <= (
        wk.WELL_KNOWN_LABELS
    )
    assert {wk.ARCH, wk.OS, wk.ZONE_ID, wk.INSTANCE_CATEGORY, wk.INSTANCE_GENERATION} <= (
        wk.WELL_KNOWN_LABELS
    )
    assert wk.HOSTNAME not in wk.WELL_KNOWN_LABELS
    assert wk.CAPACITY_TYPES == ("reserved", "spot", "on-demand")
