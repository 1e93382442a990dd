"""``joiner validate FILE...``: check NodePool, NodeClaim and EC2NodeClass manifests.

Each Joiner object gets one line: ``FILE: Kind/name: OK`` or one line per problem,
``FILE: Kind/name: field.path: what is wrong`` for what the API server refuses (errors),
``FILE: Kind/name: warning: field.path: what Joiner does [code]`` for what it accepts
but Joiner cannot honour as written (the code names the reason in docs/compatibility.md).
Joiner-only annotations (a CapacityBuffer's time windows, a NodePool's spare capacity)
are checked too: the API server
takes any annotation, but Joiner refuses a bad one, and so does this command.
Objects of other kinds (a Deployment in the same file) are reported as skipped.
``kind: List`` documents are expanded. Exit status: 0 when every Joiner object is valid
(warnings included, unless ``--strict``), 2 when anything is not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from typing import Any

from joiner import yamlio
from joiner.api import capacitybuffer, nodepool
from joiner.api.capacitywindows import windows_errors
from joiner.api.compatibility import validation_warnings
from joiner.api.rebalance import rebalance_settings
from joiner.api.sparecapacity import spare_errors
from joiner.api.validation import FieldError, is_joiner_api_version, validate_object
from joiner.convert import ConversionError, conversion_warnings, convert_objects, is_old_kind

STDIN = "-"
# The warning code of an old Karpenter kind checked as its v1 conversion.
CONVERTED = "converted"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check NodePool, NodeClaim and EC2NodeClass manifests",
        description="Check NodePool, NodeClaim and EC2NodeClass manifests as the API server "
        "would with Karpenter's CRDs (errors), and warn about what Joiner cannot honour as "
        "written (see docs/compatibility.md). Other kinds are skipped. Exit status 0 when "
        "all are valid, 2 otherwise.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML file, or - for stdin")
    parser.add_argument(
        "--strict", action="store_true", help="count warnings as errors (exit status 2)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    invalid = False
    for name in args.files:
        for line, ok in check_file(name, strict=args.strict):
            print(line)
            invalid |= not ok
    return 2 if invalid else 0


def check_file(name: str, strict: bool = False) -> Iterator[tuple[str, bool]]:
    """(line to print, fine?) for every object of one file; with ``strict`` a warning is
    not fine."""
    label = "<stdin>" if name == STDIN else name
    try:
        text = yamlio.read_text(sys.stdin.buffer if name == STDIN else name)
    except (OSError, UnicodeDecodeError, yamlio.InputTooLarge) as error:
        yield f"{label}: cannot read: {read_problem(error)}", False
        return
    found = False
    for line, ok in _check_text(label, text, strict):
        found = True
        yield line, ok
    if not found:
        yield f"{label}: no objects", True


def _check_text(label: str, text: str, strict: bool) -> Iterator[tuple[str, bool]]:
    index = 0
    try:
        for index, document in enumerate(yamlio.load_all(text), start=1):
            for obj in objects_of(document):
                yield from _check_object(label, index, obj, strict)
    except yamlio.YAMLInputError as error:
        yield f"{label}: document {index + 1}: {error}", False


def objects_of(document: Any) -> list[Any]:
    """The objects of one document: none for an empty one, the items of a ``kind: List``."""
    if document is None:
        return []
    if isinstance(document, dict) and document.get("kind") == "List":
        items = document.get("items")
        return items if isinstance(items, list) else [document]
    return [document]


def _check_object(label: str, index: int, obj: Any, strict: bool) -> Iterator[tuple[str, bool]]:
    where = f"{label}: {_describe(obj, index)}"
    if _is_foreign(obj):
        yield f"{where}: skipped (not a Joiner kind)", True
        return
    if is_old_kind(obj):
        yield from _check_old_kind(label, index, obj, strict)
        return
    errors = validate_object(obj) + joiner_only_errors(obj)
    warnings = validation_warnings(obj)
    if not errors and not warnings:
        yield f"{where}: OK", True
    for error in errors:
        yield f"{where}: {error}", False
    for warning in warnings:
        yield f"{where}: warning: {warning} [{warning.code}]", not strict


def _check_old_kind(label: str, index: int, obj: Any, strict: bool) -> Iterator[tuple[str, bool]]:
    """An old Karpenter kind is checked as the v1 objects it converts to, with a warning
    naming its converted fields (``joiner convert`` writes them)."""
    try:
        result = convert_objects([obj])
    except ConversionError as error:
        yield f"{label}: {error}", False
        return
    for warning in conversion_warnings(result):
        yield f"{label}: warning: {warning} [{CONVERTED}]", not strict
    for converted in result.objects:
        yield from _check_object(label, index, converted, strict)


def joiner_only_errors(obj: Any) -> list[FieldError]:
    """What Joiner refuses in its own annotations (the API server accepts any)."""
    check = JOINER_ONLY_CHECKS.get(obj.get("kind")) if isinstance(obj, dict) else None
    return check(obj) if check is not None else []


def _nodepool_errors(obj: dict[str, Any]) -> list[FieldError]:
    """A NodePool's spare capacity (``joiner.api.sparecapacity``) and rebalance
    (``joiner.api.rebalance``) annotations."""
    return spare_errors(obj) + rebalance_settings(obj.get("metadata"))[1]


# Kind -> the check of its Joiner-only annotations.
JOINER_ONLY_CHECKS: dict[str, Callable[[dict[str, Any]], list[FieldError]]] = {
    capacitybuffer.KIND: windows_errors,
    nodepool.KIND: _nodepool_errors,
}


def _is_foreign(obj: Any) -> bool:
    """A well-formed object of some other API (apps/v1 Deployment, v1 ConfigMap, ...)."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("kind"), str)
        and isinstance(obj.get("apiVersion"), str)
        and not is_joiner_api_version(obj["apiVersion"])
    )


def _describe(obj: Any, index: int) -> str:
    if not isinstance(obj, dict):
        return f"document {index}"
    meta = obj.get("metadata")
    name = (meta.get("name") or meta.get("generateName")) if isinstance(meta, dict) else None
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else None
    if kind and isinstance(name, str) and name:
        return f"{kind}/{name}"
    return f"{kind} in document {index}" if kind else f"document {index}"


def read_problem(error: OSError | UnicodeDecodeError | yamlio.InputTooLarge) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)
