"""Joiner's warnings: what the API server accepts (with upstream Karpenter's CRDs and with
Joiner's) but Joiner cannot honour as written, or upstream Karpenter refuses at run time.

Errors are what the server refuses (``joiner.api.validation``); a manifest with warnings
only is valid, and Joiner does something defined with it. Each warning has a ``code``: the
heading of docs/compatibility.md that gives its reason and what Joiner does.

    validation_warnings(obj) -> [FieldWarning]   advice, unsupported fields (not status)
    readable_kubelet(raw) -> dict                the kubelet settings Joiner uses
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from joiner.api.definitions import EC2NODECLASS
from joiner.api.definitions.kubelet import KUBELET
from joiner.api.schema import UNSUPPORTED, Advice, Schema
from joiner.api.validation import (
    apply_defaults,
    is_malformed,
    kind_of,
    schema_errors,
    validate_object,
    walk,
)

NOT_SUPPORTED = "not supported by Joiner; ignored"
IGNORED = "Joiner ignores this setting"
KUBELET_SCHEMA: Schema = EC2NODECLASS.schema.properties["spec"].properties["kubelet"].expected  # type: ignore[assignment]


@dataclass(frozen=True)
class FieldWarning:
    """One warning about one field; ``code`` names its reason in docs/compatibility.md."""

    path: str
    message: str
    code: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def validation_warnings(obj: Any) -> list[FieldWarning]:
    """Joiner's warnings about ``obj`` as it would be created (status is dropped then).
    Fields with an error at, above or below them get none: fix those first."""
    kind, _ = kind_of(obj)
    if kind is None:
        return []
    defaulted = apply_defaults(obj)
    failed = [error.path for error in validate_object(obj) if error.path]
    body = {k: v for k, v in defaulted.items() if k not in ("metadata", "status")}
    return list(_warnings(kind.schema, body, "", failed))


def readable_kubelet(raw: Any) -> dict[str, Any]:
    """The kubelet settings of an EC2NodeClass that Joiner uses: the fields it knows,
    with values it can read. Anything else is ignored (``validation_warnings`` says so)."""
    if not isinstance(raw, dict):
        return {}
    unusable = {_first_field(w.path) for w in _expected_warnings(KUBELET_SCHEMA, raw, "")}
    return {
        name: copy.deepcopy(value)
        for name, value in raw.items()
        if name in KUBELET_SCHEMA.properties and name not in unusable
    }


# -- the walk ---------------------------------------------------------------------------------


def _warnings(schema: Schema, value: Any, path: str, failed: list[str]) -> Iterator[FieldWarning]:
    ignored: list[str] = []  # unsupported fields: nothing below them matters to Joiner
    for node, val, at in walk(schema, value, path):
        if is_malformed(ignored, at) or _near_error(failed, at):
            continue
        if node.unsupported:
            ignored.append(at)
            yield FieldWarning(at, NOT_SUPPORTED, UNSUPPORTED)
            continue
        yield from _advice_warnings(node.advice, val, at)
        if node.expected is not None:
            yield from _expected_warnings(node.expected, val, at)


def _advice_warnings(advice: tuple[Advice, ...], value: Any, path: str) -> Iterator[FieldWarning]:
    for item in advice:
        try:
            holds = item.holds(value)
            message = item.message if holds or item.describe is None else item.describe(value)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, StopIteration):
            continue  # not the shape this advice reads: the schema errors say so
        if not holds:
            yield FieldWarning(_join(path, item.field_path), message, item.code)


def _expected_warnings(expected: Schema, value: Any, path: str) -> Iterator[FieldWarning]:
    """A free-form field against what Joiner reads there: unknown fields are ignored,
    values Joiner cannot use are ignored too; both are warnings. The advice on the whole
    (pairs of settings) is given on what is left once the unusable fields are set aside."""
    errors = schema_errors(expected, value, path)
    for error in errors:
        if error.decoding:
            yield FieldWarning(error.path, NOT_SUPPORTED, UNSUPPORTED)
        else:
            yield FieldWarning(error.path, f"{error.message}; {IGNORED}", KUBELET)
    if not isinstance(value, dict):
        return  # the type error says it all
    failed = [error.path for error in errors]
    usable = {k: v for k, v in value.items() if not is_malformed(failed, _join(path, f".{k}"))}
    for node, val, at in walk(expected, usable, path):
        for warning in _advice_warnings(node.advice, val, at):
            yield FieldWarning(warning.path, f"{warning.message}; {IGNORED}", warning.code)


def _near_error(failed: list[str], path: str) -> bool:
    """An error at or below ``path`` (its value is malformed), or above it (the rule that
    failed there already covers it)."""
    return is_malformed(failed, path) or any(
        path.startswith((error + ".", error + "[")) for error in failed
    )


def _first_field(path: str) -> str:
    match = re.match(r"[^.\[]+", path)
    return match.group(0) if match else ""


def _join(path: str, suffix: str) -> str:
    return (path + suffix) if path else suffix.removeprefix(".")
