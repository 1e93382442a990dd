"""Every validation rule of SPEC 1: one rejecting case each (exact path and message, and no
other error), accepting cases at the edges, and Joiner's warnings with their messages."""

from __future__ import annotations

from typing import Any

import pytest
from api_samples import (
    ALL_REJECTING,
    DELETE,
    EC2,
    NC,
    NOT_CHECKED_ERROR,
    NP,
    UPDATE_CASES,
    WARNING_CASES,
    Case,
    changed,
    good_manifests,
    load,
)
from joiner.api.compatibility import FieldWarning, validation_warnings
from joiner.api.validation import FieldError, apply_defaults, validate_object, validate_update


def _pairs(findings: list[FieldError] | list[FieldWarning]) -> list[tuple[str, str]]:
    return [(finding.path, finding.message) for finding in findings]


@pytest.mark.parametrize("case", ALL_REJECTING, ids=lambda case: case.id)
def test_rejects_with_exact_path_and_message(case: Case) -> None:
    assert _pairs(validate_object(case.obj())) == case.expected


@pytest.mark.parametrize("case", WARNING_CASES, ids=lambda case: case.id)
def test_accepts_and_warns_with_exact_path_and_message(case: Case) -> None:
    assert validate_object(case.obj()) == []
    assert _pairs(validation_warnings(case.obj())) == case.expected


@pytest.mark.parametrize("name", sorted(good_manifests()))
def test_documented_manifests_are_valid(name: str) -> None:
    assert validate_object(good_manifests()[name]) == []
    assert validation_warnings(good_manifests()[name]) == []


ACCEPTED: list[tuple[str, str, dict[str, Any]]] = [
    (
        "label-capacity-type",
        NP,
        {"spec.template.metadata.labels": {"karpenter.sh/capacity-type": "spot"}},
    ),
    (
        "label-aws-well-known",
        NP,
        {"spec.template.metadata.labels": {"karpenter.k8s.aws/instance-family": "m5"}},
    ),
    (
        "label-node-subdomain",
        NP,
        {"spec.template.metadata.labels": {"node.kubernetes.io/pool": "a"}},
    ),
    ("label-kops", NP, {"spec.template.metadata.labels": {"kops.k8s.io/group": "a"}}),
    (
        "label-zone",
        NP,
        {"spec.template.metadata.labels": {"topology.kubernetes.io/zone": "us-east-1a"}},
    ),
    ("gt-zero", NP, {"spec.template.spec.requirements[4].values": ["0"]}),
    (
        "gte",
        NP,
        {
            "spec.template.spec.requirements[4]": {
                "key": "example.com/n",
                "operator": "Gte",
                "values": ["3"],
            }
        },
    ),
    (
        "exists",
        NP,
        {"spec.template.spec.requirements[4]": {"key": "example.com/n", "operator": "Exists"}},
    ),
    (
        "not-in-no-values",
        NP,
        {"spec.template.spec.requirements[4]": {"key": "example.com/n", "operator": "NotIn"}},
    ),
    ("min-values-equal", NP, {"spec.template.spec.requirements[3].minValues": 3}),
    ("requirements-empty", NP, {"spec.template.spec.requirements": []}),
    (
        "taints-60",
        NP,
        {
            "spec.template.spec.taints": [
                {"key": f"k{i}", "effect": "NoSchedule"} for i in range(60)
            ]
        },
    ),
    ("expire-never", NP, {"spec.template.spec.expireAfter": "Never"}),
    ("consolidate-never", NP, {"spec.disruption.consolidateAfter": "Never"}),
    ("budget-100-percent", NP, {"spec.disruption.budgets[0].nodes": "100%"}),
    ("budget-0-percent", NP, {"spec.disruption.budgets[0].nodes": "0%"}),
    ("budget-hourly", NP, {"spec.disruption.budgets[1].schedule": "@hourly"}),
    ("budget-duration-h-m", NP, {"spec.disruption.budgets[1].duration": "1h30m"}),
    ("weight-1", NP, {"spec.weight": 1}),
    ("weight-100", NP, {"spec.weight": 100}),
    ("limit-integer", NP, {"spec.limits.cpu": 100}),
    ("limit-nodes", NP, {"spec.limits.nodes": "10"}),
    ("disruption-null", NP, {"spec.disruption": None}),
    ("status-dropped-on-create", NC, {"status.conditions[0].status": "Maybe"}),
    ("alias-bottlerocket", EC2, {"spec.amiSelectorTerms": [{"alias": "bottlerocket@v1.20.3"}]}),
    ("alias-windows-latest", EC2, {"spec.amiSelectorTerms": [{"alias": "windows2022@latest"}]}),
    ("family-matches-alias", EC2, {"spec.amiFamily": "AL2023"}),
    ("family-custom-with-alias", EC2, {"spec.amiFamily": "Custom"}),
    ("alias-al2", EC2, {"spec.amiSelectorTerms": [{"alias": "al2@v20240807"}]}),
    ("instance-profile", EC2, {"spec.role": DELETE, "spec.instanceProfile": "p"}),
    ("security-group-name", EC2, {"spec.securityGroupSelectorTerms": [{"name": "sg-name"}]}),
    ("tag-kubernetes-role", EC2, {"spec.tags": {"kubernetes.io/role": "node"}}),
    ("volume-58Ti", EC2, {"spec.blockDeviceMappings[0].ebs.volumeSize": "58Ti"}),
    ("volume-64T", EC2, {"spec.blockDeviceMappings[0].ebs.volumeSize": "64T"}),
    ("volume-1Gi", EC2, {"spec.blockDeviceMappings[0].ebs.volumeSize": "1Gi"}),
    ("volume-snapshot", EC2, {"spec.blockDeviceMappings[0].ebs": {"snapshotID": "snap-1"}}),
    ("hop-limit-64", EC2, {"spec.metadataOptions.httpPutResponseHopLimit": 64}),
    ("max-pods-0", EC2, {"spec.kubelet.maxPods": 0}),
    ("eviction-quantity", EC2, {"spec.kubelet.evictionHard": {"memory.available": "200Mi"}}),
    ("nodeclaim-nodepool-key", NC, {}),
]


