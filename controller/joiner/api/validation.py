"""Validation and defaulting of NodePool, NodeClaim and EC2NodeClass objects.

A small interpreter of the schemas in ``joiner.api.definitions``: types, required
fields, unknown fields, enums, patterns, bounds, then the cross-field rules (the
Python twins of the CRD's CEL rules, with the same messages). It never raises on
bad input: every problem is a ``FieldError`` naming the field.

    validate_object(obj) -> [FieldError]      what the API server would reject, and more
    apply_defaults(obj) -> obj                 a new dict with the API defaults filled in
    validate_update(old, new) -> [FieldError]  also immutable fields (transition rules)
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from joiner.api.definitions import JOINER_GROUPS, KINDS, Kind
from joiner.api.schema import Rule, Schema


@dataclass(frozen=True)
class FieldError:
    """One problem with one field. ``path`` is like ``spec.disruption.budgets[0].nodes``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


# -- which kind is this ----------------------------------------------------------------------


def kind_of(obj: Any) -> tuple[Kind | None, list[FieldError]]:
    """The served kind of ``obj``, or the errors that say why it is none."""
    if not isinstance(obj, dict):
        return None, [FieldError("", f"expected an object (a mapping), got {_type_name(obj)}")]
    errors = [
        FieldError(field, _identity_problem(obj.get(field)))
        for field in ("apiVersion", "kind")
        if not isinstance(obj.get(field), str) or not obj.get(field)
    ]
    if errors:
        return None, errors
    kind = next((k for k in KINDS if k.kind == obj["kind"]), None)
    if kind is None:
        served = ", ".join(f"{k.kind} ({k.api_version})" for k in KINDS)
        return None, [FieldError("kind", f"unknown kind {obj['kind']!r}; expected one of {served}")]
    if obj["apiVersion"] != kind.api_version:
        message = f"{kind.kind} is served as {kind.api_version}, got {obj['apiVersion']!r}"
        return None, [FieldError("apiVersion", message)]
    return kind, []


def _identity_problem(value: Any) -> str:
    """Why an apiVersion or kind that is not a non-empty string names nothing."""
    if value is None or value == "":
        return "is required"
    return f"must be a string, got {_describe_value(value, quote_hint=False)}"


def is_joiner_api_version(api_version: Any) -> bool:
    """True when the apiVersion's group is one Joiner serves (karpenter.sh, karpenter.k8s.aws)."""
    return isinstance(api_version, str) and api_version.split("/", 1)[0] in JOINER_GROUPS


# -- public entry points ---------------------------------------------------------------------


def validate_object(obj: Any) -> list[FieldError]:
    """What is wrong with ``obj`` once defaulted, as the API server defaults before it
    validates (an omitted field with a default is never "required")."""
    kind, errors = kind_of(obj)
    if kind is None:
        return errors
    return validate_value(kind.schema, apply_defaults(obj))


def apply_defaults(obj: Any) -> Any:
    """A copy of ``obj`` with the schema defaults set on absent fields (as the API server
    does on create). Objects of unknown kinds come back as unchanged copies."""
    result = copy.deepcopy(obj)
    kind, _ = kind_of(obj)
    if kind is not None:
        _default(kind.schema, result)
    return result


def validate_update(old: Any, new: Any) -> list[FieldError]:
    """Errors of ``new`` plus the transition rules (immutable fields) between ``old`` and
    ``new``. Pass both as stored, i.e. after ``apply_defaults``."""
    errors = validate_object(new)
    old_kind, _ = kind_of(old)
    new_kind, _ = kind_of(new)
    if old_kind is None or new_kind is None:
        return errors
    if old_kind is not new_kind:
        return [*errors, FieldError("kind", "may not change")]
    return errors + list(_transition_errors(new_kind.schema, old, new, ""))


def validate_value(schema: Schema, value: Any, path: str = "") -> list[FieldError]:
    """Schema errors, then every rule. A rule that cannot read malformed data (already
    reported below its node) is skipped; on well-formed data it must not fail."""
    nodes = list(walk(schema, value, path))
    errors = [error for node, val, at in nodes for error in _local_errors(node, val, at)]
    malformed = _malformed_paths([error.path for error in errors])
    for node, val, at in nodes:
        if node.rules:
            errors.extend(_rule_errors(node, val, at, at in malformed))
    return errors


