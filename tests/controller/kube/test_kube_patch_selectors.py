"""Patch algebra, selector parsing, kind registry and Status round trips."""

from __future__ import annotations

import pytest
from joiner.api.crds import render_crds
from joiner.kube.api import (
    AlreadyExists,
    BadRequest,
    Cause,
    Conflict,
    Invalid,
    NotFound,
    error_from_status,
)
from joiner.kube.patch import json_merge_patch, json_patch, strategic_merge_patch
from joiner.kube.resources import default_registry, kinds_from_crds
from joiner.kube.selectors import (
    field_value,
    label_selector_to_string,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector,
)

# ---------------------------------------------------------------- JSON merge patch (RFC 7386)


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "foo"}, "bar", "bar"),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_json_merge_patch_rfc_examples(target, patch, expected):
    assert json_merge_patch(target, patch) == expected


# ---------------------------------------------------------------- strategic merge

POD, NODE, SERVICE = "core.v1.Pod", "core.v1.Node", "core.v1.Service"


def test_strategic_delete_directive_in_keyed_list():
    target = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    patch = {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}
    assert strategic_merge_patch(target, patch, POD) == {"spec": {"containers": [{"name": "b"}]}}


def test_strategic_delete_from_primitive_list_and_replace_map():
    target = {"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}}}
    patch = {
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "labels": {"$patch": "replace", "z": "3"},
        }
    }
    assert strategic_merge_patch(target, patch, POD) == {
        "metadata": {"finalizers": ["b"], "labels": {"z": "3"}}
    }


def test_strategic_unkeyed_list_is_replaced():
    target = {"spec": {"taints": [{"key": "a"}]}}
    assert strategic_merge_patch(target, {"spec": {"taints": [{"key": "b"}]}}, NODE) == {
        "spec": {"taints": [{"key": "b"}]}
    }


def test_strategic_merge_keys_come_from_the_schema_not_the_field_name():
    """Container ports merge by containerPort, a Service's ports by port."""
    service = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}]}}
    patched = strategic_merge_patch(
        service, {"spec": {"ports": [{"port": 80, "name": "web"}]}}, SERVICE
    )
    assert patched == {"spec": {"ports": [{"port": 80, "name": "web"}, {"port": 443}]}}


def test_strategic_set_element_order_orders_the_merged_list():
    target = {"metadata": {"finalizers": ["a", "b"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"], "finalizers": ["c"]}}
    assert strategic_merge_patch(target, patch, POD) == {
        "metadata": {"finalizers": ["b", "c", "a"]}
    }


def test_strategic_keyed_item_without_key_is_invalid():
    with pytest.raises(Invalid) as error:
        strategic_merge_patch(
            {"spec": {"containers": []}}, {"spec": {"containers": [{"x": 1}]}}, POD
        )
    assert error.value.causes[0].field == "name"


# ---------------------------------------------------------------- JSON patch (RFC 6902)


def test_json_patch_operations():
    doc = {"a": {"b~c": 1, "d/e": 2}, "list": [1, 2, 3]}
    result = json_patch(
        doc,
        [
            {"op": "move", "from": "/a/b~0c", "path": "/moved"},
            {"op": "copy", "from": "/a/d~1e", "path": "/copied"},
            {"op": "remove", "path": "/list/0"},
            {"op": "add", "path": "/list/1", "value": 9},
        ],
    )
    assert result == {"a": {"d/e": 2}, "list": [2, 9, 3], "moved": 1, "copied": 2}
    assert doc["list"] == [1, 2, 3]  # the input is untouched


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "remove", "path": "/missing"},
        {"op": "replace", "path": "/list/5", "value": 0},
        {"op": "test", "path": "/list/0", "value": 2},
        {"op": "frobnicate", "path": "/list"},
        {"op": "add", "path": "no-slash", "value": 1},
    ],
)
def test_json_patch_failures_are_invalid(operation):
    with pytest.raises(Invalid) as error:
        json_patch({"list": [1]}, [operation])
    assert error.value.causes[0].field == "patch"


# ---------------------------------------------------------------- selectors


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("", {"a": "1"}, True),
        ("a=1,b!=2", {"a": "1"}, True),
        ("a in (1, 2),c", {"a": "2", "c": ""}, True),
        ("a notin (1)", {}, True),
        ("a>3", {"a": "4"}, True),
        ("a<3", {"a": "4"}, False),
        ("a>3", {"a": "x"}, False),
        ("example.com/role=web", {"example.com/role": "web"}, True),
    ],
)
def test_label_selector_matching(selector, labels, matches):
    assert parse_label_selector(selector).matches(labels) is matches


@pytest.mark.parametrize("selector", ["a in (1", "a=b=c", "!a in (x)", "a>x", "bad key!=1", "a=$"])
def test_label_selector_syntax_errors(selector):
    with pytest.raises(BadRequest):
        parse_label_selector(selector)


def test_structured_selector_round_trip():
    spec = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    }
    text = label_selector_to_string(spec)
    assert text == "app=web,tier in (a,b),!gone"
    labels = {"app": "web", "tier": "b"}
    assert parse_label_selector(text).matches(labels)
    assert selector_from_label_selector(spec).matches(labels)
    assert not selector_from_label_selector(spec).matches({**labels, "gone": "x"})


def test_field_values_and_kinds():
    node = {"spec": {"unschedulable": True}, "metadata": {"name": "n"}}
    assert field_value(node, "spec.unschedulable") == "true"
    assert field_value(node, "spec.missing.deep") == ""
    assert parse_field_selector("spec.unschedulable=true", "Node").matches(node)
    with pytest.raises(BadRequest):
        parse_field_selector("spec.nodeName=x", "Node")


# ---------------------------------------------------------------- registry and errors


def test_registry_serves_the_rendered_crds():
    kinds = {k.kind: k for k in kinds_from_crds(render_crds())}
    assert set(kinds) == {"NodePool", "NodeClaim", "EC2NodeClass", "NodeOverlay", "CapacityBuffer"}
    assert kinds["NodeOverlay"].api_version == "karpenter.sh/v1alpha1"
    claim = kinds["NodeClaim"]
    assert (claim.api_version, claim.plural, claim.namespaced, claim.status_subresource) == (
        "karpenter.sh/v1",
        "nodeclaims",
        False,
        True,
    )
    registry = default_registry()
    assert registry.lookup("EC2NodeClass").collection_path() == (
        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"
    )
    assert registry.lookup("Pod").object_path("p", "ns") == "/api/v1/namespaces/ns/pods/p"
    with pytest.raises(NotFound):
        registry.lookup("Pod", "apps/v1")
    with pytest.raises(NotFound):
        registry.by_path("apps", "v1", "gadgets")


def test_status_round_trip_keeps_type_and_causes():
    error = Invalid("bad", [Cause("spec.weight", "must be <= 100")])
    rebuilt = error_from_status(422, error.to_status())
    assert isinstance(rebuilt, Invalid)
    assert rebuilt.causes == error.causes
    assert isinstance(error_from_status(409, AlreadyExists("x").to_status()), AlreadyExists)
    assert isinstance(error_from_status(409, {"message": "no reason"}), Conflict)
    teapot = error_from_status(418, None)
    assert teapot.code == 418
