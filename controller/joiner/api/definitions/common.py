"""Vocabulary shared by the kind schemas: patterns, label-key checks, requirements,
taints, node class references, conditions.

The server-side checks follow upstream Karpenter's CRDs exactly (same accepted set, same
reporting node), so a manifest Karpenter's CRDs accept is one Joiner's accept. Where
Joiner knows more (labels the kubelet refuses, duplicate taints), it gives advice."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api.objectmeta import is_label_value, is_qualified_name
from joiner.api.requirements import OPERATORS
from joiner.api.schema import (
    Advice,
    Rule,
    Schema,
    array,
    integer,
    obj,
    string,
)

DURATION = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION_HINT = "expected a duration like 30s, 10m or 1h30m"
DURATION_OR_NEVER_HINT = "expected a duration like 30s, 10m or 1h30m, or Never"
# A label key (DNS-subdomain prefix, name) as Karpenter's CRDs check requirement and taint
# keys; upstream checks taint values with it too.
QUALIFIED_NAME = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_cel_string(v) for v in values) + "]"


def cel_int(text: str) -> int:
    """CEL's ``int(string)``: a base-10 int64 with an optional sign, else an error."""
    if not _INTEGER.fullmatch(text) or not INT64_MIN <= int(text) <= INT64_MAX:
        raise ValueError(f"{text!r} is not an int64")
    return int(text)


# -- label keys a NodePool may not use ---------------------------------------------------------


@dataclass(frozen=True)
class _KeyCheck:
    """A check on one label key: ``cel(var)`` is the CEL predicate over the key named
    ``var``; ``ok`` is the same predicate in Python. ``describe(key)`` and
    ``cel_message(var)`` name the rejected key, when ``message`` does not already."""

    cel: Callable[[str], str]
    message: str
    ok: Callable[[str], bool]
    describe: Callable[[str], str] | None = None
    cel_message: Callable[[str], str] | None = None


def _head(key: str) -> str:
    """What CEL's ``key.find('^[^/]+')`` gives: the text before the first '/' (the whole
    key when it has none; empty when it starts with '/')."""
    match = re.match(r"[^/]+", key)
    return match.group(0) if match else ""


def _domain_check(domain: str, allowed: frozenset[str]) -> _KeyCheck:
    """Keys whose part before the first '/' ends with ``domain`` (so also "karpenter.sh"
    without a name, and "notkarpenter.sh/x", as upstream's CRDs decide), except ``allowed``."""
    return _KeyCheck(
        cel=lambda var: (
            f"{var} in {cel_list(sorted(allowed))}"
            f" || !{var}.find('^[^/]+').endsWith({_cel_string(domain)})"
        ),
        message=f'label domain "{domain}" is restricted',
        ok=lambda key: key in allowed or not _head(key).endswith(domain),
        describe=lambda key: f'label "{key}" is in the restricted domain "{domain}"',
        cel_message=lambda var: (
            f"'label \"' + {var} + '\" is in the restricted domain \"{domain}\"'"
        ),
    )


def _named_check(key: str) -> _KeyCheck:
    return _KeyCheck(
        lambda var: f"{var} != {_cel_string(key)}",
        f'label "{key}" is restricted',
        lambda k: k != key,
    )


def restricted_key_checks(nodepool: bool) -> tuple[_KeyCheck, ...]:
    """The keys upstream's CRDs refuse in a NodePool template (labels and requirement
    keys) or, without the nodepool key, in a NodeClaim's requirements."""
    named = (wk.NODEPOOL, wk.HOSTNAME) if nodepool else (wk.HOSTNAME,)
    return (
        _domain_check(wk.KARPENTER_GROUP, wk.KARPENTER_LABELS_A_POOL_MAY_USE),
        *(_named_check(key) for key in named),
        _domain_check(wk.AWS_GROUP, wk.AWS_LABELS_A_POOL_MAY_USE),
    )


def overlay_key_checks() -> tuple[_KeyCheck, ...]:
    """The keys upstream's NodeOverlay CRD refuses in a requirement."""
    return (
        _domain_check(wk.KARPENTER_GROUP, wk.KARPENTER_LABELS_A_POOL_MAY_USE),
        _named_check(wk.HOSTNAME),
        _domain_check(wk.AWS_GROUP, wk.AWS_LABELS_AN_OVERLAY_MAY_USE),
    )