def schema_errors(schema: Schema, value: Any, path: str = "") -> list[FieldError]:
    """Types, required and unknown fields, enums, patterns and bounds; no rules."""
    return [
        error
        for node, val, at in walk(schema, value, path)
        for error in _local_errors(node, val, at)
    ]


def is_malformed(error_paths: list[str], path: str) -> bool:
    """True when one of ``error_paths`` is at or below ``path``."""
    return path in _malformed_paths(error_paths)


def _malformed_paths(error_paths: list[str]) -> set[str]:
    """Every path at or above one of ``error_paths``: ``a.b[0]`` gives ``a.b[0]``, ``a.b``,
    ``a`` and the root ``""``. A set, so that asking for each node of an object with
    many errors stays linear (asking each node about each error was quadratic)."""
    paths = {""} if error_paths else set()
    for error_path in error_paths:
        paths.add(error_path)
        paths.update(error_path[:i] for i, char in enumerate(error_path) if char in ".[" and i)
    return paths


# -- the interpreter ------------------------------------------------------------------------


def walk(schema: Schema, value: Any, path: str = "") -> Iterator[tuple[Schema, Any, str]]:
    """Every (schema node, value, path) pair of ``value``, parents first, in document order."""
    pending = [(schema, value, path)]
    while pending:
        node, node_value, node_path = pending.pop()
        yield node, node_value, node_path
        children = [(c, v, p) for c, _, v, p in _children(node, node_value, node_path)]
        pending.extend(reversed(children))


def _children(
    schema: Schema, value: Any, path: str
) -> Iterator[tuple[Schema, str | int, Any, str]]:
    """(schema, key, value, path) of the direct children the schema describes: fields,
    map entries (``labels[team]``) and list items. Nothing where the value has the wrong
    container type (that is a type error, reported on the node itself)."""
    if schema.type == "object" and isinstance(value, dict) and not schema.free_form:
        for name, child_value in value.items():
            if schema.values is not None:
                yield schema.values, name, child_value, f"{path}[{name}]"
            elif name in schema.properties:
                yield schema.properties[name], name, child_value, _join(path, f".{name}")
    elif schema.type == "array" and isinstance(value, list) and schema.items is not None:
        for index, item in enumerate(value):
            yield schema.items, index, item, f"{path}[{index}]"


def _local_errors(schema: Schema, value: Any, path: str) -> list[FieldError]:
    type_error = _type_error(schema, value)
    if type_error:
        return [FieldError(path, type_error)]
    messages = _value_messages(schema, value)
    if isinstance(value, dict) and not schema.free_form:
        return [FieldError(path, m) for m in messages] + _object_errors(schema, value, path)
    return [FieldError(path, m) for m in messages]


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
}
_ARTICLE = {"object": "an object", "array": "a list", "integer": "an integer"}


def _type_error(schema: Schema, value: Any) -> str | None:
    if schema.int_or_string:
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return None
        return f"must be an integer or a string, got {_describe_value(value, quote_hint=True)}"
    assert schema.type is not None
    ok = isinstance(value, _PYTHON_TYPES[schema.type])
    if schema.type == "integer" and isinstance(value, bool):
        ok = False
    if ok:
        return None
    wanted = _ARTICLE.get(schema.type, f"a {schema.type}")
    return f"must be {wanted}, got {_describe_value(value, schema.type == 'string')}"


def _value_messages(schema: Schema, value: Any) -> list[str]:
    checks = (_enum_message, _pattern_message, _bound_message, _size_message)
    return [message for check in checks if (message := check(schema, value))]


def _enum_message(schema: Schema, value: Any) -> str | None:
    if not schema.enum or value in schema.enum:
        return None
    return f"unsupported value {value!r}; expected one of: {', '.join(map(str, schema.enum))}"


