"""Validation and defaulting of NodePool, NodeClaim and EC2NodeClass objects, as the API
server does it with Joiner's CRDs (the same verdicts as with upstream Karpenter's).

A small interpreter of the schemas in ``joiner.api.definitions``, in the API server's
order: decoding (unknown fields, ``metadata`` types), ``metadata`` (``joiner.api.
objectmeta``), then types, required fields, enums, patterns, bounds and set lists, then
the cross-field rules (the Python twins of the CRD's CEL rules, same messages). As on the
server, the rules are not run when a "blocking" error (a wrong type, a missing field, a
value outside an enum, too long or too many) was found; the error list then ends with
``NOT_CHECKED``. It never raises on bad input: every problem is a ``FieldError`` naming
the field with the server's path (``spec.limits.cpu``, ``spec.taints[0].key``).

    validate_object(obj) -> [FieldError]      what the API server refuses on create
    apply_defaults(obj) -> obj                 a new dict as the server stores it: nulls
                                               dropped, defaults filled in
    validate_update(old, new) -> [FieldError]  also status and immutable fields

What Joiner warns about beyond this is ``joiner.api.compatibility``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from joiner.api import objectmeta
from joiner.api.definitions import JOINER_GROUPS, KINDS, Kind
from joiner.api.schema import Rule, Schema
from joiner.jsoncopy import deep_copy, same_json

UNKNOWN_FIELD = "unknown field"
NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)

# The API server's cause reasons of the schema checks. Those in ``BLOCKING_REASONS`` (a
# wrong type, a missing field, a value outside an enum, too long or too many) stop it
# before it evaluates the CEL rules.
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
REQUIRED = "FieldValueRequired"
NOT_SUPPORTED = "FieldValueNotSupported"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
DUPLICATE = "FieldValueDuplicate"
BLOCKING_REASONS = frozenset({TYPE_INVALID, REQUIRED, NOT_SUPPORTED, TOO_LONG, TOO_MANY})


@dataclass(frozen=True)
class FieldError:
    """One problem with one field. ``path`` is like ``spec.disruption.budgets[0].nodes``.
    A ``blocking`` error keeps the API server from evaluating the CEL rules; a ``decoding``
    one (an unknown field, metadata of the wrong type) refuses the request before any
    validation (HTTP 400, where the server names only unknown fields). ``reason`` is the
    API server's cause reason for it."""

    path: str
    message: str
    blocking: bool = field(default=False, compare=False, repr=False)
    decoding: bool = field(default=False, compare=False, repr=False)
    reason: str = field(default=INVALID, compare=False, repr=False)

    @classmethod
    def schema(cls, path: str, message: str, reason: str) -> FieldError:
        """A schema check's error; its reason says whether it blocks the rules."""
        return cls(path, message, blocking=reason in BLOCKING_REASONS, reason=reason)

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
    """What the API server refuses when ``obj`` is created, once defaulted as the server
    defaults before it validates (an omitted field with a default is never "required").
    The server drops ``status`` from a created object: only unknown fields there count."""
    kind, errors = kind_of(obj)
    if kind is None:
        return errors
    return _errors(kind, apply_defaults(obj), with_status=False)


def apply_defaults(obj: Any) -> Any:
    """A copy of ``obj`` as the API server stores it on create: null fields dropped,
    whole numbers written as decimals (5.0) read as integers, the schema defaults set on
    absent fields. Objects of unknown kinds come back as unchanged copies."""
    result = deep_copy(obj)
    kind, _ = kind_of(obj)
    if kind is not None:
        _default(kind.schema, result)
    return result


def validate_update(old: Any, new: Any) -> list[FieldError]:
    """Errors of ``new`` (status included, as a status update is checked) plus the
    transition rules (immutable fields) between ``old`` and ``new``. Pass both as stored,
    i.e. after ``apply_defaults``."""
    old_kind, _ = kind_of(old)
    new_kind, errors = kind_of(new)
    if new_kind is None:
        return errors
    errors = _errors(
        new_kind, new, with_status=True, as_stored=_as_stored(old, new, old_kind is new_kind)
    )
    if old_kind is None:
        return errors
    if old_kind is not new_kind:
        return [*errors, FieldError("kind", "may not change")]
    if any(error.blocking or error.decoding for error in errors):
        return errors  # no rule runs then, transition rules neither
    return errors + list(_transition_errors(new_kind.schema, old, new, ""))


