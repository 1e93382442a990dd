"""Sample manifests and the rejecting cases shared by the validation, CEL and CLI tests."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).parent / "manifests"
DELETE = object()  # as a change value: remove the field


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((MANIFESTS / name).read_text())


def good_manifests() -> dict[str, dict[str, Any]]:
    return {path.name: yaml.safe_load(path.read_text()) for path in sorted(MANIFESTS.glob("*"))}


def changed(obj: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` with ``{"spec.a[0].b": value}`` set (DELETE removes the field)."""
    result = copy.deepcopy(obj)
    for path, value in changes.items():
        *parents, last = re.findall(r"[^.\[\]]+", path)
        target: Any = result
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        key: Any = int(last) if isinstance(target, list) else last
        if value is DELETE:
            del target[key]
        else:
            target[key] = copy.deepcopy(value)
    return result


@dataclass
class Case:
    id: str
    base: str  # manifest file name
    changes: dict[str, Any]
    errors: list[tuple[str, str]]
    old_changes: dict[str, Any] | None = field(default=None)  # for update cases

    def obj(self) -> dict[str, Any]:
        return changed(load(self.base), self.changes)


NP = "nodepool-default.yaml"
EC2 = "ec2nodeclass-default.yaml"
NC = "nodeclaim.yaml"
LABELS = "spec.template.metadata.labels"
REQ = "spec.template.spec.requirements"
TPL = "spec.template.spec"
BUDGETS = "spec.disruption.budgets"
OPS = "In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte"
IN_NEEDS_VALUE = "requirements with operator 'In' must have a value defined"
NUMERIC = (
    "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single integer value >= 0"
)
MIN_VALUES = "requirements with 'minValues' must have at least that many values in 'values'"
DURATION_OR_NEVER = "expected a duration like 30s, 10m or 1h30m, or Never"
NODES_HINT = "expected a node count like 5 or a percentage from 0% to 100%"
QUANTITY = "expected a quantity like 500m, 2, 4Gi or 100G"
CRON = "invalid cron schedule (expected 5 fields like '0 9 * * 1-5' or a macro like @daily)"
DUP_TAINTS = "taints and startupTaints may not repeat a key/effect pair"
ROLE_XOR = "must specify exactly one of ['role', 'instanceProfile']"
SIGNALS = (
    "['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', "
    "'imagefs.inodesFree', 'pid.available']"
)


def _label(key: str, message: str) -> Case:
    return Case(f"label-{key}", NP, {LABELS: {key: "x"}}, [(LABELS, message)])


def _req(case_id: str, requirement: dict[str, Any], errors: list[tuple[str, str]]) -> Case:
    return Case(case_id, NP, {f"{REQ}[0]": requirement}, errors)


