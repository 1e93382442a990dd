"""Sample manifests, and cases with the exact errors (or warnings) Joiner gives them, shared
by the validation and CLI tests. Which paths the API server names is the parity corpus's
business (``parity.py``); these pin Joiner's messages."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from joiner.api.validation import NOT_CHECKED

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
    """A sample: ``base`` with ``changes``, and the (path, message) pairs expected of it:
    errors for the rejecting and update cases, warnings for ``WARNING_CASES``."""

    id: str
    base: str  # manifest file name
    changes: dict[str, Any]
    expected: list[tuple[str, str]]
    old_changes: dict[str, Any] | None = field(default=None)  # for update cases

    def obj(self) -> dict[str, Any]:
        return changed(load(self.base), self.changes)


NP = "nodepool-default.yaml"
EC2 = "ec2nodeclass-default.yaml"
NC = "nodeclaim.yaml"
TPL = "spec.template.spec"
NOT_CHECKED_ERROR = ("", NOT_CHECKED)


NODEPOOL_CASES = [
    Case(
        "label-karpenter.sh/nodepool",
        NP,
        {"spec.template.metadata.labels": {"karpenter.sh/nodepool": "x"}},
        [("spec.template.metadata.labels", 'label "karpenter.sh/nodepool" is restricted')],
    ),
    Case(
        "label-kubernetes.io/hostname",
        NP,
        {"spec.template.metadata.labels": {"kubernetes.io/hostname": "x"}},
        [("spec.template.metadata.labels", 'label "kubernetes.io/hostname" is restricted')],
    ),
    Case(
        "label-karpenter.sh/registered",
        NP,
        {"spec.template.metadata.labels": {"karpenter.sh/registered": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "karpenter.sh/registered" is in the restricted domain "karpenter.sh"',
            )
        ],
    ),
    Case(
        "label-karpenter.sh/initialized",
        NP,
        {"spec.template.metadata.labels": {"karpenter.sh/initialized": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "karpenter.sh/initialized" is in the restricted domain "karpenter.sh"',
            )
        ],
    ),
    Case(
        "label-karpenter.sh/team",
        NP,
        {"spec.template.metadata.labels": {"karpenter.sh/team": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "karpenter.sh/team" is in the restricted domain "karpenter.sh"',
            )
        ],
    ),
    Case(
        "label-karpenter.k8s.aws/custom",
        NP,
        {"spec.template.metadata.labels": {"karpenter.k8s.aws/custom": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "karpenter.k8s.aws/custom" is in the restricted domain "karpenter.k8s.aws"',
            )
        ],
    ),
    Case(
        "label-value",
        NP,
        {"spec.template.metadata.labels": {"team": "-platform"}},
        [
            (
                "spec.template.metadata.labels.team",
                "invalid value '-platform': expected a label value",
            )
        ],
    ),
    Case(
        "requirements-too-many",
        NP,
        {
            "spec.template.spec.requirements": [
                {"key": "example.com/k0", "operator": "Exists"},
                {"key": "example.com/k1", "operator": "Exists"},
                {"key": "example.com/k2", "operator": "Exists"},
                {"key": "example.com/k3", "operator": "Exists"},
                {"key": "example.com/k4", "operator": "Exists"},
                {"key": "example.com/k5", "operator": "Exists"},
                {"key": "example.com/k6", "operator": "Exists"},
                {"key": "example.com/k7", "operator": "Exists"},
                {"key": "example.com/k8", "operator": "Exists"},
                {"key": "example.com/k9", "operator": "Exists"},
                {"key": "example.com/k10", "operator": "Exists"},
                {"key": "example.com/k11", "operator": "Exists"},
                {"key": "example.com/k12", "operator": "Exists"},
                {"key": "example.com/k13", "operator": "Exists"},
                {"key": "example.com/k14", "operator": "Exists"},
                {"key": "example.com/k15", "operator": "Exists"},
                {"key": "example.com/k16", "operator": "Exists"},
                {"key": "example.com/k17", "operator": "Exists"},
                {"key": "example.com/k18", "operator": "Exists"},
                {"key": "example.com/k19", "operator": "Exists"},
                {"key": "example.com/k20", "operator": "Exists"},
                {"key": "example.com/k21", "operator": "Exists"},
                {"key": "example.com/k22", "operator": "Exists"},
                {"key": "example.com/k23", "operator": "Exists"},
                {"key": "example.com/k24", "operator": "Exists"},
                {"key": "example.com/k25", "operator": "Exists"},
                {"key": "example.com/k26", "operator": "Exists"},
                {"key": "example.com/k27", "operator": "Exists"},
                {"key": "example.com/k28", "operator": "Exists"},
                {"key": "example.com/k29", "operator": "Exists"},
                {"key": "example.com/k30", "operator": "Exists"},
                {"key": "example.com/k31", "operator": "Exists"},
                {"key": "example.com/k32", "operator": "Exists"},
                {"key": "example.com/k33", "operator": "Exists"},
                {"key": "example.com/k34", "operator": "Exists"},
                {"key": "example.com/k35", "operator": "Exists"},
                {"key": "example.com/k36", "operator": "Exists"},
                {"key": "example.com/k37", "operator": "Exists"},
                {"key": "example.com/k38", "operator": "Exists"},
                {"key": "example.com/k39", "operator": "Exists"},
                {"key": "example.com/k40", "operator": "Exists"},
                {"key": "example.com/k41", "operator": "Exists"},
                {"key": "example.com/k42", "operator": "Exists"},
                {"key": "example.com/k43", "operator": "Exists"},
                {"key": "example.com/k44", "operator": "Exists"},
                {"key": "example.com/k45", "operator": "Exists"},
                {"key": "example.com/k46", "operator": "Exists"},
                {"key": "example.com/k47", "operator": "Exists"},
                {"key": "example.com/k48", "operator": "Exists"},
                {"key": "example.com/k49", "operator": "Exists"},
                {"key": "example.com/k50", "operator": "Exists"},
                {"key": "example.com/k51", "operator": "Exists"},
                {"key": "example.com/k52", "operator": "Exists"},
                {"key": "example.com/k53", "operator": "Exists"},
                {"key": "example.com/k54", "operator": "Exists"},
                {"key": "example.com/k55", "operator": "Exists"},
                {"key": "example.com/k56", "operator": "Exists"},
                {"key": "example.com/k57", "operator": "Exists"},
                {"key": "example.com/k58", "operator": "Exists"},
                {"key": "example.com/k59", "operator": "Exists"},
                {"key": "example.com/k60", "operator": "Exists"},
                {"key": "example.com/k61", "operator": "Exists"},
                {"key": "example.com/k62", "operator": "Exists"},
                {"key": "example.com/k63", "operator": "Exists"},
                {"key": "example.com/k64", "operator": "Exists"},
                {"key": "example.com/k65", "operator": "Exists"},
                {"key": "example.com/k66", "operator": "Exists"},
                {"key": "example.com/k67", "operator": "Exists"},
                {"key": "example.com/k68", "operator": "Exists"},
                {"key": "example.com/k69", "operator": "Exists"},
                {"key": "example.com/k70", "operator": "Exists"},
                {"key": "example.com/k71", "operator": "Exists"},
                {"key": "example.com/k72", "operator": "Exists"},
                {"key": "example.com/k73", "operator": "Exists"},
                {"key": "example.com/k74", "operator": "Exists"},
                {"key": "example.com/k75", "operator": "Exists"},
                {"key": "example.com/k76", "operator": "Exists"},
                {"key": "example.com/k77", "operator": "Exists"},
                {"key": "example.com/k78", "operator": "Exists"},
                {"key": "example.com/k79", "operator": "Exists"},
                {"key": "example.com/k80", "operator": "Exists"},
                {"key": "example.com/k81", "operator": "Exists"},
                {"key": "example.com/k82", "operator": "Exists"},
                {"key": "example.com/k83", "operator": "Exists"},
                {"key": "example.com/k84", "operator": "Exists"},
                {"key": "example.com/k85", "operator": "Exists"},
                {"key": "example.com/k86", "operator": "Exists"},
                {"key": "example.com/k87", "operator": "Exists"},
                {"key": "example.com/k88", "operator": "Exists"},
                {"key": "example.com/k89", "operator": "Exists"},
                {"key": "example.com/k90", "operator": "Exists"},
                {"key": "example.com/k91", "operator": "Exists"},
                {"key": "example.com/k92", "operator": "Exists"},
                {"key": "example.com/k93", "operator": "Exists"},
                {"key": "example.com/k94", "operator": "Exists"},
                {"key": "example.com/k95", "operator": "Exists"},
                {"key": "example.com/k96", "operator": "Exists"},
                {"key": "example.com/k97", "operator": "Exists"},
                {"key": "example.com/k98", "operator": "Exists"},
                {"key": "example.com/k99", "operator": "Exists"},
                {"key": "example.com/k100", "operator": "Exists"},
            ]
        },
        [
            ("spec.template.spec.requirements", "must have at most 100 items, got 101"),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "requirements-missing",
        NP,
        {"spec.template.spec.requirements": DELETE},
        [("spec.template.spec.requirements", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "operator-unknown",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "Equals",
                "values": ["a"],
            }
        },
        [
            (
                "spec.template.spec.requirements[0].operator",
                "unsupported value 'Equals'; expected one of: In, NotIn, Exists, DoesNotExist, "
                "Gt, Lt, Gte, Lte",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "in-without-values",
        NP,
        {"spec.template.spec.requirements[0]": {"key": "example.com/a", "operator": "In"}},
        [
            (
                "spec.template.spec.requirements",
                "requirements with operator 'In' must have a value defined",
            )
        ],
    ),
    Case(
        "in-empty-values",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "In",
                "values": [],
            }
        },
        [
            (
                "spec.template.spec.requirements",
                "requirements with operator 'In' must have a value defined",
            )
        ],
    ),
    Case(
        "gt-two-values",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "Gt",
                "values": ["1", "2"],
            }
        },
        [
            (
                "spec.template.spec.requirements",
                "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                "integer value >= 0",
            )
        ],
    ),
    Case(
        "lt-negative",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "Lt",
                "values": ["-1"],
            }
        },
        [
            (
                "spec.template.spec.requirements",
                "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                "integer value >= 0",
            )
        ],
    ),
    Case(
        "gte-not-integer",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "Gte",
                "values": ["big"],
            }
        },
        [
            (
                "spec.template.spec.requirements",
                "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                "integer value >= 0",
            )
        ],
    ),
    Case(
        "lte-no-values",
        NP,
        {"spec.template.spec.requirements[0]": {"key": "example.com/a", "operator": "Lte"}},
        [
            (
                "spec.template.spec.requirements",
                "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                "integer value >= 0",
            )
        ],
    ),
    Case(
        "min-values-zero",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "In",
                "values": ["x"],
                "minValues": 0,
            }
        },
        [("spec.template.spec.requirements[0].minValues", "must be >= 1, got 0")],
    ),
    Case(
        "min-values-51",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "In",
                "values": ["x"],
                "minValues": 51,
            }
        },
        [
            ("spec.template.spec.requirements[0].minValues", "must be <= 50, got 51"),
            (
                "spec.template.spec.requirements",
                "requirements with 'minValues' must have at least that many values in 'values'",
            ),
        ],
    ),
    Case(
        "min-values-more-than-values",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "In",
                "values": ["x", "y"],
                "minValues": 3,
            }
        },
        [
            (
                "spec.template.spec.requirements",
                "requirements with 'minValues' must have at least that many values in 'values'",
            )
        ],
    ),
    Case(
        "key-nodepool",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "karpenter.sh/nodepool",
                "operator": "In",
                "values": ["a"],
            }
        },
        [("spec.template.spec.requirements[0].key", 'label "karpenter.sh/nodepool" is restricted')],
    ),
    Case(
        "key-hostname",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "kubernetes.io/hostname",
                "operator": "Exists",
            }
        },
        [
            (
                "spec.template.spec.requirements[0].key",
                'label "kubernetes.io/hostname" is restricted',
            )
        ],
    ),
    Case(
        "key-karpenter-domain",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "karpenter.sh/anything",
                "operator": "Exists",
            }
        },
        [
            (
                "spec.template.spec.requirements[0].key",
                'label "karpenter.sh/anything" is in the restricted domain "karpenter.sh"',
            )
        ],
    ),
    Case(
        "key-malformed",
        NP,
        {"spec.template.spec.requirements[0]": {"key": "a b", "operator": "Exists"}},
        [
            (
                "spec.template.spec.requirements[0].key",
                "invalid value 'a b': expected a label key like example.com/team",
            )
        ],
    ),
    Case(
        "requirement-typo",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "In",
                "value": ["a"],
            }
        },
        [("spec.template.spec.requirements[0].value", "unknown field")],
    ),
    Case(
        "taint-effect",
        NP,
        {"spec.template.spec.taints": [{"key": "a", "effect": "NoWay"}]},
        [
            (
                "spec.template.spec.taints[0].effect",
                "unsupported value 'NoWay'; expected one of: NoSchedule, PreferNoSchedule, "
                "NoExecute",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "taint-no-effect",
        NP,
        {"spec.template.spec.startupTaints": [{"key": "a"}]},
        [("spec.template.spec.startupTaints[0].effect", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "nodeclassref-name",
        NP,
        {"spec.template.spec.nodeClassRef.name": DELETE},
        [("spec.template.spec.nodeClassRef.name", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "nodeclassref-empty-group",
        NP,
        {"spec.template.spec.nodeClassRef.group": ""},
        [("spec.template.spec.nodeClassRef.group", "group may not be empty")],
    ),
    Case(
        "nodeclassref-missing",
        NP,
        {"spec.template.spec.nodeClassRef": DELETE},
        [("spec.template.spec.nodeClassRef", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "expire-after-days",
        NP,
        {"spec.template.spec.expireAfter": "30d"},
        [
            (
                "spec.template.spec.expireAfter",
                "invalid value '30d': expected a duration like 30s, 10m or 1h30m, or Never",
            )
        ],
    ),
    Case(
        "termination-grace-never",
        NP,
        {"spec.template.spec.terminationGracePeriod": "Never"},
        [
            (
                "spec.template.spec.terminationGracePeriod",
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
                "WhenEmptyOrUnderutilized, Balanced",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "consolidate-after",
        NP,
        {"spec.disruption.consolidateAfter": "soon"},
        [
            (
                "spec.disruption.consolidateAfter",
                "invalid value 'soon': expected a duration like 30s, 10m or 1h30m, or Never",
            )
        ],
    ),
    Case(
        "budgets-too-many",
        NP,
        {
            "spec.disruption.budgets": [
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
                {"nodes": "1"},
            ]
        },
        [("spec.disruption.budgets", "must have at most 50 items, got 51"), NOT_CHECKED_ERROR],
    ),
    Case(
        "budget-percent-over-100",
        NP,
        {"spec.disruption.budgets[0].nodes": "101%"},
        [
            (
                "spec.disruption.budgets[0].nodes",
                "invalid value '101%': expected a node count like 5 or a percentage from 0% to "
                "100%",
            )
        ],
    ),
    Case(
        "budget-negative",
        NP,
        {"spec.disruption.budgets[0].nodes": "-1"},
        [
            (
                "spec.disruption.budgets[0].nodes",
                "invalid value '-1': expected a node count like 5 or a percentage from 0% to 100%",
            )
        ],
    ),
    Case(
        "budget-nodes-number",
        NP,
        {"spec.disruption.budgets[0].nodes": 5},
        [
            (
                "spec.disruption.budgets[0].nodes",
                "must be a string, got integer 5 (quote it in YAML)",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "budget-schedule-without-duration",
        NP,
        {"spec.disruption.budgets[1].duration": DELETE},
        [("spec.disruption.budgets", "'schedule' must be set with 'duration'")],
    ),
    Case(
        "budget-duration-without-schedule",
        NP,
        {"spec.disruption.budgets[0].duration": "1h"},
        [("spec.disruption.budgets", "'schedule' must be set with 'duration'")],
    ),
    Case(
        "budget-cron-shape",
        NP,
        {"spec.disruption.budgets[1].schedule": "every day"},
        [
            (
                "spec.disruption.budgets[1].schedule",
                "invalid value 'every day': expected a cron schedule with 5 fields or a macro "
                "like @daily",
            )
        ],
    ),
    Case(
        "budget-duration-seconds",
        NP,
        {"spec.disruption.budgets[1].duration": "30s"},
        [
            (
                "spec.disruption.budgets[1].duration",
                "invalid value '30s': expected a duration in hours and minutes like 10h, 30m or "
                "1h30m",
            )
        ],
    ),
    Case(
        "budget-reason",
        NP,
        {"spec.disruption.budgets[1].reasons": ["Expired"]},
        [
            (
                "spec.disruption.budgets[1].reasons[0]",
                "unsupported value 'Expired'; expected one of: Underutilized, Empty, Drifted",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case("weight-zero", NP, {"spec.weight": 0}, [("spec.weight", "must be >= 1, got 0")]),
    Case("weight-101", NP, {"spec.weight": 101}, [("spec.weight", "must be <= 100, got 101")]),
    Case(
        "weight-string",
        NP,
        {"spec.weight": "5"},
        [("spec.weight", "must be an integer, got string '5'"), NOT_CHECKED_ERROR],
    ),
    Case(
        "limit-not-quantity",
        NP,
        {"spec.limits.cpu": "lots"},
        [
            (
                "spec.limits.cpu",
                "invalid value 'lots': expected a quantity like 500m, 2, 4Gi or 100G",
            )
        ],
    ),
    Case(
        "limit-float",
        NP,
        {"spec.limits.memory": 1.5},
        [
            (
                "spec.limits.memory",
                "must be an integer or a string, got float 1.5 (quote it in YAML)",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "unknown-spec-field",
        NP,
        {"spec.templates": {}},
        [("spec.templates", "unknown field")],
    ),
    Case("spec-missing", NP, {"spec": DELETE}, [("spec", "is required"), NOT_CHECKED_ERROR]),
    Case(
        "name-missing",
        NP,
        {"metadata.name": DELETE},
        [("metadata.name", "Required value: name or generateName is required"), NOT_CHECKED_ERROR],
    ),
]


EC2NODECLASS_CASES = [
    Case(
        "subnets-missing",
        EC2,
        {"spec.subnetSelectorTerms": DELETE},
        [("spec.subnetSelectorTerms", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "subnets-empty",
        EC2,
        {"spec.subnetSelectorTerms": []},
        [
            ("spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"),
            (
                "spec.subnetSelectorTerms",
                "'id' is mutually exclusive, cannot be set with other fields in a subnet "
                "selector term",
            ),
        ],
    ),
    Case(
        "subnet-term-empty",
        EC2,
        {"spec.subnetSelectorTerms": [{}]},
        [("spec.subnetSelectorTerms", "each subnet selector term needs one of tags, id")],
    ),
    Case(
        "subnet-term-id-and-tags",
        EC2,
        {"spec.subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]},
        [
            (
                "spec.subnetSelectorTerms",
                "'id' is mutually exclusive, cannot be set with other fields in a subnet "
                "selector term",
            )
        ],
    ),
    Case(
        "subnet-id-pattern",
        EC2,
        {"spec.subnetSelectorTerms": [{"id": "sn-1"}]},
        [
            (
                "spec.subnetSelectorTerms[0].id",
                "invalid value 'sn-1': expected an id like subnet-0123abcd",
            )
        ],
    ),
    Case(
        "subnet-tag-empty-value",
        EC2,
        {"spec.subnetSelectorTerms": [{"tags": {"Name": ""}}]},
        [("spec.subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported")],
    ),
    Case(
        "security-groups-missing",
        EC2,
        {"spec.securityGroupSelectorTerms": DELETE},
        [("spec.securityGroupSelectorTerms", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "security-group-term-empty",
        EC2,
        {"spec.securityGroupSelectorTerms": [{}]},
        [
            (
                "spec.securityGroupSelectorTerms",
                "each security group selector term needs one of tags, id, name",
            )
        ],
    ),
    Case(
        "security-group-id-and-name",
        EC2,
        {"spec.securityGroupSelectorTerms": [{"id": "sg-1", "name": "x"}]},
        [
            (
                "spec.securityGroupSelectorTerms",
                "'id' is mutually exclusive, cannot be set with other fields in a security "
                "group selector term",
            ),
            (
                "spec.securityGroupSelectorTerms",
                "'name' is mutually exclusive, cannot be set with other fields in a security "
                "group selector term",
            ),
        ],
    ),
    Case(
        "alias-not-alone",
        EC2,
        {"spec.amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]},
        [("spec.amiSelectorTerms", "'alias' must be the only amiSelectorTerm")],
    ),
    Case(
        "alias-with-id-in-term",
        EC2,
        {"spec.amiSelectorTerms": [{"alias": "al2023@latest", "id": "ami-1"}]},
        [
            (
                "spec.amiSelectorTerms",
                "'id' is mutually exclusive, cannot be set with other fields in an AMI selector "
                "term",
            ),
            (
                "spec.amiSelectorTerms",
                "'alias' is mutually exclusive, cannot be set with other fields in an AMI "
                "selector term",
            ),
        ],
    ),
    Case(
        "alias-family",
        EC2,
        {"spec.amiSelectorTerms": [{"alias": "ubuntu@latest"}]},
        [
            (
                "spec.amiSelectorTerms[0].alias",
                "alias family must be one of al2, al2023, bottlerocket, windows2019, "
                "windows2022, windows2025",
            )
        ],
    ),
    Case(
        "alias-windows-version",
        EC2,
        {"spec.amiSelectorTerms": [{"alias": "windows2022@v20240101"}]},
        [("spec.amiSelectorTerms[0].alias", "windows families only support version 'latest'")],
    ),
    Case(
        "alias-shape",
        EC2,
        {"spec.amiSelectorTerms": [{"alias": "al2023"}]},
        [("spec.amiSelectorTerms[0].alias", "alias must be family@version, like al2023@latest")],
    ),
    Case(
        "ami-term-owner-only",
        EC2,
        {"spec.amiSelectorTerms": [{"owner": "self"}], "spec.amiFamily": "AL2023"},
        [
            (
                "spec.amiSelectorTerms",
                "each AMI selector term needs one of tags, id, name, alias, ssmParameter",
            )
        ],
    ),
    Case(
        "ami-family-required",
        EC2,
        {"spec.amiSelectorTerms": [{"id": "ami-1"}]},
        [("spec", "must specify amiFamily if amiSelectorTerms does not contain an alias")],
    ),
    Case(
        "ami-family-mismatch",
        EC2,
        {"spec.amiFamily": "Bottlerocket"},
        [("spec", "if set, amiFamily must be the family of the alias, or Custom")],
    ),
    Case(
        "ami-family-unknown",
        EC2,
        {"spec.amiFamily": "Ubuntu"},
        [
            (
                "spec.amiFamily",
                "unsupported value 'Ubuntu'; expected one of: AL2, AL2023, Bottlerocket, "
                "Custom, Windows2019, Windows2022, Windows2025",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "role-and-profile",
        EC2,
        {"spec.instanceProfile": "p"},
        [("spec", "must specify exactly one of ['role', 'instanceProfile']")],
    ),
    Case(
        "neither-role-nor-profile",
        EC2,
        {"spec.role": DELETE},
        [("spec", "must specify exactly one of ['role', 'instanceProfile']")],
    ),
    Case(
        "tag-kubernetes.io/cluster/my-cluster",
        EC2,
        {"spec.tags": {"kubernetes.io/cluster/my-cluster": "x"}},
        [("spec.tags", "tag contains a restricted tag matching kubernetes.io/cluster*")],
    ),
    Case(
        "tag-eks:eks-cluster-name",
        EC2,
        {"spec.tags": {"eks:eks-cluster-name": "x"}},
        [("spec.tags", "tag contains a restricted tag matching eks:eks-cluster-name")],
    ),
    Case(
        "tag-karpenter.sh/nodepool",
        EC2,
        {"spec.tags": {"karpenter.sh/nodepool": "x"}},
        [("spec.tags", "tag contains a restricted tag matching karpenter.sh/nodepool")],
    ),
    Case(
        "tag-karpenter.sh/nodeclaim",
        EC2,
        {"spec.tags": {"karpenter.sh/nodeclaim": "x"}},
        [("spec.tags", "tag contains a restricted tag matching karpenter.sh/nodeclaim")],
    ),
    Case(
        "tag-karpenter.k8s.aws/ec2nodeclass",
        EC2,
        {"spec.tags": {"karpenter.k8s.aws/ec2nodeclass": "x"}},
        [("spec.tags", "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass")],
    ),
    Case("tag-", EC2, {"spec.tags": {"": "x"}}, [("spec.tags", "empty tag keys aren't supported")]),
    Case(
        "http-tokens",
        EC2,
        {"spec.metadataOptions.httpTokens": "sometimes"},
        [
            (
                "spec.metadataOptions.httpTokens",
                "unsupported value 'sometimes'; expected one of: required, optional",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "hop-limit-zero",
        EC2,
        {"spec.metadataOptions.httpPutResponseHopLimit": 0},
        [("spec.metadataOptions.httpPutResponseHopLimit", "must be >= 1, got 0")],
    ),
    Case(
        "hop-limit-65",
        EC2,
        {"spec.metadataOptions.httpPutResponseHopLimit": 65},
        [("spec.metadataOptions.httpPutResponseHopLimit", "must be <= 64, got 65")],
    ),
    Case(
        "two-root-volumes",
        EC2,
        {
            "spec.blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
                {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
            ]
        },
        [("spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume")],
    ),
    Case(
        "volume-type",
        EC2,
        {"spec.blockDeviceMappings[0].ebs.volumeType": "gp9"},
        [
            (
                "spec.blockDeviceMappings[0].ebs.volumeType",
                "unsupported value 'gp9'; expected one of: standard, io1, io2, gp2, sc1, st1, gp3",
            ),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "volume-size-shape",
        EC2,
        {"spec.blockDeviceMappings[0].ebs.volumeSize": "big"},
        [
            (
                "spec.blockDeviceMappings[0].ebs.volumeSize",
                "invalid value 'big': expected a size like 20Gi, 100G or 2Ti within EBS's range",
            )
        ],
    ),
    Case(
        "volume-size-range",
        EC2,
        {"spec.blockDeviceMappings[0].ebs.volumeSize": "65Ti"},
        [
            (
                "spec.blockDeviceMappings[0].ebs.volumeSize",
                "invalid value '65Ti': expected a size like 20Gi, 100G or 2Ti within EBS's range",
            )
        ],
    ),
    Case(
        "ebs-without-size-or-snapshot",
        EC2,
        {"spec.blockDeviceMappings[0].ebs": {"volumeType": "gp3"}},
        [("spec.blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined")],
    ),
    Case(
        "instance-store-policy",
        EC2,
        {"spec.instanceStorePolicy": "RAID1"},
        [
            ("spec.instanceStorePolicy", "unsupported value 'RAID1'; expected one of: RAID0"),
            NOT_CHECKED_ERROR,
        ],
    ),
    Case(
        "public-ip-string",
        EC2,
        {"spec.associatePublicIPAddress": "yes"},
        [
            ("spec.associatePublicIPAddress", "must be a boolean, got string 'yes'"),
            NOT_CHECKED_ERROR,
        ],
    ),
]


NODECLAIM_CASES = [
    Case(
        "nodeclaim-requirements-missing",
        NC,
        {"spec.requirements": DELETE},
        [("spec.requirements", "is required"), NOT_CHECKED_ERROR],
    ),
    Case(
        "nodeclaim-request",
        NC,
        {"spec.resources.requests.cpu": "two"},
        [
            (
                "spec.resources.requests.cpu",
                "invalid value 'two': expected a quantity like 500m, 2, 4Gi or 100G",
            )
        ],
    ),
]


WARNING_CASES = [
    Case(
        "label-karpenter.k8s.aws/ec2nodeclass",
        NP,
        {"spec.template.metadata.labels": {"karpenter.k8s.aws/ec2nodeclass": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "karpenter.k8s.aws/ec2nodeclass" is set by Joiner itself',
            )
        ],
    ),
    Case(
        "label-kubernetes.io/team",
        NP,
        {"spec.template.metadata.labels": {"kubernetes.io/team": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "kubernetes.io/team" is in the domain "kubernetes.io": the kubelet '
                "refuses to register a node with it (upstream Karpenter marks such a NodePool "
                "not ready)",
            )
        ],
    ),
    Case(
        "label-example.k8s.io/team",
        NP,
        {"spec.template.metadata.labels": {"example.k8s.io/team": "x"}},
        [
            (
                "spec.template.metadata.labels",
                'label "example.k8s.io/team" is in the domain "k8s.io": the kubelet refuses to '
                "register a node with it (upstream Karpenter marks such a NodePool not ready)",
            )
        ],
    ),
    Case(
        "exists-with-values",
        NP,
        {
            "spec.template.spec.requirements[0]": {
                "key": "example.com/a",
                "operator": "Exists",
                "values": ["x"],
            }
        },
        [
            (
                "spec.template.spec.requirements[0].values",
                "Exists and DoesNotExist take no values; Joiner ignores them",
            )
        ],
    ),
    Case(
        "taint-duplicate",
        NP,
        {
            "spec.template.spec.taints": [
                {"key": "a", "effect": "NoSchedule"},
                {"key": "a", "effect": "NoSchedule"},
            ]
        },
        [
            (
                "spec.template.spec",
                "taints and startupTaints repeat the key/effect pair a:NoSchedule; a node "
                "carries the first of them (taints before startupTaints)",
            )
        ],
    ),
    Case(
        "taint-duplicate-across",
        NP,
        {
            "spec.template.spec.taints": [{"key": "a", "value": "1", "effect": "NoSchedule"}],
            "spec.template.spec.startupTaints": [
                {"key": "a", "value": "2", "effect": "NoSchedule"}
            ],
        },
        [
            (
                "spec.template.spec",
                "taints and startupTaints repeat the key/effect pair a:NoSchedule; a node "
                "carries the first of them (taints before startupTaints)",
            )
        ],
    ),
    Case(
        "budget-cron-out-of-range",
        NP,
        {"spec.disruption.budgets[1].schedule": "61 * * * *"},
        [
            (
                "spec.disruption.budgets[1].schedule",
                "'61 * * * *' is not a cron schedule Joiner can read (5 fields like '0 9 * * "
                "1-5', or a macro like @daily); the budget then always applies",
            )
        ],
    ),
    Case(
        "device-name-missing",
        EC2,
        {"spec.blockDeviceMappings[0].deviceName": DELETE},
        [
            (
                "spec.blockDeviceMappings[0]",
                "a mapping without deviceName: Joiner leaves it out of the launch template",
            )
        ],
    ),
    Case(
        "max-pods-negative",
        EC2,
        {"spec.kubelet.maxPods": -1},
        [("spec.kubelet.maxPods", "must be >= 0, got -1; Joiner ignores this setting")],
    ),
    Case(
        "pods-per-core-negative",
        EC2,
        {"spec.kubelet.podsPerCore": -1},
        [("spec.kubelet.podsPerCore", "must be >= 0, got -1; Joiner ignores this setting")],
    ),
    Case(
        "eviction-hard-signal",
        EC2,
        {"spec.kubelet.evictionHard": {"memory.free": "5%"}},
        [
            (
                "spec.kubelet.evictionHard",
                "valid keys for evictionHard are ['memory.available', 'nodefs.available', "
                "'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', "
                "'pid.available']; Joiner ignores this setting",
            )
        ],
    ),
    Case(
        "eviction-hard-value",
        EC2,
        {"spec.kubelet.evictionHard": {"memory.available": "150%"}},
        [
            (
                "spec.kubelet.evictionHard.memory.available",
                "invalid value '150%': expected a percentage or a quantity; Joiner ignores this "
                "setting",
            )
        ],
    ),
    Case(
        "eviction-soft-without-grace",
        EC2,
        {"spec.kubelet.evictionSoft": {"memory.available": "1Gi", "nodefs.available": "10%"}},
        [
            (
                "spec.kubelet.evictionSoft",
                "every evictionSoft signal needs a matching evictionSoftGracePeriod; Joiner "
                "ignores this setting",
            )
        ],
    ),
    Case(
        "grace-without-eviction-soft",
        EC2,
        {"spec.kubelet.evictionSoft": DELETE},
        [
            (
                "spec.kubelet.evictionSoftGracePeriod",
                "every evictionSoftGracePeriod signal needs a matching evictionSoft; Joiner "
                "ignores this setting",
            )
        ],
    ),
    Case(
        "image-gc-thresholds",
        EC2,
        {"spec.kubelet.imageGCLowThresholdPercent": 85},
        [
            (
                "spec.kubelet.imageGCHighThresholdPercent",
                "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent; "
                "Joiner ignores this setting",
            )
        ],
    ),
    Case(
        "kube-reserved-key",
        EC2,
        {"spec.kubelet.kubeReserved": {"gpu": "1"}},
        [
            (
                "spec.kubelet.kubeReserved",
                "valid keys for kubeReserved are ['cpu', 'memory', 'ephemeral-storage', 'pid']; "
                "Joiner ignores this setting",
            )
        ],
    ),
    Case(
        "system-reserved-negative",
        EC2,
        {"spec.kubelet.systemReserved": {"cpu": "-100m"}},
        [
            (
                "spec.kubelet.systemReserved",
                "systemReserved values cannot be negative quantities; Joiner ignores this setting",
            )
        ],
    ),
    Case(
        "eviction-soft-signal",
        EC2,
        {
            "spec.kubelet.evictionSoft": {"memory.free": "1Gi"},
            "spec.kubelet.evictionSoftGracePeriod": {"memory.free": "1m"},
        },
        [
            (
                "spec.kubelet.evictionSoft",
                "valid keys for evictionSoft are ['memory.available', 'nodefs.available', "
                "'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', "
                "'pid.available']; Joiner ignores this setting",
            ),
            (
                "spec.kubelet.evictionSoftGracePeriod",
                "valid keys for evictionSoftGracePeriod are ['memory.available', "
                "'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', "
                "'imagefs.inodesFree', 'pid.available']; Joiner ignores this setting",
            ),
        ],
    ),
    Case(
        "system-reserved-key",
        EC2,
        {"spec.kubelet.systemReserved": {"cores": "1"}},
        [
            (
                "spec.kubelet.systemReserved",
                "valid keys for systemReserved are ['cpu', 'memory', 'ephemeral-storage', "
                "'pid']; Joiner ignores this setting",
            )
        ],
    ),
    Case(
        "kube-reserved-negative",
        EC2,
        {"spec.kubelet.kubeReserved": {"memory": "-1Gi"}},
        [
            (
                "spec.kubelet.kubeReserved",
                "kubeReserved values cannot be negative quantities; Joiner ignores this setting",
            )
        ],
    ),
    Case(
        "nodeclaim-taints",
        NC,
        {
            "spec.taints": [{"key": "a", "effect": "NoExecute"}],
            "spec.startupTaints": [{"key": "a", "effect": "NoExecute"}],
        },
        [
            (
                "spec",
                "taints and startupTaints repeat the key/effect pair a:NoExecute; a node "
                "carries the first of them (taints before startupTaints)",
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
        [(f"{TPL}.nodeClassRef", "nodeClassRef.group is immutable")],
        old_changes={},
    ),
    Case(
        "nodepool-kind-immutable",
        NP,
        {f"{TPL}.nodeClassRef.kind": "OtherNodeClass"},
        [(f"{TPL}.nodeClassRef", "nodeClassRef.kind is immutable")],
        old_changes={},
    ),
    Case(
        "nodepool-made-static",
        NP,
        {"spec.replicas": 2, "spec.limits": DELETE},
        [
            (
                "spec",
                "Cannot transition NodePool between static (replicas set) and dynamic "
                "(replicas unset) provisioning modes",
            )
        ],
        old_changes={"spec.limits": DELETE},
    ),
]

ALL_REJECTING = NODEPOOL_CASES + EC2NODECLASS_CASES + NODECLAIM_CASES