def validate_value(schema: Schema, value: Any, path: str = "") -> list[FieldError]:
    """Schema errors, then every rule unless a blocking error stops them (as on the API
    server, where a rule that fails to evaluate rejects the object)."""
    nodes = list(walk(schema, value, path))
    return _with_rules(nodes, [error for n, v, at in nodes for error in _local_errors(n, v, at)])


def schema_errors(schema: Schema, value: Any, path: str = "") -> list[FieldError]:
    """Types, required and unknown fields, enums, patterns, bounds and set lists; no rules."""
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


# -- the API server's steps -------------------------------------------------------------------


def _as_stored(old: Any, new: dict[str, Any], same_kind: bool) -> frozenset[str]:
    """The top-level fields of ``new`` that are the same data as in ``old``, as stored."""
    if not same_kind or not isinstance(old, dict):
        return frozenset()
    return frozenset(k for k, v in new.items() if k in old and same_json(v, old[k]))


def _errors(
    kind: Kind, obj: dict[str, Any], with_status: bool, as_stored: frozenset[str] = frozenset()
) -> list[FieldError]:
    """``as_stored``: top-level fields the same as in the stored object, which passed
    these checks when it was stored. Checks and rules below them depend on nothing else,
    so they are not run again (a status write leaves spec as it was)."""
    problems = objectmeta.metadata_problems(obj.get("metadata"))
    errors = [FieldError(p.path, p.message, p.blocking, p.decoding) for p in problems]
    body = {k: v for k, v in obj.items() if k != "metadata" and (with_status or k != "status")}
    status = kind.schema.properties["status"]
    if not with_status and "status" in obj:  # decoding still sees unknown fields there
        errors += [e for e in schema_errors(status, obj["status"], "status") if e.decoding]
    nodes = [(kind.schema, body, "")] + [
        node
        for child, name, value, path in _children(kind.schema, body, "")
        if name not in as_stored
        for node in walk(child, value, path)
    ]
    errors += [error for node, val, at in nodes for error in _local_errors(node, val, at)]
    errors += _scale_errors(kind, obj, with_status)
    return _with_rules(nodes, errors)


def _with_rules(nodes: list[tuple[Schema, Any, str]], errors: list[FieldError]) -> list[FieldError]:
    """The errors, then the rules' unless a blocking error stops them. A request that does
    not decode (unknown fields, metadata of the wrong type) is refused before validation."""
    if any(error.decoding for error in errors):
        return errors
    if any(error.blocking for error in errors):
        return [*errors, FieldError("", NOT_CHECKED)]
    for node, val, at in nodes:
        if node.rules:
            errors.extend(_rule_errors(node, val, at))
    return errors


def _scale_errors(kind: Kind, obj: dict[str, Any], with_status: bool) -> list[FieldError]:
    """The scale subresource reads ``spec.replicas`` (and, on a status write, the status
    replicas path) as a non-negative int32, on create too; the server reports it with a
    leading dot."""
    if kind.scale is None:
        return []
    paths = [kind.scale.spec_replicas_path]
    if with_status:
        paths.append(kind.scale.status_replicas_path)
    return [error for path in paths for error in _replicas_errors(obj, path)]


