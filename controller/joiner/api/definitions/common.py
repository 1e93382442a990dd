"""Vocabulary shared by the kind schemas: patterns, label-key checks, requirements,
taints, node class references, conditions."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api.requirements import OPERATORS
from joiner.api.schema import (
    Rule,
    Schema,
    array,
    immutable,
    integer,
    obj,
    string,
)

DURATION = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION_HINT = "expected a duration like 30s, 10m or 1h30m"
DURATION_OR_NEVER_HINT = "expected a duration like 30s, 10m or 1h30m, or Never"
QUALIFIED_NAME = (
    r"^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_cel_string(v) for v in values) + "]"


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


def _domain_regex(domains: Iterable[str]) -> str:
    """Keys whose domain (the part before '/') ends with one of ``domains``."""
    return "^[^/]*(" + "|".join(d.replace(".", r"\.") for d in domains) + ")/"


def _domain_check(domain: str, allowed: frozenset[str]) -> _KeyCheck:
    inside = _domain_regex([domain])
    excepted = _domain_regex(wk.LABEL_DOMAIN_EXCEPTIONS)
    allowed = frozenset(key for key in allowed if re.match(inside, key))
    return _KeyCheck(
        cel=lambda var: (
            f"{var} in {cel_list(sorted(allowed))}"
            f" || !{var}.matches({_cel_string(inside)}) || {var}.matches({_cel_string(excepted)})"
        ),
        message=f'label domain "{domain}" is restricted',
        ok=lambda key: (
            key in allowed or re.match(inside, key) is None or re.match(excepted, key) is not None
        ),
        describe=lambda key: f'label "{key}" is in the restricted domain "{domain}"',
        cel_message=lambda var: (
            f"'label \"' + {var} + '\" is in the restricted domain \"{domain}\"'"
        ),
    )


def _restricted_key_checks() -> tuple[_KeyCheck, ...]:
    """The keys ``labels.is_restricted_label`` rejects, one message per reason: the
    restricted keys by name, then the reserved domains (minus well-known labels and the
    allowed sub-domains). A test proves the union equals ``is_restricted_label``."""
    restricted = wk.RESTRICTED_LABELS | {wk.EC2NODECLASS}
    explicit = tuple(
        _KeyCheck(
            lambda var, key=key: f"{var} != '{key}'",
            f'label "{key}" is restricted',
            lambda k, key=key: k != key,
        )
        for key in sorted(restricted)
    )
    # Keys reported by name above are let through here so that each is reported once.
    allowed = frozenset(wk.WELL_KNOWN_LABELS | set(wk.BETA_ALIASES)) | restricted
    domains = tuple(_domain_check(d, allowed) for d in wk.RESTRICTED_LABEL_DOMAINS)
    return explicit + domains


RESTRICTED_KEY_CHECKS = _restricted_key_checks()


def _key_rules() -> tuple[Rule, ...]:
    """Rules for a single label key (a requirement's ``key``)."""
    return tuple(
        Rule(
            check.message,
            check.ok,
            cel=check.cel("self"),
            message_expression=check.cel_message("self") if check.cel_message else None,
            describe=check.describe,
        )
        for check in RESTRICTED_KEY_CHECKS
    )


def map_key_rules() -> tuple[Rule, ...]:
    """The same rules over every key of a map (template labels)."""
    return tuple(_map_key_rule(check) for check in RESTRICTED_KEY_CHECKS)


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


# -- shared pieces ----------------------------------------------------------------------------


def duration_string(description: str, never: bool, **options: Any) -> Schema:
    return string(
        description,
        pattern=DURATION_OR_NEVER if never else DURATION,
        hint=DURATION_OR_NEVER_HINT if never else DURATION_HINT,
        **options,
    )


def _values_count(raw: dict[str, Any]) -> int:
    return len(raw.get("values") or [])


def _requirement_rules() -> tuple[Rule, ...]:
    numeric = cel_list(NUMERIC_OPERATORS)
    return (
        Rule(
            "requirements with operator 'In' must have a value defined",
            lambda r: r["operator"] != "In" or _values_count(r) > 0,
            cel="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",
            field_path=".values",
        ),
        Rule(
            "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
            "integer value >= 0",
            lambda r: (
                r["operator"] not in NUMERIC_OPERATORS
                or (_values_count(r) == 1 and re.fullmatch("[0-9]+", r["values"][0]) is not None)
            ),
            cel=f"!(self.operator in {numeric}) || (has(self.values) && size(self.values) == 1"
            " && self.values[0].matches('^[0-9]+$'))",
            field_path=".values",
        ),
        Rule(
            "requirements with operator 'Exists' or 'DoesNotExist' must not have values",
            lambda r: r["operator"] not in ("Exists", "DoesNotExist") or _values_count(r) == 0,
            cel="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values)"
            " || size(self.values) == 0",
            field_path=".values",
        ),
        Rule(
            "requirements with 'minValues' must have at least that many values in 'values'",
            lambda r: (
                not (r["operator"] == "In" and "minValues" in r)
                or _values_count(r) >= r["minValues"]
            ),
            cel="!(self.operator == 'In' && has(self.minValues))"
            " || (has(self.values) && size(self.values) >= self.minValues)",
            field_path=".values",
        ),
    )


def requirement(restrict_keys: bool) -> Schema:
    """A node selector requirement; a NodePool may not require restricted keys."""
    return obj(
        "A scheduling requirement on a node label.",
        {
            "key": string(
                "The label key.",
                max_length=316,
                pattern=QUALIFIED_NAME,
                hint="expected a label key like example.com/team",
                rules=_key_rules() if restrict_keys else (),
            ),
            "operator": string("How values are compared.", enum=OPERATORS),
            "values": array(string(max_length=63), "The values the operator compares."),
            "minValues": integer(
                "Least number of distinct values the launch must be flexible across.",
                minimum=1,
                maximum=50,
            ),
        },
        required=("key", "operator"),
        rules=_requirement_rules(),
    )


def taint() -> Schema:
    return obj(
        "A node taint.",
        {
            "key": string(
                "Taint key.", min_length=1, pattern=QUALIFIED_NAME, hint="expected a taint key"
            ),
            "value": string(
                "Taint value.", pattern=LABEL_VALUE, hint="expected a label-style value"
            ),
            "effect": string("Taint effect.", enum=TAINT_EFFECTS),
            "timeAdded": string("When the taint was added.", format="date-time"),
        },
        required=("key", "effect"),
    )


def _taint_pairs(spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    taints = list(spec.get("taints") or []) + list(spec.get("startupTaints") or [])
    return [(t.get("key"), t.get("effect")) for t in taints]


# Joiner's own check: upstream's CRDs accept a repeated pair (a node then carries one taint).
NO_DUPLICATE_TAINTS = Rule(
    "taints and startupTaints may not repeat a key/effect pair",
    lambda spec: len(set(_taint_pairs(spec))) == len(_taint_pairs(spec)),
)


def node_class_ref(immutable_group_kind: bool) -> Schema:
    def part(description: str, field: str, **options: Any) -> Schema:
        rules = (immutable(f"nodeClassRef.{field} is immutable"),) if immutable_group_kind else ()
        return string(description, min_length=1, rules=rules, **options)

    return obj(
        "The node class (EC2NodeClass) nodes are launched with.",
        {
            "group": part(
                "API group of the node class.",
                "group",
                max_length=253,
                pattern=r"^[^/]*$",
                hint="expected an API group like karpenter.k8s.aws",
            ),
            "kind": part(
                "Kind of the node class.",
                "kind",
                max_length=63,
                pattern=r"^[A-Za-z0-9]+$",
                hint="expected a kind like EC2NodeClass",
            ),
            "name": string("Name of the node class.", min_length=1, max_length=253),
        },
        required=("group", "kind", "name"),
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