@pytest.mark.parametrize("base, changes", [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_accepts(base: str, changes: dict[str, Any]) -> None:
    assert validate_object(changed(load(base), changes)) == []


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda case: case.id)
def test_update_rejects_changed_immutable_field(case: Case) -> None:
    old = apply_defaults(changed(load(case.base), case.old_changes or {}))
    new = apply_defaults(case.obj())
    assert _pairs(validate_update(old, new)) == case.expected


UPDATES_ACCEPTED = [
    ("nodepool-nodeclass-name", NP, {"spec.template.spec.nodeClassRef.name": "other"}),
    ("nodepool-requirements", NP, {"spec.template.spec.requirements[0].values": ["arm64"]}),
    ("nodeclaim-status", NC, {"status.nodeName": "ip-10-0-9-9.ec2.internal"}),
    ("nodeclaim-labels", NC, {"metadata.labels.example": "yes"}),
    ("ec2nodeclass-role-name", EC2, {"spec.role": "OtherRole"}),
    ("ec2nodeclass-role-to-profile", EC2, {"spec.role": DELETE, "spec.instanceProfile": "p"}),
]


@pytest.mark.parametrize(
    "base, changes", [c[1:] for c in UPDATES_ACCEPTED], ids=[c[0] for c in UPDATES_ACCEPTED]
)
def test_update_accepts_mutable_changes(base: str, changes: dict[str, Any]) -> None:
    old = apply_defaults(load(base))
    assert validate_update(old, apply_defaults(changed(load(base), changes))) == []


def test_a_blocking_error_in_an_update_stops_the_transition_rules_too() -> None:
    old = apply_defaults(load(NP))
    new = changed(old, {"spec.weight": "5", "spec.template.spec.nodeClassRef.kind": "Other"})
    assert _pairs(validate_update(old, new)) == [
        ("spec.weight", "must be an integer, got string '5'"),
        NOT_CHECKED_ERROR,
    ]


def test_update_reports_new_object_errors_and_kind_change() -> None:
    old = apply_defaults(load(NP))
    assert _pairs(validate_update(old, changed(old, {"spec.weight": 0}))) == [
        ("spec.weight", "must be >= 1, got 0")
    ]
    assert _pairs(validate_update(old, apply_defaults(load(NC)))) == [("kind", "may not change")]


def test_field_error_text() -> None:
    assert (
        str(FieldError("spec.weight", "must be >= 1, got 0")) == "spec.weight: must be >= 1, got 0"
    )
    assert str(FieldError("", "expected an object (a mapping), got list")) == (
        "expected an object (a mapping), got list"
    )


SERVED = (
    "NodePool (karpenter.sh/v1), NodeClaim (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1), "
    "NodeOverlay (karpenter.sh/v1alpha1), CapacityBuffer (autoscaling.x-k8s.io/v1beta1)"
)


@pytest.mark.parametrize(
    "obj, expected",
    [
        (None, [("", "expected an object (a mapping), got null")]),
        (["a"], [("", "expected an object (a mapping), got list")]),
        ("text", [("", "expected an object (a mapping), got string")]),
        ({}, [("apiVersion", "is required"), ("kind", "is required")]),
        ({"kind": "NodePool"}, [("apiVersion", "is required")]),
        (
            {"apiVersion": "karpenter.sh/v1", "kind": 3},
            [("kind", "must be a string, got integer 3")],
        ),
        (
            {"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool"},
            [("apiVersion", "NodePool is served as karpenter.sh/v1, got 'karpenter.sh/v1beta1'")],
        ),
        (
            {"apiVersion": "karpenter.sh/v1", "kind": "EC2NodeClass"},
            [
                (
                    "apiVersion",
                    "EC2NodeClass is served as karpenter.k8s.aws/v1, got 'karpenter.sh/v1'",
                )
            ],
        ),
        (
            {"apiVersion": "karpenter.sh/v1", "kind": "Provisioner"},
            [("kind", f"unknown kind 'Provisioner'; expected one of {SERVED}")],
        ),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment"},
            [("kind", f"unknown kind 'Deployment'; expected one of {SERVED}")],
        ),
    ],
)
def test_unknown_or_malformed_objects_are_errors_not_exceptions(
    obj: Any, expected: list[tuple[str, str]]
) -> None:
    assert _pairs(validate_object(obj)) == expected
    assert apply_defaults(obj) == obj


