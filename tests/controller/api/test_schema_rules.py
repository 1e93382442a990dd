"""The schema itself: every CEL rule compiles and agrees with its Python twin on every
sample, every rule has a rejecting sample, the label rules are exactly
``is_restricted_label``, and the schema is structural (defaults valid, patterns compile)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import celpy
import pytest
from api_samples import ALL_REJECTING, UPDATE_CASES, changed, good_manifests, load
from joiner.api import labels as wk
from joiner.api.definitions import KINDS, RESTRICTED_KEY_CHECKS, Kind
from joiner.api.schema import Rule, Schema
from joiner.api.validation import (
    apply_defaults,
    is_malformed,
    kind_of,
    schema_errors,
    validate_value,
    walk,
)


@functools.cache
def _program(cel: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(cel))


def _cel(cel: str, **variables: Any) -> bool:
    result = _program(cel).evaluate({k: celpy.json_to_cel(v) for k, v in variables.items()})
    assert not isinstance(result, Exception), f"{cel!r} raised {result!r}"
    return bool(result)


def _cel_text(cel: str, **variables: Any) -> str:
    result = _program(cel).evaluate({k: celpy.json_to_cel(v) for k, v in variables.items()})
    assert isinstance(result, str), f"{cel!r} gave {result!r}"
    return str(result)


def _nodes(schema: Schema) -> Iterator[Schema]:
    yield schema
    for child in (*schema.properties.values(), schema.values, schema.items):
        if child is not None:
            yield from _nodes(child)


def _all_rules() -> list[Rule]:
    return [rule for kind in KINDS for node in _nodes(kind.schema) for rule in node.rules]


def _samples() -> list[dict[str, Any]]:
    return list(good_manifests().values()) + [case.obj() for case in ALL_REJECTING]


def _evaluations(obj: dict[str, Any]) -> Iterator[tuple[Rule, Any, str]]:
    """(rule, value, path) for every rule reached in a sample that Python can evaluate."""
    kind, _ = kind_of(obj)
    assert kind is not None
    defaulted = apply_defaults(obj)
    failed = [error.path for error in schema_errors(kind.schema, defaulted)]
    for node, value, path in walk(kind.schema, defaulted):
        if is_malformed(failed, path):
            continue  # malformed on purpose; neither CEL nor Python rules judge it
        for rule in node.rules:
            if not rule.transition:
                yield rule, value, path


def test_every_cel_rule_compiles() -> None:
    for rule in _all_rules():
        if rule.cel:
            _program(rule.cel)


def test_cel_rules_agree_with_their_python_twins_on_every_sample() -> None:
    seen: set[tuple[str, str]] = set()
    for obj in _samples():
        for rule, value, path in _evaluations(obj):
            key = (rule.cel or "", json.dumps(value, sort_keys=True))
            if rule.cel and key not in seen:  # samples share most of their content
                seen.add(key)
                holds = rule.holds(value)
                assert _cel(rule.cel, self=value) == holds, (rule.message, path)
                if not holds and rule.message_expression and rule.describe:
                    assert _cel_text(rule.message_expression, self=value) == rule.describe(value)
    assert len(seen) > 500


def test_transition_rules_agree_with_cel() -> None:
    for case in UPDATE_CASES:
        old = apply_defaults(changed(load(case.base), case.old_changes or {}))
        new = apply_defaults(case.obj())
        kind, _ = kind_of(new)
        assert kind is not None
        olds = {path: value for _, value, path in walk(kind.schema, old)}
        for node, value, path in walk(kind.schema, new):
            for rule in node.rules:
                if rule.transition and path in olds:
                    expected = rule.holds(olds[path], value)
                    assert _cel(rule.cel or "", self=value, oldSelf=olds[path]) == expected


def test_every_rule_has_a_rejecting_sample() -> None:
    failed = {
        id(rule)
        for obj in _samples()
        for rule, value, _ in _evaluations(obj)
        if not rule.holds(value)
    }
    transition = {id(rule) for rule in _all_rules() if rule.transition}
    untested = {
        rule.message
        for rule in _all_rules()
        if id(rule) not in failed and id(rule) not in transition
    }
    # Rules built by one factory (the requirement schema in NodePool, NodeClaim and
    # EC2NodeClass status) share a message; one rejecting sample per message is enough.
    tested = {rule.message for rule in _all_rules() if id(rule) in failed}
    assert untested - tested == set()


KEYS = sorted(
    wk.WELL_KNOWN_LABELS
    | set(wk.BETA_ALIASES)
    | wk.RESTRICTED_LABELS
    | {
        "team",
        "example.com/team",
        "karpenter.sh/custom",
        "karpenter.k8s.aws/custom",
        "sub.karpenter.sh/x",
        "kubernetes.io/team",
        "node.kubernetes.io/pool",
        "node-restriction.kubernetes.io/x",
        "example.k8s.io/x",
        "kops.k8s.io/instancegroup",
        "k8s.io/x",
        "karpenter.sh",
        "notkarpenter.sh/x",
    }
)


@pytest.mark.parametrize("key", KEYS)
def test_label_key_rules_are_exactly_is_restricted_label(key: str) -> None:
    rejected_by_python = [check.message for check in RESTRICTED_KEY_CHECKS if not check.ok(key)]
    rejected_by_cel = [
        check.message for check in RESTRICTED_KEY_CHECKS if not _cel(check.cel("self"), self=key)
    ]
    assert rejected_by_cel == rejected_by_python
    assert len(rejected_by_python) == (1 if wk.is_restricted_label(key) else 0)


def _defaulted_nodes(kind: Kind) -> Iterator[Schema]:
    return (node for node in _nodes(kind.schema) if node.has_default)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.kind)
def test_defaults_validate_against_their_own_schema(kind: Kind) -> None:
    nodes = list(_defaulted_nodes(kind))
    assert nodes
    for node in nodes:
        assert validate_value(node, node.default) == []


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.kind)
def test_schema_is_structural(kind: Kind) -> None:
    for node in _nodes(kind.schema):
        assert (node.type is None) == node.int_or_string
        assert not (node.properties and node.values is not None)
        assert set(node.required) <= set(node.properties)
        assert (node.items is not None) == (node.type == "array")
        if node.pattern:
            re.compile(node.pattern)
            assert node.pattern.startswith("^") and node.pattern.endswith("$")
            assert node.hint, node.pattern