def key_rules(checks: tuple[_KeyCheck, ...]) -> tuple[Rule, ...]:
    """Rules for a single label key (a requirement's ``key``)."""
    return tuple(
        Rule(
            check.message,
            check.ok,
            cel=check.cel("self"),
            message_expression=check.cel_message("self") if check.cel_message else None,
            describe=check.describe,
        )
        for check in checks
    )


def map_key_rules(checks: tuple[_KeyCheck, ...]) -> tuple[Rule, ...]:
    """The same rules over every key of a map (template labels)."""
    return tuple(_map_key_rule(check) for check in checks)


def _map_key_rule(check: _KeyCheck) -> Rule:
    def first_rejected(labels: dict[str, str]) -> str:
        return next(key for key in labels if not check.ok(key))

    describe, cel_message = check.describe, check.cel_message
    return Rule(
        check.message,
        lambda labels: all(check.ok(key) for key in labels),
        cel=f"self.all(k, {check.cel('k')})",
        message_expression=(
            cel_message(f"self.filter(k, !({check.cel('k')}))[0]") if cel_message else None
        ),
        describe=(lambda labels: describe(first_rejected(labels))) if describe else None,
    )


# -- what Joiner adds about label keys ---------------------------------------------------------

RESTRICTED_LABEL = "restricted-label"
INVALID_LABEL = "invalid-label"
UNKNOWN_AWS_LABEL = "unknown-aws-label"


def joiner_restricted(key: str, checks: tuple[_KeyCheck, ...]) -> bool:
    """Restricted for Joiner (``labels.is_restricted_label``) though the API server lets
    it through (``checks``): kubernetes.io and k8s.io keys, karpenter.k8s.aws/ec2nodeclass."""
    return (
        wk.is_restricted_label(key)
        and key not in wk.AWS_LABELS_JOINER_DOES_NOT_DERIVE  # their own advice
        and all(check.ok(key) for check in checks)
    )


def _restricted_message(key: str) -> str:
    head = _head(key)
    domain = next((d for d in wk.KUBELET_RESTRICTED_LABEL_DOMAINS if head.endswith(d)), None)
    if domain is None:
        return f'label "{key}" is set by Joiner itself'
    return (
        f'label "{key}" is in the domain "{domain}": the kubelet refuses to register a node '
        "with it (upstream Karpenter marks such a NodePool not ready)"
    )


def _unknown_aws_message(key: str) -> str:
    return (
        f'label "{key}" is not one Joiner derives for instance types, so it filters no '
        "instance type by it"
    )


def _invalid_key_message(key: str) -> str:
    return f"{key!r} is not a valid label key; {_NO_JOIN}"


_NO_JOIN = "the kubelet refuses it, so nodes would never register"


def _key_advice(
    code: str, ok: Callable[[str], bool], say: Callable[[str], str], over_map: bool
) -> Advice:
    """Advice on one label key, or (``over_map``) on the first bad key of a label map."""
    if not over_map:
        return Advice(code, code, ok, say)
    return Advice(
        code,
        code,
        lambda labels: all(ok(key) for key in labels),
        lambda labels: say(next(key for key in labels if not ok(key))),
    )


def label_key_advice(checks: tuple[_KeyCheck, ...], over_map: bool) -> tuple[Advice, ...]:
    """Advice on a requirement's key, or (``over_map``) on every key of a label map."""

    def not_restricted(key: str) -> bool:
        return not joiner_restricted(key, checks)

    def derived(key: str) -> bool:
        return key not in wk.AWS_LABELS_JOINER_DOES_NOT_DERIVE

    advice = [
        _key_advice(RESTRICTED_LABEL, not_restricted, _restricted_message, over_map),
        _key_advice(UNKNOWN_AWS_LABEL, derived, _unknown_aws_message, over_map),
    ]
    if over_map:  # a requirement's key has a pattern the server checks; a map key none
        advice.append(_key_advice(INVALID_LABEL, is_qualified_name, _invalid_key_message, True))
    return tuple(advice)