def test_wrong_container_types_are_reported_at_their_path() -> None:
    obj = changed(
        load(NP), {"spec.template.spec.requirements": {"key": "a"}, "spec.limits": ["cpu"]}
    )
    assert _pairs(validate_object(obj)) == [
        ("spec.template.spec.requirements", "must be a list, got object"),
        ("spec.limits", "must be an object, got list"),
        NOT_CHECKED_ERROR,
    ]


def test_a_blocking_error_stops_the_rules_as_on_the_server() -> None:
    # values is a string: the type error is reported, and no rule runs (the 'In' rule
    # would read the string), which the last error says
    obj = changed(load(NP), {"spec.template.spec.requirements[0].values": "amd64"})
    assert _pairs(validate_object(obj)) == [
        ("spec.template.spec.requirements[0].values", "must be a list, got string 'amd64'"),
        NOT_CHECKED_ERROR,
    ]


def test_a_non_blocking_error_leaves_the_rules_running() -> None:
    obj = changed(
        load(NP),
        {"spec.weight": 0, "spec.template.spec.requirements[0]": {"key": "a", "operator": "In"}},
    )
    assert _pairs(validate_object(obj)) == [
        ("spec.weight", "must be >= 1, got 0"),
        (
            "spec.template.spec.requirements",
            "requirements with operator 'In' must have a value defined",
        ),
    ]


def test_several_errors_are_all_reported() -> None:
    obj = changed(load(NP), {"spec.weight": 0, "spec.disruption.budgets[0].nodes": "200%"})
    assert [e.path for e in validate_object(obj)] == [
        "spec.disruption.budgets[0].nodes",
        "spec.weight",
    ]
