"""User data rendering details that need no AWS: MIME merging and the TOML writer."""

from __future__ import annotations

import email
import tomllib

import pytest
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.userdata import (
    NodeBootstrap,
    UserDataError,
    custom_parts,
    render,
    to_toml,
)

CLUSTER = ClusterInfo("c1", "https://example.eks", "Q0E=", "1.31")


def bootstrap(**kw: object) -> NodeBootstrap:
    return NodeBootstrap(cluster=CLUSTER, max_pods=58, labels={"a": "b"}, **kw)


def test_mime_class_user_data_keeps_its_parts_after_ours() -> None:
    custom = (
        "MIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="XX"\n\n'
        "--XX\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        "#!/bin/bash\necho one\n"
        "--XX\n"
        "Content-Type: application/node.eks.aws\n\n"
        "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"
        "--XX--\n"
    )
    text = render("AL2023", bootstrap(custom=custom))
    parts = [
        (p.get_content_type(), p.get_payload().strip())
        for p in email.message_from_string(text).walk()
        if not p.is_multipart()
    ]
    assert [t for t, _ in parts] == [
        "application/node.eks.aws",
        "text/x-shellscript",
        "application/node.eks.aws",
    ]
    assert parts[1][1] == "#!/bin/bash\necho one"
    assert parts[2][1].endswith("kind: NodeConfig\nspec: {}")


def test_plain_nodeconfig_is_one_typed_part() -> None:
    assert custom_parts("kind: NodeConfig\n") == [
        ("application/node.eks.aws", "kind: NodeConfig\n")
    ]
    assert custom_parts("   ") == []


def test_invalid_bottlerocket_toml_names_the_field() -> None:
    with pytest.raises(UserDataError, match=r"spec\.userData: invalid Bottlerocket TOML"):
        render("Bottlerocket", bootstrap(custom="[settings"))


def test_toml_writer_round_trips_nested_tables() -> None:
    document = {
        "settings": {
            "kubernetes": {
                "max-pods": 58,
                "node-labels": {"karpenter.sh/nodepool": "default"},
                "node-taints": {"k": ["v:NoSchedule"]},
            },
            "kernel": {"lockdown": "integrity", "flag": True},
        }
    }
    assert tomllib.loads(to_toml(document)) == document


def test_custom_family_passes_user_data_through() -> None:
    assert render("Custom", bootstrap(custom="anything at all")) == "anything at all"
    assert render("Custom", bootstrap()) == ""


def test_a_repeated_taint_pair_is_registered_once_first_listed_first() -> None:
    """A NodePool may repeat a key/effect pair (the API server takes it); a Node may not
    [docs/compatibility.md, duplicate-taint]."""
    taints = [
        {"key": "a", "value": "1", "effect": "NoSchedule"},
        {"key": "a", "value": "2", "effect": "NoSchedule"},
        {"key": "a", "value": "3", "effect": "NoExecute"},
    ]
    assert bootstrap(taints=taints).all_taints() == [
        {"key": "a", "value": "1", "effect": "NoSchedule"},
        {"key": "a", "value": "3", "effect": "NoExecute"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]
