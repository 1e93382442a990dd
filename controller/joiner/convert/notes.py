"""The report of one old object: walks it against the table in ``joiner.convert.fields``
and gives a note for every field it sets; a field the table does not know is refused
(never dropped silently), and so is one that cannot be converted at all."""

from __future__ import annotations

from typing import Any

from joiner.convert.fields import TABLES, Field
from joiner.convert.report import ConversionError, Note, Outcome

_TYPE_META = ("apiVersion", "kind", "metadata")


def field_notes(obj: dict[str, Any], source: str, targets: dict[str, str]) -> list[Note]:
    """One note per field of the old ``obj`` found in its table. ``targets`` names the v1
    object of each kind it goes to (notes read ``Kind/name field``)."""
    table = {entry.path: entry for entry in TABLES[(obj["apiVersion"], obj["kind"])]}
    notes: list[Note] = []
    for key, value in obj.items():
        if key not in _TYPE_META:
            _walk(table, key, key, value, source, targets, notes)
    return notes


def _walk(
    table: dict[str, Field],
    pattern: str,
    path: str,
    value: Any,
    source: str,
    targets: dict[str, str],
    notes: list[Note],
) -> None:
    entry = table.get(pattern)
    deeper = any(p.startswith((f"{pattern}.", f"{pattern}[].")) for p in table)
    if entry is None and not deeper:
        raise ConversionError(source, path, "unknown field")
    if entry is not None:
        notes.append(_note(entry, path, source, targets))
    if not deeper or value is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(table, f"{pattern}.{key}", f"{path}.{key}", item, source, targets, notes)
    elif isinstance(value, list) and any(p.startswith(f"{pattern}[].") for p in table):
        for index, item in enumerate(value):
            for key, inner in (item if isinstance(item, dict) else {}).items():
                at, where = f"{pattern}[].{key}", f"{path}[{index}].{key}"
                _walk(table, at, where, inner, source, targets, notes)
    elif entry is None:
        raise ConversionError(source, path, f"expected an object, got {type(value).__name__}")


def _note(entry: Field, path: str, source: str, targets: dict[str, str]) -> Note:
    if entry.blocking:
        raise ConversionError(source, path, f"cannot be converted: {entry.message}")
    if entry.target is None:
        return Note(source, path, Outcome.NO_EQUIVALENT, message=entry.message)
    kind, _, field = entry.target.partition(" ")
    return Note(
        source, path, Outcome.CONVERTED, f"{kind}/{targets.get(kind, '?')} {field}", entry.message
    )