NODEPOOL_CASES = [
    _label("karpenter.sh/nodepool", 'label "karpenter.sh/nodepool" is restricted'),
    _label("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
    _label(
        "karpenter.k8s.aws/ec2nodeclass", 'label "karpenter.k8s.aws/ec2nodeclass" is restricted'
    ),
    _label("karpenter.sh/registered", 'label "karpenter.sh/registered" is restricted'),
    _label("karpenter.sh/initialized", 'label "karpenter.sh/initialized" is restricted'),
    _label(
        "karpenter.sh/team", 'label "karpenter.sh/team" is in the restricted domain "karpenter.sh"'
    ),
    _label(
        "karpenter.k8s.aws/custom",
        'label "karpenter.k8s.aws/custom" is in the restricted domain "karpenter.k8s.aws"',
    ),
    _label(
        "kubernetes.io/team",
        'label "kubernetes.io/team" is in the restricted domain "kubernetes.io"',
    ),
    _label(
        "example.k8s.io/team", 'label "example.k8s.io/team" is in the restricted domain "k8s.io"'
    ),
    Case(
        "label-value",
        NP,
        {LABELS: {"team": "-platform"}},
        [(f"{LABELS}[team]", "invalid value '-platform': expected a label value")],
    ),
    Case("requirements-empty", NP, {REQ: []}, [(REQ, "must have at least 1 item, got 0")]),
    Case(
        "requirements-too-many",
        NP,
        {REQ: [{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(101)]},
        [(REQ, "must have at most 100 items, got 101")],
    ),
    Case("requirements-missing", NP, {REQ: DELETE}, [(REQ, "is required")]),
    _req(
        "operator-unknown",
        {"key": "example.com/a", "operator": "Equals", "values": ["a"]},
        [(f"{REQ}[0].operator", f"unsupported value 'Equals'; expected one of: {OPS}")],
    ),
    _req(
        "in-without-values",
        {"key": "example.com/a", "operator": "In"},
        [(f"{REQ}[0].values", IN_NEEDS_VALUE)],
    ),
    _req(
        "in-empty-values",
        {"key": "example.com/a", "operator": "In", "values": []},
        [(f"{REQ}[0].values", IN_NEEDS_VALUE)],
    ),
    _req(
        "gt-two-values",
        {"key": "example.com/a", "operator": "Gt", "values": ["1", "2"]},
        [(f"{REQ}[0].values", NUMERIC)],
    ),
    _req(
        "lt-negative",
        {"key": "example.com/a", "operator": "Lt", "values": ["-1"]},
        [(f"{REQ}[0].values", NUMERIC)],
    ),
    _req(
        "gte-not-integer",
        {"key": "example.com/a", "operator": "Gte", "values": ["big"]},
        [(f"{REQ}[0].values", NUMERIC)],
    ),
    _req(
        "lte-no-values",
        {"key": "example.com/a", "operator": "Lte"},
        [(f"{REQ}[0].values", NUMERIC)],
    ),
    _req(
        "exists-with-values",
        {"key": "example.com/a", "operator": "Exists", "values": ["x"]},
        [
            (
                f"{REQ}[0].values",
                "requirements with operator 'Exists' or 'DoesNotExist' must not have values",
            )
        ],
    ),
    _req(
        "min-values-zero",
        {"key": "example.com/a", "operator": "In", "values": ["x"], "minValues": 0},
        [(f"{REQ}[0].minValues", "must be >= 1, got 0")],
    ),
    _req(
        "min-values-51",
        {"key": "example.com/a", "operator": "In", "values": ["x"], "minValues": 51},
        [(f"{REQ}[0].minValues", "must be <= 50, got 51"), (f"{REQ}[0].values", MIN_VALUES)],
    ),
    _req(
        "min-values-more-than-values",
        {"key": "example.com/a", "operator": "In", "values": ["x", "y"], "minValues": 3},
        [(f"{REQ}[0].values", MIN_VALUES)],
    ),
    _req(
        "key-nodepool",
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]},
        [(f"{REQ}[0].key", 'label "karpenter.sh/nodepool" is restricted')],
    ),
    _req(
        "key-hostname",
        {"key": "kubernetes.io/hostname", "operator": "Exists"},
        [(f"{REQ}[0].key", 'label "kubernetes.io/hostname" is restricted')],
    ),
    _req(
        "key-karpenter-domain",
        {"key": "karpenter.sh/anything", "operator": "Exists"},
        [
            (
                f"{REQ}[0].key",
                'label "karpenter.sh/anything" is in the restricted domain "karpenter.sh"',
            )
        ],
    ),
    _req(
        "key-malformed",
        {"key": "a b", "operator": "Exists"},
        [(f"{REQ}[0].key", "invalid value 'a b': expected a label key like example.com/team")],
    ),
    _req(
        "requirement-typo",
        {"key": "example.com/a", "operator": "In", "value": ["a"]},
        [(f"{REQ}[0].value", "unknown field"), (f"{REQ}[0].values", IN_NEEDS_VALUE)],
    ),
    Case(
        "taint-effect",
        NP,
        {f"{TPL}.taints": [{"key": "a", "effect": "NoWay"}]},
        [
            (
                f"{TPL}.taints[0].effect",
                "unsupported value 'NoWay'; expected one of: NoSchedule, PreferNoSchedule, "
                "NoExecute",
            )
        ],
    ),
    Case(
        "taints-too-many",
        NP,
        {f"{TPL}.taints": [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(51)]},
        [(f"{TPL}.taints", "must have at most 50 items, got 51")],
    ),
    Case(
        "taint-no-effect",
        NP,
        {f"{TPL}.startupTaints": [{"key": "a"}]},
        [(f"{TPL}.startupTaints[0].effect", "is required")],
    ),
    Case(
        "taint-duplicate",
        NP,
        {
            f"{TPL}.taints": [
                {"key": "a", "effect": "NoSchedule"},
                {"key": "a", "effect": "NoSchedule"},
            ]
        },
        [(TPL, DUP_TAINTS)],
    ),
    Case(
        "taint-duplicate-across",
        NP,
        {
            f"{TPL}.taints": [{"key": "a", "value": "1", "effect": "NoSchedule"}],
            f"{TPL}.startupTaints": [{"key": "a", "value": "2", "effect": "NoSchedule"}],
        },
        [(TPL, DUP_TAINTS)],
    ),
    Case(
        "nodeclassref-name",
        NP,
        {f"{TPL}.nodeClassRef.name": DELETE},
        [(f"{TPL}.nodeClassRef.name", "is required")],
    ),
    Case(
        "nodeclassref-empty-group",
        NP,
        {f"{TPL}.nodeClassRef.group": ""},
        [(f"{TPL}.nodeClassRef.group", "must have at least 1 character, got 0")],
    ),
    Case(
        "nodeclassref-missing",
        NP,
        {f"{TPL}.nodeClassRef": DELETE},
        [(f"{TPL}.nodeClassRef", "is required")],
    ),
    Case(
        "expire-after-days",
        NP,
        {f"{TPL}.expireAfter": "30d"},
        [(f"{TPL}.expireAfter", f"invalid value '30d': {DURATION_OR_NEVER}")],
    ),
    Case(
        "termination-grace-never",
        NP,
        {f"{TPL}.terminationGracePeriod": "Never"},
        [
            (
                f"{TPL}.terminationGracePeriod",
                "invalid value 'Never': expected a duration like 30s, 10m or 1h30m",
            )
        ],
    ),
    Case(
        "consolidation-policy",
        NP,
        {"spec.disruption.consolidationPolicy": "WhenUnderutilized"},
        [
            (
                "spec.disruption.consolidationPolicy",
                "unsupported value 'WhenUnderutilized'; expected one of: WhenEmpty, "
                "WhenEmptyOrUnderutilized",
            )
        ],
    ),
    Case(
        "consolidate-after",
        NP,
        {"spec.disruption.consolidateAfter": "soon"},
        [("spec.disruption.consolidateAfter", f"invalid value 'soon': {DURATION_OR_NEVER}")],
    ),
    Case(
        "budgets-too-many",
        NP,
        {BUDGETS: [{"nodes": "1"}] * 51},
        [(BUDGETS, "must have at most 50 items, got 51")],
    ),
    Case(
        "budget-percent-over-100",
        NP,
        {f"{BUDGETS}[0].nodes": "101%"},
        [(f"{BUDGETS}[0].nodes", f"invalid value '101%': {NODES_HINT}")],
    ),
    Case(
        "budget-negative",
        NP,
        {f"{BUDGETS}[0].nodes": "-1"},
        [(f"{BUDGETS}[0].nodes", f"invalid value '-1': {NODES_HINT}")],
    ),
    Case(
        "budget-nodes-number",
        NP,
        {f"{BUDGETS}[0].nodes": 5},
        [(f"{BUDGETS}[0].nodes", "must be a string, got integer 5 (quote it in YAML)")],
    ),
    Case(
        "budget-schedule-without-duration",
        NP,
        {f"{BUDGETS}[1].duration": DELETE},
        [(f"{BUDGETS}[1]", "'schedule' must be set with 'duration'")],
    ),
    Case(
        "budget-duration-without-schedule",
        NP,
        {f"{BUDGETS}[0].duration": "1h"},
        [(f"{BUDGETS}[0]", "'schedule' must be set with 'duration'")],
    ),
    Case(
        "budget-cron-out-of-range",
        NP,
        {f"{BUDGETS}[1].schedule": "61 * * * *"},
        [
            (
                f"{BUDGETS}[1].schedule",
                CRON,
            )
        ],
    ),
    Case(
        "budget-cron-shape",
        NP,
        {f"{BUDGETS}[1].schedule": "every day"},
        [
            (
                f"{BUDGETS}[1].schedule",
                "invalid value 'every day': expected a cron schedule with 5 fields or a macro "
                "like @daily",
            ),
            (
                f"{BUDGETS}[1].schedule",
                CRON,
            ),
        ],
    ),
    Case(
        "budget-duration-seconds",
        NP,
        {f"{BUDGETS}[1].duration": "30s"},
        [
            (
                f"{BUDGETS}[1].duration",
                "invalid value '30s': expected a duration in hours and minutes like 10h, 30m or "
                "1h30m",
            )
        ],
    ),
    Case(
        "budget-reason",
        NP,
        {f"{BUDGETS}[1].reasons": ["Expired"]},
        [
            (
                f"{BUDGETS}[1].reasons[0]",
                "unsupported value 'Expired'; expected one of: Underutilized, Empty, Drifted",
            )
        ],
    ),
    Case("weight-zero", NP, {"spec.weight": 0}, [("spec.weight", "must be >= 1, got 0")]),
    Case("weight-101", NP, {"spec.weight": 101}, [("spec.weight", "must be <= 100, got 101")]),
    Case(
        "weight-string",
        NP,
        {"spec.weight": "5"},
        [("spec.weight", "must be an integer, got string '5'")],
    ),
    Case(
        "limit-not-quantity",
        NP,
        {"spec.limits.cpu": "lots"},
        [("spec.limits[cpu]", f"invalid value 'lots': {QUANTITY}")],
    ),
    Case(
        "limit-float",
        NP,
        {"spec.limits.memory": 1.5},
        [
            (
                "spec.limits[memory]",
                "must be an integer or a string, got float 1.5 (quote it in YAML)",
            )
        ],
    ),
    Case("unknown-spec-field", NP, {"spec.templates": {}}, [("spec.templates", "unknown field")]),
    Case("spec-missing", NP, {"spec": DELETE}, [("spec", "is required")]),
    Case(
        "name-missing",
        NP,
        {"metadata.name": DELETE},
        [("metadata.name", "is required (or metadata.generateName)")],
    ),
]