def _listed_values(requirement: dict[str, Any]) -> list[str]:
    """The values a node's label is compared with (Gt and the like take a number)."""
    if requirement["operator"] not in ("In", "NotIn"):
        return []
    return list(requirement.get("values") or [])


def label_value_advice() -> Advice:
    return Advice(
        INVALID_LABEL,
        "invalid label value",
        lambda r: all(is_label_value(v) for v in _listed_values(r)),
        lambda r: (
            f"{next(v for v in _listed_values(r) if not is_label_value(v))!r} is not a valid "
            "label value (at most 63 letters, digits, '-', '_' or '.'): no node can have it"
        ),
        field_path=".values",
    )


# -- shared pieces ----------------------------------------------------------------------------


def duration_string(description: str, never: bool, **options: Any) -> Schema:
    return string(
        description,
        pattern=DURATION_OR_NEVER if never else DURATION,
        hint=DURATION_OR_NEVER_HINT if never else DURATION_HINT,
        **options,
    )


def numeric_ok(r: dict[str, Any]) -> bool:
    """A Gt/Lt/Gte/Lte requirement has one integer value >= 0 (others pass)."""
    return r["operator"] not in NUMERIC_OPERATORS or (
        len(r["values"]) == 1 and cel_int(r["values"][0]) >= 0
    )


def requirement_list_rules() -> tuple[Rule, ...]:
    """Upstream's rules, on the list: a requirement without ``values`` where they are
    needed fails like the CEL evaluation does (no such key)."""
    numeric = cel_list(NUMERIC_OPERATORS)
    return (
        Rule(
            "requirements with operator 'In' must have a value defined",
            lambda reqs: all(r["operator"] != "In" or len(r["values"]) != 0 for r in reqs),
            cel="self.all(x, x.operator != 'In' || x.values.size() != 0)",
        ),
        Rule(
            "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
            "integer value >= 0",
            lambda reqs: all(numeric_ok(r) for r in reqs),
            cel=f"self.all(x, !(x.operator in {numeric})"
            " || (x.values.size() == 1 && int(x.values[0]) >= 0))",
        ),
        Rule(
            "requirements with 'minValues' must have at least that many values in 'values'",
            lambda reqs: all(
                not (r["operator"] == "In" and "minValues" in r)
                or len(r["values"]) >= r["minValues"]
                for r in reqs
            ),
            cel="self.all(x, !(x.operator == 'In' && has(x.minValues))"
            " || x.values.size() >= x.minValues)",
        ),
    )


VALUES_IGNORED = "values-ignored"


def requirement(checks: tuple[_KeyCheck, ...], advise: bool) -> Schema:
    """A node selector requirement; ``checks`` are the keys it may not name. ``advise``
    adds Joiner's advice (NodePool templates, which people write)."""
    return obj(
        "A scheduling requirement on a node label.",
        {
            "key": string(
                "The label key.",
                max_length=316,
                pattern=QUALIFIED_NAME,
                hint="expected a label key like example.com/team",
                rules=key_rules(checks),
                advice=label_key_advice(checks, over_map=False) if advise else (),
            ),
            "operator": string("How values are compared.", enum=OPERATORS),
            "values": array(string(), "The values the operator compares."),
            "minValues": integer(
                "Least number of distinct values the launch must be flexible across.",
                minimum=1,
                maximum=50,
            ),
        },
        required=("key", "operator"),
        advice=_requirement_advice() if advise else (),
    )


def _requirement_advice() -> tuple[Advice, ...]:
    return (
        Advice(
            VALUES_IGNORED,
            "Exists and DoesNotExist take no values; Joiner ignores them",
            lambda r: r["operator"] not in ("Exists", "DoesNotExist") or not r.get("values"),
            field_path=".values",
        ),
        label_value_advice(),
    )


def requirements(checks: tuple[_KeyCheck, ...], advise: bool) -> Schema:
    return array(
        requirement(checks, advise),
        "Requirements on node labels (instance type, zone, capacity type, ...).",
        max_items=100,
        rules=requirement_list_rules(),
    )


INVALID_TAINT = "invalid-taint"