def _pattern_message(schema: Schema, value: Any) -> str | None:
    if schema.pattern is None or not isinstance(value, str) or re.search(schema.pattern, value):
        return None
    return f"invalid value {value!r}: {schema.hint or 'must match ' + schema.pattern}"


def _bound_message(schema: Schema, value: Any) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if schema.minimum is not None and value < schema.minimum:
        return f"must be >= {schema.minimum}, got {value}"
    if schema.maximum is not None and value > schema.maximum:
        return f"must be <= {schema.maximum}, got {value}"
    return None


def _size_message(schema: Schema, value: Any) -> str | None:
    if isinstance(value, list):
        return _count_message(len(value), schema.min_items, schema.max_items, "item")
    if isinstance(value, str):
        return _count_message(len(value), schema.min_length, schema.max_length, "character")
    if isinstance(value, dict):
        return _count_message(len(value), None, schema.max_properties, "entry")
    return None


def _count_message(count: int, least: int | None, most: int | None, unit: str) -> str | None:
    if least is not None and count < least:
        return f"must have at least {least} {_plural(unit, least)}, got {count}"
    if most is not None and count > most:
        return f"must have at most {most} {_plural(unit, most)}, got {count}"
    return None


def _object_errors(schema: Schema, value: dict[str, Any], path: str) -> list[FieldError]:
    errors = [
        FieldError(_join(path, f".{name}"), "is required")
        for name in schema.required
        if name not in value
    ]
    if schema.values is None:
        errors += [
            FieldError(_join(path, f".{name}"), "unknown field")
            for name in value
            if name not in schema.properties
        ]
    return errors


def _rule_errors(schema: Schema, value: Any, path: str, malformed: bool) -> list[FieldError]:
    errors = []
    for rule in schema.rules:
        if rule.transition:
            continue
        try:
            holds = rule.holds(value)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            if not malformed:
                raise
            continue
        if not holds:
            message = rule.describe(value) if rule.describe else rule.message
            errors.append(FieldError(_join(path, rule.field_path), message))
    return errors


def _transition_errors(schema: Schema, old: Any, new: Any, path: str) -> Iterator[FieldError]:
    """Transition rules apply where a field exists before and after (CEL ``oldSelf``)."""
    for rule in schema.rules:
        if rule.transition and not _safe_holds(rule, old, new):
            yield FieldError(_join(path, rule.field_path), rule.message)
    if not isinstance(old, dict):
        return  # list items have no identity across versions (no listType=map here)
    for child, key, value, child_path in _children(schema, new, path):
        if key in old:
            yield from _transition_errors(child, old[key], value, child_path)


def _safe_holds(rule: Rule, old: Any, new: Any) -> bool:
    # Transition rules compare whole values; a malformed old object is not the new one's fault.
    try:
        return bool(rule.holds(old, new))
    except (KeyError, TypeError, AttributeError):
        return True


def _default(schema: Schema, value: Any) -> None:
    """Set absent defaulted fields in place, then default inside every child (including
    the defaults just set, as the API server does)."""
    if schema.type == "object" and isinstance(value, dict) and not schema.free_form:
        for name, child in schema.properties.items():
            if name not in value and child.has_default:
                value[name] = copy.deepcopy(child.default)
    for child, _, child_value, _ in _children(schema, value, ""):
        _default(child, child_value)


# -- small helpers ---------------------------------------------------------------------------


def _join(path: str, suffix: str) -> str:
    if not path:
        return suffix.removeprefix(".")
    if suffix and suffix[0] not in ".[":
        suffix = "." + suffix
    return path + suffix


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _describe_value(value: Any, quote_hint: bool) -> str:
    """``integer 5 (quote it in YAML)``: a scalar where a string is wanted is usually an
    unquoted YAML value."""
    if isinstance(value, (dict, list)) or value is None:
        return _type_name(value)
    text = f"{_type_name(value)} {value!r}"[:120]
    if quote_hint and isinstance(value, (int, float, bool)):
        return text + " (quote it in YAML)"
    return text


def _plural(unit: str, count: int) -> str:
    if count == 1:
        return unit
    return "entries" if unit == "entry" else unit + "s"
