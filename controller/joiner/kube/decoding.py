"""What kube-apiserver's decoder does with a request body, before admission and validation.

Built-in kinds decode into typed Go structs (the field types of ``coreschema``): a value
of the wrong JSON type is a 400 BadRequest naming the Go field (``json: cannot unmarshal
string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64``),
the first one in document order. Custom resources decode as unstructured JSON: only
their ``metadata`` is typed, and type errors elsewhere are the schema validation's 422.

Unknown fields follow the request's ``fieldValidation``: ``Strict`` refuses them (400
``strict decoding error: unknown field "spec.bogus"``), ``Warn`` (the server's default)
drops them and answers with one warning each, ``Ignore`` drops them silently. A patch is
decoded after it is applied, and its errors are a 422 on the field ``patch``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any, Literal

from joiner.api.definitions import KINDS
from joiner.api.schema import QUANTITY_PATTERN, Schema
from joiner.clock import from_rfc3339
from joiner.jsoncopy import same_json
from joiner.kube.api import BadRequest, Cause, Invalid
from joiner.kube.coreschema import ANY, CoreSchema, core_schema, go_type
from joiner.kube.resources import ResourceKind

FieldValidation = Literal["Strict", "Warn", "Ignore"]
FIELD_VALIDATIONS: tuple[str, ...] = ("Strict", "Warn", "Ignore")

OBJECT_META = "meta.v1.ObjectMeta"
_GO_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_GO_TIME_LAYOUT = "2006-01-02T15:04:05Z07:00"  # RFC 3339, as Go writes the layout
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class _TypeError(Exception):
    """The first value of the wrong type; the message is Go's."""


def unknown_field_warning(path: str) -> str:
    return f'unknown field "{path}"'


def decode_body(
    rk: ResourceKind,
    obj: dict[str, Any],
    validation: FieldValidation,
    warnings: list[str],
    stored: dict[str, Any] | None = None,
) -> None:
    """Check a create or update body in place: 400 on a type error or (Strict) an
    unknown field; otherwise unknown fields are dropped and (Warn) reported in
    ``warnings``. ``stored``: the object as stored, when the body replaces one. A
    top-level field (metadata, spec, status) that is the same data as its stored version
    decoded without an unknown field or a type error when it was stored, so it is not
    walked again (most writes change one of them)."""
    try:
        unknown = _decode(rk, obj, stored or {})
    except _TypeError as error:
        raise _cannot_handle(rk, str(error)) from None
    if unknown and validation == "Strict":
        raise _cannot_handle(rk, _strict_message(unknown))
    if validation == "Warn":
        warnings.extend(unknown_field_warning(path) for path in unknown)


def decode_patched(
    rk: ResourceKind,
    obj: dict[str, Any],
    validation: FieldValidation,
    warnings: list[str],
    stored: dict[str, Any] | None = None,
) -> None:
    """``decode_body`` for an object a patch produced: the errors are 422 on ``patch``."""
    try:
        decode_body(rk, obj, validation, warnings, stored)
    except BadRequest as error:
        detail = error.message.split(": ", 1)[1]
        value = json.dumps(json.dumps(obj, separators=(",", ":")))
        message = f"Invalid value: {value}: {detail}"
        raise Invalid(f' "" is invalid: patch: {message}', [Cause("patch", message)]) from None


def _cannot_handle(rk: ResourceKind, detail: str) -> BadRequest:
    return BadRequest(
        f'{rk.kind} in version "{rk.version}" cannot be handled as a {rk.kind}: {detail}'
    )


def _strict_message(unknown: list[str]) -> str:
    return "strict decoding error: " + ", ".join(unknown_field_warning(p) for p in unknown)