def taint() -> Schema:
    return obj(
        "A node taint.",
        {
            "key": string(
                "Taint key.", min_length=1, pattern=QUALIFIED_NAME, hint="expected a taint key"
            ),
            "value": string(
                "Taint value.",
                pattern=QUALIFIED_NAME,
                hint="expected a taint value like example.com/x or gpu",
                advice=(
                    Advice(
                        INVALID_TAINT,
                        "taint value is not a label value",
                        is_label_value,
                        lambda value: (
                            f"{value!r} is not a valid taint value for a node (at most 63 "
                            f"letters, digits, '-', '_' or '.'); {_NO_JOIN}"
                        ),
                    ),
                ),
            ),
            "effect": string("Taint effect.", enum=TAINT_EFFECTS),
            "timeAdded": string("When the taint was added.", format="date-time"),
        },
        required=("key", "effect"),
    )


def _taint_pairs(spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    taints = list(spec.get("taints") or []) + list(spec.get("startupTaints") or [])
    return [(t.get("key"), t.get("effect")) for t in taints]


def _first_repeat(spec: dict[str, Any]) -> str:
    seen: set[tuple[Any, Any]] = set()
    for pair in _taint_pairs(spec):
        if pair in seen:
            return f"{pair[0]}:{pair[1]}"
        seen.add(pair)
    return ""


DUPLICATE_TAINT = "duplicate-taint"
# Upstream's CRDs accept a repeated pair; Karpenter's runtime validation refuses the pool.
NO_DUPLICATE_TAINTS = Advice(
    DUPLICATE_TAINT,
    "taints and startupTaints repeat a key/effect pair",
    lambda spec: len(set(_taint_pairs(spec))) == len(_taint_pairs(spec)),
    lambda spec: (
        f"taints and startupTaints repeat the key/effect pair {_first_repeat(spec)}; "
        "a node carries the first of them (taints before startupTaints)"
    ),
)


def not_empty(message: str) -> Rule:
    """An empty string is refused (a field upstream requires to have content)."""
    return Rule(message, lambda value: value != "", cel="self != ''")


NODE_CLASS_KIND = "node-class-kind"


def node_class_ref(immutable_group_kind: bool) -> Schema:
    rules = (
        (
            Rule(
                "nodeClassRef.group is immutable",
                lambda old, new: old["group"] == new["group"],
                cel="self.group == oldSelf.group",
                transition=True,
            ),
            Rule(
                "nodeClassRef.kind is immutable",
                lambda old, new: old["kind"] == new["kind"],
                cel="self.kind == oldSelf.kind",
                transition=True,
            ),
        )
        if immutable_group_kind
        else ()
    )
    return obj(
        "The node class (EC2NodeClass) nodes are launched with.",
        {
            "group": string(
                "API group of the node class.",
                pattern=r"^[^/]*$",
                hint="expected an API group like karpenter.k8s.aws",
                rules=(not_empty("group may not be empty"),),
            ),
            "kind": string("Kind of the node class.", rules=(not_empty("kind may not be empty"),)),
            "name": string("Name of the node class.", rules=(not_empty("name may not be empty"),)),
        },
        required=("group", "kind", "name"),
        rules=rules,
        advice=(
            Advice(
                NODE_CLASS_KIND,
                "Joiner's only node class is EC2NodeClass (karpenter.k8s.aws)",
                lambda ref: (ref["group"], ref["kind"]) == (wk.AWS_GROUP, "EC2NodeClass"),
                lambda ref: (
                    f"Joiner's only node class is EC2NodeClass (karpenter.k8s.aws), not "
                    f"{ref['kind']} ({ref['group']}); it uses the EC2NodeClass named "
                    f"{ref['name']!r}"
                ),
            ),
        ),
    )


def conditions() -> Schema:
    return array(
        obj(
            "A status condition.",
            {
                "type": string(max_length=316),
                "status": string(enum=("True", "False", "Unknown")),
                "reason": string(max_length=1024),
                "message": string(max_length=32768),
                "lastTransitionTime": string(format="date-time"),
                "observedGeneration": integer(minimum=0),
            },
            required=("type", "status"),
        ),
        "Status conditions.",
    )