def _ec2(case_id: str, changes: dict[str, Any], errors: list[tuple[str, str]]) -> Case:
    return Case(case_id, EC2, changes, errors)


def _tag(key: str, message: str) -> Case:
    return _ec2(f"tag-{key}", {"spec.tags": {key: "x"}}, [("spec.tags", message)])


def _restricted_tag(key: str) -> str:
    return f"tag contains a restricted tag matching {key}"


EC2NODECLASS_CASES = [
    _ec2(
        "subnets-missing",
        {"spec.subnetSelectorTerms": DELETE},
        [("spec.subnetSelectorTerms", "is required")],
    ),
    _ec2(
        "subnets-empty",
        {"spec.subnetSelectorTerms": []},
        [("spec.subnetSelectorTerms", "must have at least 1 item, got 0")],
    ),
    _ec2(
        "subnet-term-empty",
        {"spec.subnetSelectorTerms": [{}]},
        [("spec.subnetSelectorTerms[0]", "each subnet selector term needs one of tags, id")],
    ),
    _ec2(
        "subnet-term-id-and-tags",
        {"spec.subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]},
        [
            (
                "spec.subnetSelectorTerms[0]",
                "'id' is mutually exclusive, cannot be set with other fields in a subnet "
                "selector term",
            )
        ],
    ),
    _ec2(
        "subnet-id-pattern",
        {"spec.subnetSelectorTerms": [{"id": "sn-1"}]},
        [
            (
                "spec.subnetSelectorTerms[0].id",
                "invalid value 'sn-1': expected a subnet id subnet-...",
            )
        ],
    ),
    _ec2(
        "subnet-tag-empty-value",
        {"spec.subnetSelectorTerms": [{"tags": {"Name": ""}}]},
        [("spec.subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported")],
    ),
    _ec2(
        "security-groups-missing",
        {"spec.securityGroupSelectorTerms": DELETE},
        [("spec.securityGroupSelectorTerms", "is required")],
    ),
    _ec2(
        "security-group-term-empty",
        {"spec.securityGroupSelectorTerms": [{}]},
        [
            (
                "spec.securityGroupSelectorTerms[0]",
                "each security group selector term needs one of tags, id, name",
            )
        ],
    ),
    _ec2(
        "security-group-id-and-name",
        {"spec.securityGroupSelectorTerms": [{"id": "sg-1", "name": "x"}]},
        [
            (
                "spec.securityGroupSelectorTerms[0]",
                "'id' is mutually exclusive, cannot be set with other fields in a security group "
                "selector term",
            )
        ],
    ),
    _ec2(
        "alias-not-alone",
        {"spec.amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]},
        [("spec.amiSelectorTerms", "'alias' must be the only amiSelectorTerm")],
    ),
    _ec2(
        "alias-with-id-in-term",
        {"spec.amiSelectorTerms": [{"alias": "al2023@latest", "id": "ami-1"}]},
        [
            (
                "spec.amiSelectorTerms[0]",
                "'alias' is mutually exclusive, cannot be set with other fields in an AMI "
                "selector term",
            ),
            (
                "spec.amiSelectorTerms[0]",
                "'id' is mutually exclusive, cannot be set with other fields in an AMI selector "
                "term",
            ),
        ],
    ),
    _ec2(
        "alias-family",
        {"spec.amiSelectorTerms": [{"alias": "ubuntu@latest"}]},
        [
            (
                "spec.amiSelectorTerms[0].alias",
                "alias family must be one of al2, al2023, bottlerocket, windows2019, "
                "windows2022, windows2025",
            )
        ],
    ),
    _ec2(
        "alias-windows-version",
        {"spec.amiSelectorTerms": [{"alias": "windows2022@v20240101"}]},
        [("spec.amiSelectorTerms[0].alias", "windows families only support version 'latest'")],
    ),
    _ec2(
        "alias-shape",
        {"spec.amiSelectorTerms": [{"alias": "al2023"}]},
        [
            (
                "spec.amiSelectorTerms[0].alias",
                "invalid value 'al2023': expected family@version like al2023@latest",
            )
        ],
    ),
    _ec2(
        "ami-term-owner-only",
        {"spec.amiSelectorTerms": [{"owner": "self"}], "spec.amiFamily": "AL2023"},
        [
            (
                "spec.amiSelectorTerms[0]",
                "each AMI selector term needs one of alias, tags, id, name, ssmParameter",
            )
        ],
    ),
    _ec2(
        "ami-family-required",
        {"spec.amiSelectorTerms": [{"id": "ami-1"}]},
        [("spec.amiFamily", "amiFamily is required when amiSelectorTerms has no alias term")],
    ),
    _ec2(
        "ami-family-mismatch",
        {"spec.amiFamily": "Bottlerocket"},
        [("spec.amiFamily", "amiFamily must match the family of the alias (or be omitted)")],
    ),
    _ec2(
        "ami-family-unknown",
        {"spec.amiFamily": "Ubuntu"},
        [
            (
                "spec.amiFamily",
                "unsupported value 'Ubuntu'; expected one of: AL2, AL2023, Bottlerocket, Custom, "
                "Windows2019, Windows2022, Windows2025",
            ),
            ("spec.amiFamily", "amiFamily must match the family of the alias (or be omitted)"),
        ],
    ),
    _ec2("role-and-profile", {"spec.instanceProfile": "p"}, [("spec", ROLE_XOR)]),
    _ec2("neither-role-nor-profile", {"spec.role": DELETE}, [("spec", ROLE_XOR)]),
    _tag("kubernetes.io/cluster/my-cluster", _restricted_tag("kubernetes.io/cluster*")),
    _tag("eks:eks-cluster-name", _restricted_tag("eks:eks-cluster-name")),
    _tag("karpenter.sh/nodepool", _restricted_tag("karpenter.sh/nodepool")),
    _tag("karpenter.sh/nodeclaim", _restricted_tag("karpenter.sh/nodeclaim")),
    _tag("karpenter.k8s.aws/ec2nodeclass", _restricted_tag("karpenter.k8s.aws/ec2nodeclass")),
    _tag("", "empty tag keys aren't supported"),
    _ec2(
        "http-tokens",
        {"spec.metadataOptions.httpTokens": "sometimes"},
        [
            (
                "spec.metadataOptions.httpTokens",
                "unsupported value 'sometimes'; expected one of: required, optional",
            )
        ],
    ),
    _ec2(
        "hop-limit-zero",
        {"spec.metadataOptions.httpPutResponseHopLimit": 0},
        [("spec.metadataOptions.httpPutResponseHopLimit", "must be >= 1, got 0")],
    ),
    _ec2(
        "hop-limit-65",
        {"spec.metadataOptions.httpPutResponseHopLimit": 65},
        [("spec.metadataOptions.httpPutResponseHopLimit", "must be <= 64, got 65")],
    ),
    _ec2(
        "two-root-volumes",
        {
            "spec.blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
                {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
            ]
        },
        [("spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume")],
    ),
    _ec2(
        "volume-type",
        {"spec.blockDeviceMappings[0].ebs.volumeType": "gp9"},
        [
            (
                "spec.blockDeviceMappings[0].ebs.volumeType",
                "unsupported value 'gp9'; expected one of: standard, io1, io2, gp2, sc1, st1, gp3",
            )
        ],
    ),
    _ec2(
        "volume-size-shape",
        {"spec.blockDeviceMappings[0].ebs.volumeSize": "big"},
        [("spec.blockDeviceMappings[0].ebs.volumeSize", f"invalid value 'big': {QUANTITY}")],
    ),
    _ec2(
        "volume-size-range",
        {"spec.blockDeviceMappings[0].ebs.volumeSize": "65Ti"},
        [("spec.blockDeviceMappings[0].ebs.volumeSize", "volumeSize must be between 1Gi and 64Ti")],
    ),
    _ec2(
        "ebs-without-size-or-snapshot",
        {"spec.blockDeviceMappings[0].ebs": {"volumeType": "gp3"}},
        [("spec.blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined")],
    ),
    _ec2(
        "device-name-missing",
        {"spec.blockDeviceMappings[0].deviceName": DELETE},
        [("spec.blockDeviceMappings[0].deviceName", "is required")],
    ),
    _ec2(
        "max-pods-negative",
        {"spec.kubelet.maxPods": -1},
        [("spec.kubelet.maxPods", "must be >= 0, got -1")],
    ),
    _ec2(
        "pods-per-core-negative",
        {"spec.kubelet.podsPerCore": -1},
        [("spec.kubelet.podsPerCore", "must be >= 0, got -1")],
    ),
    _ec2(
        "eviction-hard-signal",
        {"spec.kubelet.evictionHard": {"memory.free": "5%"}},
        [("spec.kubelet.evictionHard", f"valid keys for evictionHard are {SIGNALS}")],
    ),
    _ec2(
        "eviction-hard-value",
        {"spec.kubelet.evictionHard": {"memory.available": "150%"}},
        [
            (
                "spec.kubelet.evictionHard[memory.available]",
                "invalid value '150%': expected a percentage or a quantity",
            )
        ],
    ),
    _ec2(
        "eviction-soft-without-grace",
        {"spec.kubelet.evictionSoft": {"memory.available": "1Gi", "nodefs.available": "10%"}},
        [
            (
                "spec.kubelet.evictionSoftGracePeriod",
                "every evictionSoft signal needs a matching evictionSoftGracePeriod",
            )
        ],
    ),
    _ec2(
        "grace-without-eviction-soft",
        {"spec.kubelet.evictionSoft": DELETE},
        [
            (
                "spec.kubelet.evictionSoft",
                "every evictionSoftGracePeriod signal needs a matching evictionSoft",
            )
        ],
    ),
    _ec2(
        "image-gc-thresholds",
        {"spec.kubelet.imageGCLowThresholdPercent": 85},
        [
            (
                "spec.kubelet.imageGCHighThresholdPercent",
                "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            )
        ],
    ),
    _ec2(
        "kube-reserved-key",
        {"spec.kubelet.kubeReserved": {"gpu": "1"}},
        [
            (
                "spec.kubelet.kubeReserved",
                "valid keys for kubeReserved are ['cpu', 'memory', 'ephemeral-storage', 'pid']",
            )
        ],
    ),
    _ec2(
        "system-reserved-negative",
        {"spec.kubelet.systemReserved": {"cpu": "-100m"}},
        [("spec.kubelet.systemReserved", "systemReserved values cannot be negative quantities")],
    ),
    _ec2(
        "eviction-soft-signal",
        {
            "spec.kubelet.evictionSoft": {"memory.free": "1Gi"},
            "spec.kubelet.evictionSoftGracePeriod": {"memory.free": "1m"},
        },
        [
            ("spec.kubelet.evictionSoft", f"valid keys for evictionSoft are {SIGNALS}"),
            (
                "spec.kubelet.evictionSoftGracePeriod",
                f"valid keys for evictionSoftGracePeriod are {SIGNALS}",
            ),
        ],
    ),
    _ec2(
        "system-reserved-key",
        {"spec.kubelet.systemReserved": {"cores": "1"}},
        [
            (
                "spec.kubelet.systemReserved",
                "valid keys for systemReserved are ['cpu', 'memory', 'ephemeral-storage', 'pid']",
            )
        ],
    ),
    _ec2(
        "kube-reserved-negative",
        {"spec.kubelet.kubeReserved": {"memory": "-1Gi"}},
        [("spec.kubelet.kubeReserved", "kubeReserved values cannot be negative quantities")],
    ),
    _ec2(
        "instance-store-policy",
        {"spec.instanceStorePolicy": "RAID1"},
        [("spec.instanceStorePolicy", "unsupported value 'RAID1'; expected one of: RAID0")],
    ),
    _ec2(
        "public-ip-string",
        {"spec.associatePublicIPAddress": "yes"},
        [("spec.associatePublicIPAddress", "must be a boolean, got string 'yes'")],
    ),
]

NODECLAIM_CASES = [
    Case(
        "nodeclaim-requirements-missing",
        NC,
        {"spec.requirements": DELETE},
        [("spec.requirements", "is required")],
    ),
    Case(
        "nodeclaim-request",
        NC,
        {"spec.resources.requests.cpu": "two"},
        [("spec.resources.requests[cpu]", f"invalid value 'two': {QUANTITY}")],
    ),
    Case(
        "nodeclaim-taints",
        NC,
        {
            "spec.taints": [{"key": "a", "effect": "NoExecute"}],
            "spec.startupTaints": [{"key": "a", "effect": "NoExecute"}],
        },
        [("spec", DUP_TAINTS)],
    ),
    Case(
        "nodeclaim-condition-status",
        NC,
        {"status.conditions[0].status": "Maybe"},
        [
            (
                "status.conditions[0].status",
                "unsupported value 'Maybe'; expected one of: True, False, Unknown",
            )
        ],
    ),
]

# (old is the base manifest with old_changes applied; new has changes applied)
UPDATE_CASES = [
    Case(
        "nodeclaim-spec-immutable",
        NC,
        {"spec.expireAfter": "24h"},
        [("spec", "spec is immutable")],
        old_changes={},
    ),
    Case(
        "nodepool-group-immutable",
        NP,
        {f"{TPL}.nodeClassRef.group": "example.com"},
        [(f"{TPL}.nodeClassRef.group", "nodeClassRef.group is immutable")],
        old_changes={},
    ),
    Case(
        "nodepool-kind-immutable",
        NP,
        {f"{TPL}.nodeClassRef.kind": "OtherNodeClass"},
        [(f"{TPL}.nodeClassRef.kind", "nodeClassRef.kind is immutable")],
        old_changes={},
    ),
    Case(
        "ec2nodeclass-role-to-profile",
        EC2,
        {"spec.role": DELETE, "spec.instanceProfile": "p"},
        [
            (
                "spec",
                "changing between 'role' and 'instanceProfile' is not supported; delete and "
                "recreate the EC2NodeClass",
            )
        ],
        old_changes={},
    ),
]

ALL_REJECTING = NODEPOOL_CASES + EC2NODECLASS_CASES + NODECLAIM_CASES