def _decode(rk: ResourceKind, obj: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    """The unknown fields of ``obj`` (now dropped from it); _TypeError on a type error."""
    schema = core_schema()
    if rk.custom:
        return _decode_custom(rk, obj, schema, stored)
    type_name = schema.kind_type(rk.api_version, rk.kind)
    if type_name is None:  # a kind the schema does not describe: taken as it is
        return []
    walker = _Walker(schema)
    walker.struct(type_name, obj, "", "", stored)
    return walker.unknown


def _decode_custom(
    rk: ResourceKind, obj: dict[str, Any], schema: CoreSchema, stored: dict[str, Any]
) -> list[str]:
    """A custom resource: typed metadata (paths relative to it, as the server decodes
    it on its own), unknown fields pruned by the CRD's structural schema."""
    walker = _Walker(schema)
    metadata = obj.get("metadata")
    if metadata is not None and not _as_stored(metadata, stored, "metadata"):
        walker.value(OBJECT_META, metadata, "metadata", "", "ObjectMeta")
    crd = next((k for k in KINDS if (k.api_version, k.kind) == (rk.api_version, rk.kind)), None)
    if crd is not None:
        for name in list(obj):
            if name == "metadata" or _as_stored(obj[name], stored, name):
                continue
            if name not in crd.schema.properties:
                walker.drop(obj, name, name)
            else:
                _prune(crd.schema.properties[name], obj[name], name, walker.drop)
    return walker.unknown


def _prune(schema: Schema, value: Any, path: str, drop: Callable[[dict, str, str], None]) -> None:
    """Drop the fields a structural schema does not know (wrong types are left for
    validation to report)."""
    if schema.type == "object" and isinstance(value, dict) and not schema.free_form:
        for name in list(value):
            if schema.values is not None:
                _prune(schema.values, value[name], f"{path}[{name}]", drop)
            elif name in schema.properties:
                _prune(schema.properties[name], value[name], f"{path}.{name}", drop)
            else:
                drop(value, name, f"{path}.{name}")
    elif schema.type == "array" and isinstance(value, list) and schema.items is not None:
        for index, item in enumerate(value):
            _prune(schema.items, item, f"{path}[{index}]", drop)


class _Walker:
    """Walks a value against the typed schema: records and drops unknown fields, raises
    the first type error. ``path`` is the JSON path of unknown-field messages
    (``spec.containers[0].image``), ``go_path`` the one of Go's type errors (no list
    indexes), ``struct`` the Go struct the current field belongs to."""

    def __init__(self, schema: CoreSchema) -> None:
        self.types = schema.types
        self.unknown: list[str] = []

    def drop(self, holder: dict[str, Any], name: str, path: str) -> None:
        self.unknown.append(path)
        del holder[name]

    def struct(
        self,
        type_name: str,
        value: dict[str, Any],
        path: str,
        go_path: str,
        stored: dict[str, Any] | None = None,
    ) -> None:
        """``stored``: the fields as stored (see ``decode_body``), for the top level."""
        fields = self.types[type_name]
        struct = type_name.rsplit(".", 1)[-1]
        for name in list(value):
            field_path, field_go_path = _join(path, name), _join(go_path, name)
            if stored and name in fields and _as_stored(value[name], stored, name):
                continue
            if name not in fields:
                self.drop(value, name, field_path)
            else:
                self.value(fields[name], value[name], field_path, field_go_path, struct)

    def value(self, field_type: Any, value: Any, path: str, go_path: str, struct: str) -> None:
        if value is None:  # null is every field's zero value
            return
        if isinstance(field_type, list):
            self._container(field_type, value, path, go_path, struct)
        elif field_type in self.types:
            if not isinstance(value, dict):
                raise _mismatch(value, go_path, struct, field_type)
            self.struct(field_type, value, path, go_path)
        elif field_type != ANY:
            _check_scalar(field_type, value, go_path, struct)

    def _container(
        self, field_type: list[Any], value: Any, path: str, go_path: str, struct: str
    ) -> None:
        item_type = field_type[1]
        if field_type[0] == "list":
            if not isinstance(value, list):
                raise _mismatch(value, go_path, struct, field_type)
            for index, item in enumerate(value):
                self.value(item_type, item, f"{path}[{index}]", go_path, struct)
            return
        if not isinstance(value, dict):
            raise _mismatch(value, go_path, struct, field_type)
        for key, item in value.items():
            self.value(item_type, item, f"{path}[{key}]", go_path, struct)


def _as_stored(value: Any, stored: dict[str, Any], name: str) -> bool:
    return name in stored and same_json(value, stored[name])


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _json_type(value: Any, numeric_target: bool = False) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return f"number {json.dumps(value)}" if numeric_target else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__  # not JSON data at all (only a direct caller can send it)


def _mismatch(value: Any, go_path: str, struct: str, field_type: Any, numeric: bool = False):
    return _TypeError(
        f"json: cannot unmarshal {_json_type(value, numeric)} into Go struct field "
        f"{struct}.{go_path} of type {go_type(field_type)}"
    )


def _check_scalar(field_type: str, value: Any, go_path: str, struct: str) -> None:
    check = _SCALAR_CHECKS[field_type]
    problem = check(value)
    if problem is True:
        return
    if problem is False:
        numeric = field_type in _INT_RANGES and isinstance(value, (int, float))
        raise _mismatch(value, go_path, struct, field_type, numeric and not isinstance(value, bool))
    raise _TypeError(problem)


def _is_int(kind: str) -> Callable[[Any], bool]:
    low, high = _INT_RANGES[kind]
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _quantity(value: Any) -> bool | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    text = value if isinstance(value, str) else json.dumps(value)
    if not _GO_QUANTITY.match(text):
        return _QUANTITY_FORMAT
    return True if re.match(QUANTITY_PATTERN, text) else "unable to parse quantity's suffix"


def _time(value: Any) -> bool | str:
    if not isinstance(value, str):
        return f"json: cannot unmarshal {_json_type(value)} into Go value of type string"
    try:
        from_rfc3339(value)
    except ValueError:
        return f'parsing time "{value}" as "{_GO_TIME_LAYOUT}": cannot parse "{value}" as "2006"'
    return True


def _int_or_string(value: Any) -> bool | str:
    if isinstance(value, str) or _is_int("int32")(value):
        return True
    return f"json: cannot unmarshal {_json_type(value, True)} into Go value of type int32"


def _base64(value: Any) -> bool | str:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return "illegal base64 data"
    return True


_SCALAR_CHECKS: dict[str, Callable[[Any], bool | str]] = {
    "string": lambda v: isinstance(v, str),
    "int64": _is_int("int64"),
    "int32": _is_int("int32"),
    "float64": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "bytes": _base64,
    "time": _time,
    "quantity": _quantity,
    "int-or-string": _int_or_string,
}