def _replicas_errors(obj: dict[str, Any], path: str) -> list[FieldError]:
    value: Any = obj
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return []
    if not _is_integer(value):
        return [FieldError(path, f"{path} accessor error: {value!r} is not an integer")]
    if value < 0:
        return [FieldError(path, f"must be a non-negative integer, got {int(value)}")]
    if value > INT32[1]:
        return [FieldError(path, f"must be <= {INT32[1]}, got {int(value)}")]
    return []


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
    map entries (``labels.team``, as the API server writes them) and list items. Nothing
    where the value has the wrong container type (a type error, reported on the node)."""
    if schema.type == "object" and isinstance(value, dict) and not schema.free_form:
        if schema.preserve_unknown:
            return
        for name, child_value in value.items():
            if schema.values is not None:
                yield schema.values, name, child_value, _join(path, f".{name}")
            elif name in schema.properties:
                yield schema.properties[name], name, child_value, _join(path, f".{name}")
    elif schema.type == "array" and isinstance(value, list) and schema.items is not None:
        for index, item in enumerate(value):
            yield schema.items, index, item, f"{path}[{index}]"


def _local_errors(schema: Schema, value: Any, path: str) -> list[FieldError]:
    type_error = _type_error(schema, value)
    if type_error:
        return [FieldError.schema(path, type_error, TYPE_INVALID)]
    errors = [FieldError.schema(path, m, reason) for m, reason in _value_messages(schema, value)]
    if isinstance(value, dict) and not schema.free_form and not schema.preserve_unknown:
        errors += _object_errors(schema, value, path)
    if schema.unique and isinstance(value, list):
        errors += _duplicates(value, path)
    return errors


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
}
_ARTICLE = {"object": "an object", "array": "a list", "integer": "an integer"}


def _type_error(schema: Schema, value: Any) -> str | None:
    if schema.int_or_string:
        if isinstance(value, str) or _is_integer(value):
            return _range_error(schema, value)
        return f"must be an integer or a string, got {_describe_value(value, quote_hint=True)}"
    if schema.type is None:  # x-kubernetes-preserve-unknown-fields: anything goes
        return None
    if schema.type == "integer":
        if _is_integer(value):
            return _range_error(schema, value)
    elif isinstance(value, _PYTHON_TYPES[schema.type]):
        return _format_error(schema, value)
    wanted = _ARTICLE.get(schema.type, f"a {schema.type}")
    return f"must be {wanted}, got {_describe_value(value, schema.type == 'string')}"


def _is_integer(value: Any) -> bool:
    """An integer as JSON carries it: 5, or 5.0 (YAML ``5.0`` reaches the server as 5)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _range_error(schema: Schema, value: Any) -> str | None:
    """Integers the server cannot hold (int64, or int32 when the format says so)."""
    if isinstance(value, str):
        return None
    low, high = INT32 if schema.format == "int32" else INT64
    if low <= value <= high:
        return None
    return f"must be an integer of format {schema.format or 'int64'}, got {value}"


_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _format_error(schema: Schema, value: Any) -> str | None:
    if schema.format != "date-time" or _is_date_time(value):
        return None
    return f"invalid value {value!r}: expected a date-time like 2024-01-31T12:00:00Z"


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _value_messages(schema: Schema, value: Any) -> list[tuple[str, str]]:
    """(message, reason) of the checks on a value of the right type."""
    if not _has_value_checks(schema):
        return []
    checks: tuple[tuple[Callable[[Schema, Any], str | None], str], ...] = (
        (_enum_message, NOT_SUPPORTED),
        (_pattern_message, INVALID),
        (_bound_message, INVALID),
        (_too_few_message, INVALID),
        (_too_many_message, TOO_LONG if isinstance(value, str) else TOO_MANY),
    )
    return [(message, reason) for check, reason in checks if (message := check(schema, value))]


# Whether a schema node has any of the checks below: most have none, and the interpreter
# asks for every node of every object it validates.
_VALUE_CHECKED: dict[Schema, bool] = {}


def _has_value_checks(schema: Schema) -> bool:
    found = _VALUE_CHECKED.get(schema)
    if found is None:
        bounds = (schema.minimum, schema.maximum, schema.min_items, schema.max_items)
        lengths = (schema.min_length, schema.max_length, schema.max_properties)
        found = _VALUE_CHECKED[schema] = bool(
            schema.enum
            or schema.pattern is not None
            or any(b is not None for b in (*bounds, *lengths))
        )
    return found


def _enum_message(schema: Schema, value: Any) -> str | None:
    if not schema.enum or value in schema.enum:
        return None
    return f"unsupported value {value!r}; expected one of: {', '.join(map(str, schema.enum))}"


def _pattern_message(schema: Schema, value: Any) -> str | None:
    if schema.pattern is None or not isinstance(value, str) or _matches(schema.pattern, value):
        return None
    return f"invalid value {value!r}: {schema.hint or 'must match ' + schema.pattern}"


