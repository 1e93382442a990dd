"""Defaulting follows the schema, and the typed models agree with it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from api_samples import good_manifests
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.api.validation import apply_defaults, validate_object

MODELS: dict[str, Any] = {
    "NodePool": NodePool,
    "NodeClaim": NodeClaim,
    "EC2NodeClass": EC2NodeClass,
}
REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
REQUIREMENT = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}

MINIMAL_NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {"template": {"spec": {"nodeClassRef": REF, "requirements": [REQUIREMENT]}}},
}
MINIMAL_NODECLAIM = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "default-abcde"},
    "spec": {
        "nodeClassRef": REF,
        "requirements": [REQUIREMENT],
        "resources": {"requests": {"cpu": "1"}},
    },
}
MINIMAL_EC2NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "NodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
    },
}
MINIMAL = [MINIMAL_NODEPOOL, MINIMAL_NODECLAIM, MINIMAL_EC2NODECLASS]
METADATA_DEFAULTS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def test_nodepool_defaults() -> None:
    spec = apply_defaults(MINIMAL_NODEPOOL)["spec"]
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }
    assert "weight" not in spec and "limits" not in spec


def test_defaults_fill_only_absent_fields_and_nested_items() -> None:
    raw = copy.deepcopy(MINIMAL_NODEPOOL)
    raw["spec"]["disruption"] = {"consolidateAfter": "Never", "budgets": [{"schedule": "@daily"}]}
    disruption = apply_defaults(raw)["spec"]["disruption"]
    assert disruption == {
        "consolidateAfter": "Never",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"schedule": "@daily", "nodes": "10%"}],
    }


def test_apply_defaults_returns_a_new_object() -> None:
    before = copy.deepcopy(MINIMAL_NODEPOOL)
    defaulted = apply_defaults(MINIMAL_NODEPOOL)
    assert before == MINIMAL_NODEPOOL
    assert defaulted is not MINIMAL_NODEPOOL and defaulted != MINIMAL_NODEPOOL


def test_metadata_options_default_whole_and_per_field() -> None:
    assert apply_defaults(MINIMAL_EC2NODECLASS)["spec"]["metadataOptions"] == METADATA_DEFAULTS
    raw = copy.deepcopy(MINIMAL_EC2NODECLASS)
    raw["spec"]["metadataOptions"] = {"httpTokens": "optional"}
    options = apply_defaults(raw)["spec"]["metadataOptions"]
    assert options == {**METADATA_DEFAULTS, "httpTokens": "optional"}


def test_nodeclaim_defaults_expire_after() -> None:
    assert apply_defaults(MINIMAL_NODECLAIM)["spec"]["expireAfter"] == "720h"


@pytest.mark.parametrize("raw", MINIMAL, ids=lambda raw: raw["kind"])
def test_model_defaults_agree_with_schema_defaults(raw: dict[str, Any]) -> None:
    model = MODELS[raw["kind"]]
    assert validate_object(raw) == []
    # The model fills in exactly what the API server would ...
    assert model.from_dict(raw).to_dict() == apply_defaults(raw)
    # ... so reading a stored (defaulted) object gives the same model as reading the raw one.
    assert model.from_dict(apply_defaults(raw)) == model.from_dict(raw)


@pytest.mark.parametrize("name", sorted(good_manifests()))
def test_documented_manifests_round_trip_through_the_models(name: str) -> None:
    raw = good_manifests()[name]
    assert MODELS[raw["kind"]].from_dict(raw).to_dict() == apply_defaults(raw)
