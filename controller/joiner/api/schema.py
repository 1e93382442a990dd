"""A small schema language for the Joiner CRDs.

One description of each kind (see ``joiner.api.definitions``) gives three things:
the OpenAPI v3 schema served in the CRD (``to_openapi``), defaulting and validation
(``joiner.api.validation`` interprets the same nodes), and Joiner's own advice
(``joiner.api.compatibility``).

- ``Rule``: a cross-field check the API server enforces, written twice, in CEL for the
  server (``x-kubernetes-validations``) and in Python for Joiner, with one message, so
  both reject the same objects at the same path. The tests run every rule on the real
  kube-apiserver with a manifest it accepts and one it rejects.
- ``Advice``: a check the API server does not make (upstream Karpenter's CRDs accept
  the value) but Joiner warns about: a value Joiner cannot honour exactly, or one
  upstream Karpenter refuses at run time. Never rendered; reported as a warning whose
  ``code`` names its reason in docs/compatibility.md.
- ``Schema.unsupported``: a field upstream's CRDs define that Joiner does not implement;
  validated like any other field, and reported as "not supported by Joiner; ignored".
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Marks "no default" (None is a legitimate default value in principle).
NO_DEFAULT: Any = object()

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
QUANTITY_HINT = "expected a quantity like 500m, 2, 4Gi or 100G"
# The code of the advice every unsupported field gets (docs/compatibility.md).
UNSUPPORTED = "not-supported"


@dataclass(frozen=True)
class Rule:
    """A cross-field check the API server enforces. ``holds(value)`` (or
    ``holds(old, new)`` for a transition rule) is True when the value is acceptable; an
    exception counts as False, as a CEL evaluation error rejects the object. ``cel`` is
    the same check for the API server. ``field_path`` says where the error is reported,
    relative to the node (".values"). A message that names the offending entry is
    ``describe(value)`` in Python and ``message_expression`` in CEL; ``message`` stays
    the API server's fallback."""

    message: str
    holds: Callable[..., bool]
    cel: str
    field_path: str = ""
    transition: bool = False
    message_expression: str | None = None
    describe: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class Advice:
    """A check only Joiner makes: the API server accepts a value for which ``holds`` is
    False, and Joiner warns with ``describe(value)`` (else ``message``). ``code`` is the
    heading of docs/compatibility.md that gives the reason."""

    code: str
    message: str
    holds: Callable[[Any], bool]
    describe: Callable[[Any], str] | None = None
    field_path: str = ""


@dataclass(frozen=True, eq=False)
class Schema:
    """One node of a structural schema. ``values`` is the value schema of a map
    (additionalProperties); ``hint`` explains a pattern to a user. ``unique`` is a list
    whose items may not repeat (``x-kubernetes-list-type: set``). ``preserve_unknown``
    keeps any content (``x-kubernetes-preserve-unknown-fields``); ``expected`` then
    describes what Joiner understands there, checked as advice."""

    type: str | None
    description: str = ""
    properties: Mapping[str, Schema] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    values: Schema | None = None
    items: Schema | None = None
    enum: tuple[Any, ...] = ()
    pattern: str | None = None
    hint: str = ""
    minimum: int | None = None
    maximum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    max_properties: int | None = None
    default: Any = NO_DEFAULT
    rules: tuple[Rule, ...] = ()
    advice: tuple[Advice, ...] = ()
    int_or_string: bool = False
    free_form: bool = False
    preserve_unknown: bool = False
    expected: Schema | None = None
    unique: bool = False
    unsupported: bool = False
    format: str | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


# -- builders: the vocabulary the definitions are written in --------------------------------


def string(description: str = "", **options: Any) -> Schema:
    return Schema(type="string", description=description, **options)


def integer(description: str = "", **options: Any) -> Schema:
    return Schema(type="integer", description=description, **options)


def boolean(description: str = "", **options: Any) -> Schema:
    return Schema(type="boolean", description=description, **options)


def obj(
    description: str = "", properties: Mapping[str, Schema] | None = None, **options: Any
) -> Schema:
    return Schema(type="object", description=description, properties=properties or {}, **options)


def array(items: Schema, description: str = "", **options: Any) -> Schema:
    return Schema(type="array", description=description, items=items, **options)


def map_of(values: Schema, description: str = "", **options: Any) -> Schema:
    """An object with free keys whose values all follow ``values`` (e.g. labels, limits)."""
    return Schema(type="object", description=description, values=values, **options)


def quantity(description: str = "", **options: Any) -> Schema:
    """A Kubernetes quantity written as a number or a string ("500m", "4Gi")."""
    return Schema(
        type=None,
        description=description,
        int_or_string=True,
        pattern=QUANTITY_PATTERN,
        hint=QUANTITY_HINT,
        **options,
    )


def free_object(description: str = "") -> Schema:
    """An object whose content this schema does not describe (ObjectMeta)."""
    return Schema(type="object", description=description, free_form=True)


def any_object(expected: Schema) -> Schema:
    """An object the API server keeps as written, whatever it holds; Joiner reads the
    fields ``expected`` describes and warns about the rest."""
    return Schema(
        type="object",
        description=expected.description,
        values=Schema(type=None, preserve_unknown=True),
        preserve_unknown=True,
        expected=expected,
    )


def unsupported(schema: Schema) -> Schema:
    """``schema`` for a field Joiner accepts (as the API server does) but ignores."""
    return dataclasses.replace(schema, unsupported=True)


def immutable(message: str) -> Rule:
    return Rule(
        message=message, holds=lambda old, new: old == new, cel="self == oldSelf", transition=True
    )


# -- OpenAPI v3 rendering --------------------------------------------------------------------

_SCALAR_KEYWORDS = (
    ("enum", "enum"),
    ("pattern", "pattern"),
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("min_items", "minItems"),
    ("max_items", "maxItems"),
    ("min_length", "minLength"),
    ("max_length", "maxLength"),
    ("max_properties", "maxProperties"),
    ("format", "format"),
)


def to_openapi(schema: Schema) -> dict[str, Any]:
    """The structural OpenAPI v3 schema the API server stores for this node."""
    out: dict[str, Any] = {}
    if schema.description:
        out["description"] = schema.description
    if schema.int_or_string:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        out["x-kubernetes-int-or-string"] = True
    elif schema.type is not None:
        out["type"] = schema.type
    for attr, keyword in _SCALAR_KEYWORDS:
        value = getattr(schema, attr)
        if value is not None and value != ():
            out[keyword] = list(value) if isinstance(value, tuple) else value
    if schema.has_default:
        out["default"] = copy.deepcopy(schema.default)
    if schema.unique:
        out["x-kubernetes-list-type"] = "set"
    if schema.preserve_unknown:
        out["x-kubernetes-preserve-unknown-fields"] = True
    _add_children(schema, out)
    rules = [_rule_to_openapi(rule) for rule in schema.rules]
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


def _add_children(schema: Schema, out: dict[str, Any]) -> None:
    if schema.properties:
        out["properties"] = {name: to_openapi(child) for name, child in schema.properties.items()}
    if schema.required:
        out["required"] = list(schema.required)
    if schema.values is not None:
        out["additionalProperties"] = to_openapi(schema.values)
    if schema.items is not None:
        out["items"] = to_openapi(schema.items)


def _rule_to_openapi(rule: Rule) -> dict[str, str]:
    out = {"rule": rule.cel, "message": rule.message}
    if rule.message_expression:
        out["messageExpression"] = rule.message_expression
    if rule.field_path:
        out["fieldPath"] = rule.field_path
    return out
