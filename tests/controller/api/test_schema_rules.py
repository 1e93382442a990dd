"""The schema itself, without a server (test_crds_on_server runs every CEL rule on the real
kube-apiserver): every rule is the API server's (it has CEL), every advice names a reason
that docs/compatibility.md gives, the label-key checks and the advice together refuse or
warn about every key ``labels.is_restricted_label`` names, and the schema is structural."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from joiner.api import labels as wk
from joiner.api.definitions import KINDS, Kind
from joiner.api.definitions.common import joiner_restricted, restricted_key_checks
from joiner.api.schema import UNSUPPORTED, Schema
from joiner.api.validation import validate_value
from joiner.commands.validate import CONVERTED

COMPATIBILITY = Path(__file__).parents[3] / "docs" / "compatibility.md"


def _nodes(schema: Schema) -> Iterator[Schema]:
    yield schema
    children = (*schema.properties.values(), schema.values, schema.items, schema.expected)
    for child in children:
        if child is not None:
            yield from _nodes(child)


def _all_nodes() -> Iterator[Schema]:
    for kind in KINDS:
        yield from _nodes(kind.schema)


def test_every_rule_has_cel_and_a_message() -> None:
    rules = [rule for node in _all_nodes() for rule in node.rules]
    assert len(rules) > 60
    for rule in rules:
        assert rule.cel and rule.message, rule
        assert (rule.describe is None) == (rule.message_expression is None), rule.message


def _compatibility_sections() -> set[str]:
    """The codes docs/compatibility.md explains: level-3 headings under "## Validation"."""
    text = COMPATIBILITY.read_text()
    validation = text.split("## Validation", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^### `([a-z0-9-]+)`", validation, flags=re.MULTILINE))


def test_every_warning_code_is_explained_in_the_compatibility_page() -> None:
    codes = {advice.code for node in _all_nodes() for advice in node.advice}
    codes |= {UNSUPPORTED} if any(node.unsupported for node in _all_nodes()) else set()
    codes.add(CONVERTED)  # `joiner validate` on an old kind, not a schema rule
    assert len(codes) > 10
    assert codes == _compatibility_sections()


def test_unsupported_fields_are_optional() -> None:
    for node in _all_nodes():
        for name in node.required:
            assert not node.properties[name].unsupported, name


KEYS = sorted(
    wk.WELL_KNOWN_LABELS
    | set(wk.BETA_ALIASES)
    | wk.RESTRICTED_LABELS
    | wk.AWS_LABELS_JOINER_DOES_NOT_DERIVE
    | {
        "team",
        "example.com/team",
        "karpenter.sh/custom",
        "karpenter.k8s.aws/custom",
        "sub.karpenter.sh/x",
        "notkarpenter.sh/x",
        "karpenter.sh",
        "kubernetes.io/team",
        "node.kubernetes.io/pool",
        "node-restriction.kubernetes.io/x",
        "example.k8s.io/x",
        "kops.k8s.io/instancegroup",
        "k8s.io/x",
    }
)


@pytest.mark.parametrize("key", KEYS)
def test_every_key_joiner_restricts_is_refused_or_warned_about(key: str) -> None:
    checks = restricted_key_checks(nodepool=True)
    refused = [check.message for check in checks if not check.ok(key)]
    warned = joiner_restricted(key, checks) or key in wk.AWS_LABELS_JOINER_DOES_NOT_DERIVE
    assert len(refused) <= 1  # one reason per key: the domain rules let the named keys by
    if wk.is_restricted_label(key):
        assert refused or warned
    assert not (refused and warned)


def test_upstreams_label_rules_are_suffix_matches_on_the_text_before_the_first_slash() -> None:
    checks = restricted_key_checks(nodepool=True)

    def refused(key: str) -> bool:
        return any(not check.ok(key) for check in checks)

    assert refused("notkarpenter.sh/x") and refused("karpenter.sh") and refused("a.karpenter.sh")
    assert not refused("karpenter.sh.example.com/x") and not refused("/karpenter.sh")
    assert not refused("karpenter.sh/capacity-type")
    nodeclaim = restricted_key_checks(nodepool=False)
    assert all(check.ok(wk.NODEPOOL) for check in nodeclaim)


def _defaulted_nodes(kind: Kind) -> Iterator[Schema]:
    return (node for node in _nodes(kind.schema) if node.has_default)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.kind)
def test_defaults_validate_against_their_own_schema(kind: Kind) -> None:
    nodes = list(_defaulted_nodes(kind))
    assert nodes or kind.kind == "NodeOverlay"  # upstream's NodeOverlay has no defaults
    for node in nodes:
        assert validate_value(node, node.default) == []


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.kind)
def test_schema_is_structural(kind: Kind) -> None:
    for node in _nodes(kind.schema):
        assert node.type is not None or node.int_or_string or node.preserve_unknown
        assert not (node.properties and node.values is not None)
        assert set(node.required) <= set(node.properties)
        assert (node.items is not None) == (node.type == "array")
        assert node.expected is None or node.preserve_unknown
        if node.pattern:
            re.compile(node.pattern)
            assert node.hint, node.pattern