def _matches(pattern: str, value: str) -> bool:
    """The pattern as the API server (Go's RE2) reads it: ``$`` is the end of the text, and
    ``\\s`` ASCII white space only."""
    return re.search(_as_re2(pattern), value) is not None


_RE2_CACHE: dict[str, str] = {}


def _as_re2(pattern: str) -> str:
    translated = _RE2_CACHE.get(pattern)
    if translated is None:
        translated = pattern.replace(r"\s", r"[\t\n\f\r ]")
        translated = translated[:-1] + r"\Z" if translated.endswith("$") else translated
        _RE2_CACHE[pattern] = translated
    return translated


def _bound_message(schema: Schema, value: Any) -> str | None:
    if not _is_integer(value):
        return None
    if schema.minimum is not None and value < schema.minimum:
        return f"must be >= {schema.minimum}, got {int(value)}"
    if schema.maximum is not None and value > schema.maximum:
        return f"must be <= {schema.maximum}, got {int(value)}"
    return None


def _too_few_message(schema: Schema, value: Any) -> str | None:
    if isinstance(value, list):
        return _count_message(len(value), schema.min_items, None, "item")
    if isinstance(value, str):
        return _count_message(len(value), schema.min_length, None, "character")
    return None


def _too_many_message(schema: Schema, value: Any) -> str | None:
    if isinstance(value, list):
        return _count_message(len(value), None, schema.max_items, "item")
    if isinstance(value, str):
        return _count_message(len(value), None, schema.max_length, "character")
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
        FieldError.schema(_join(path, f".{name}"), "is required", REQUIRED)
        for name in schema.required
        if name not in value
    ]
    if schema.values is None:
        errors += [
            FieldError(_join(path, f".{name}"), UNKNOWN_FIELD, blocking=True, decoding=True)
            for name in value
            if name not in schema.properties
        ]
    return errors


def _duplicates(items: list[Any], path: str) -> list[FieldError]:
    seen: list[Any] = []
    errors = []
    for index, item in enumerate(items):
        if item in seen:
            errors.append(
                FieldError.schema(f"{path}[{index}]", f"duplicate value {item!r}", DUPLICATE)
            )
        seen.append(item)
    return errors


def _rule_errors(schema: Schema, value: Any, path: str) -> list[FieldError]:
    return [
        FieldError(_join(path, rule.field_path), _rule_message(rule, value))
        for rule in schema.rules
        if not rule.transition and not _holds(rule, value)
    ]


def _holds(rule: Rule, *values: Any) -> bool:
    # A CEL rule that cannot evaluate (a field it reads is absent, an int() of a word)
    # rejects the object; so does its twin.
    try:
        return bool(rule.holds(*values))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        return False


def _rule_message(rule: Rule, value: Any) -> str:
    if rule.describe is None:
        return rule.message
    try:
        return rule.describe(value)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, StopIteration):
        return rule.message


def _transition_errors(schema: Schema, old: Any, new: Any, path: str) -> Iterator[FieldError]:
    """Transition rules apply where a field exists before and after (CEL ``oldSelf``)."""
    for rule in schema.rules:
        if rule.transition and not _holds(rule, old, new):
            yield FieldError(_join(path, rule.field_path), rule.message)
    if not isinstance(old, dict):
        return  # list items have no identity across versions (no listType=map here)
    for child, key, value, child_path in _children(schema, new, path):
        if key in old:
            yield from _transition_errors(child, old[key], value, child_path)


def _default(schema: Schema, value: Any) -> None:
    """In place, as the API server stores an object: drop null fields and map entries,
    read whole decimals as integers, set absent defaulted fields, then the same inside
    every child (including the defaults just set)."""
    if schema.type == "object" and isinstance(value, dict) and not schema.free_form:
        if schema.preserve_unknown:
            return
        for name in [k for k, v in value.items() if v is None]:
            del value[name]
        for name, child in schema.properties.items():
            if name not in value and child.has_default:
                value[name] = copy.deepcopy(child.default)
    for child, key, child_value, _ in _children(schema, value, ""):
        whole = isinstance(child_value, float) and _is_integer(child_value)
        if whole and (child.type == "integer" or child.int_or_string):
            value[key] = int(child_value)
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
