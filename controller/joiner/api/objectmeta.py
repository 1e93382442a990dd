"""What the API server checks in ``metadata`` when a custom resource is created (its own
ObjectMeta validation; the CRD schema says nothing about metadata).

Decoding, first: an unknown field or a value of the wrong type refuses the request (400).
Then validation (422): the name (or generateName) is a DNS-1123 subdomain, label keys and
annotation keys are qualified names, label values are label values, annotations hold at
most 256 KiB, finalizers are qualified names, owner references name their owner. Paths
and messages are the server's (``metadata.labels`` for any bad label).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

DNS_SUBDOMAIN_MAX = 253
LABEL_MAX = 63
ANNOTATIONS_MAX_BYTES = 256 * 1024
# generateName is cut to leave room for the five random characters the server appends.
GENERATED_SUFFIX = "bcdfg"  # any five of the characters the server draws from
_GENERATE_BASE_MAX = LABEL_MAX - len(GENERATED_SUFFIX)

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
NAME_PART_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character"
)
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character"
)
NAME_REQUIRED = "Required value: name or generateName is required"

_STRINGS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion")
_INTEGERS = ("generation", "deletionGracePeriodSeconds")
_TIMES = ("creationTimestamp", "deletionTimestamp")
_OWNER_STRINGS = ("apiVersion", "kind", "name", "uid")
_OWNER_BOOLEANS = ("controller", "blockOwnerDeletion")
KNOWN_FIELDS = frozenset(
    (*_STRINGS, *_INTEGERS, *_TIMES, "labels", "annotations", "finalizers", "ownerReferences")
) | {"managedFields"}


class MetaProblem(NamedTuple):
    """One problem: ``blocking`` ones stop the API server from running CEL rules; a
    ``decoding`` one refuses the request before any validation (400)."""

    path: str
    message: str
    blocking: bool = False
    decoding: bool = False


# -- the predicates, shared with the kind schemas and the in-memory API server ---------------


def _problems(text: str, most: int, form: re.Pattern[str], message: str) -> list[str]:
    too_long = [f"must be no more than {most} characters"] if len(text) > most else []
    return too_long + ([] if form.fullmatch(text) else [message])


def subdomain_problems(name: str) -> list[str]:
    return _problems(name, DNS_SUBDOMAIN_MAX, _DNS_SUBDOMAIN, SUBDOMAIN_MESSAGE)


def qualified_name_problems(key: str) -> list[str]:
    """Kubernetes' IsQualifiedName: an optional DNS-subdomain prefix and '/', then a name
    part of at most 63 characters."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"a qualified name must consist of a name part and an optional prefix, {key!r}"]
    problems = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in subdomain_problems(prefix)]
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > LABEL_MAX:
        problems.append(f"name part must be no more than {LABEL_MAX} characters")
    if name and not _NAME_PART.fullmatch(name):
        problems.append(NAME_PART_MESSAGE)
    return problems


def is_qualified_name(key: str) -> bool:
    return not qualified_name_problems(key)


def label_value_problems(value: str) -> list[str]:
    return _problems(value, LABEL_MAX, _LABEL_VALUE, LABEL_VALUE_MESSAGE)


def is_label_value(value: str) -> bool:
    return not label_value_problems(value)


def invalid(value: Any, problem: str) -> str:
    """The server's message form: ``Invalid value: "x": why``."""
    shown = value if isinstance(value, str) else repr(value)
    return f'Invalid value: "{shown[:200]}": {problem}'


# -- metadata of a created object -------------------------------------------------------------


def metadata_problems(meta: Any, path: str = "metadata") -> list[MetaProblem]:
    """Every problem the API server finds in ``meta`` when the object is created."""
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [MetaProblem(path, f"must be an object, got {_type_name(meta)}", True, True)]
    decoding = list(_decoding_problems(meta, path))
    if decoding:
        return decoding
    return [
        *_name_problems(meta, path),
        *_map_problems(meta.get("labels"), f"{path}.labels", _label_problems),
        *_map_problems(meta.get("annotations"), f"{path}.annotations", _annotation_problems),
        *_annotation_size(meta.get("annotations"), f"{path}.annotations"),
        *_finalizer_problems(meta.get("finalizers"), f"{path}.finalizers"),
        *_owner_problems(meta.get("ownerReferences"), f"{path}.ownerReferences"),
    ]


def _decoding_problems(meta: dict[str, Any], path: str) -> Iterator[MetaProblem]:
    for name, value in meta.items():
        at = f"{path}.{name}"
        if name not in KNOWN_FIELDS:
            yield MetaProblem(at, "unknown field", True, True)
        elif value is None:
            continue
        elif name in _STRINGS and not isinstance(value, str):
            yield MetaProblem(at, f"must be a string, got {_type_name(value)}", True, True)
        elif name in _INTEGERS and not _is_integer(value):
            yield MetaProblem(at, f"must be an integer, got {_type_name(value)}", True, True)
        elif name in _TIMES and not _is_time(value):
            yield MetaProblem(at, f"must be an RFC 3339 time, got {value!r}", True, True)
        elif name in ("labels", "annotations"):
            yield from _string_map_decoding(value, at)
        elif name in ("finalizers",) and not _is_string_list(value):
            yield MetaProblem(at, "must be a list of strings", True, True)
        elif name in ("ownerReferences", "managedFields"):
            yield from _object_list_decoding(name, value, at)


def _string_map_decoding(value: Any, path: str) -> Iterator[MetaProblem]:
    if not isinstance(value, dict):
        yield MetaProblem(path, f"must be a map of strings, got {_type_name(value)}", True, True)
    elif any(not isinstance(v, str) and v is not None for v in value.values()):
        yield MetaProblem(path, "must be a map of strings (quote the values in YAML)", True, True)


def _object_list_decoding(name: str, value: Any, path: str) -> Iterator[MetaProblem]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        yield MetaProblem(path, "must be a list of objects", True, True)
        return
    if name != "ownerReferences":
        return
    types = {**dict.fromkeys(_OWNER_STRINGS, str), **dict.fromkeys(_OWNER_BOOLEANS, bool)}
    for reference in value:
        for field, wanted in types.items():
            if reference.get(field) is not None and not isinstance(reference[field], wanted):
                yield MetaProblem(f"{path}.{field}", f"must be a {wanted.__name__}", True, True)
        for field in set(reference) - {*_OWNER_STRINGS, *_OWNER_BOOLEANS}:
            yield MetaProblem(f"{path}.{field}", "unknown field", True, True)


def _name_problems(meta: dict[str, Any], path: str) -> list[MetaProblem]:
    name, generate = meta.get("name") or "", meta.get("generateName") or ""
    if not name and not generate:
        return [MetaProblem(f"{path}.name", NAME_REQUIRED, True)]
    problems = []
    if generate:
        # the server checks the prefix with a trailing '-' allowed, then the name it makes
        masked = generate[:-1] + "a" if generate.endswith("-") else generate
        problems += [
            MetaProblem(f"{path}.generateName", invalid(generate, p))
            for p in subdomain_problems(masked)
        ]
        if not name:
            name = generate[:_GENERATE_BASE_MAX] + GENERATED_SUFFIX
    return problems + [
        MetaProblem(f"{path}.name", invalid(name, p)) for p in subdomain_problems(name)
    ]


def _map_problems(value: Any, path: str, check: Any) -> list[MetaProblem]:
    if not value:
        return []
    return [MetaProblem(path, message) for key, v in value.items() for message in check(key, v)]


def _label_problems(key: str, value: str | None) -> list[str]:
    messages = [invalid(key, p) for p in qualified_name_problems(key)]
    return messages + [invalid(value, p) for p in label_value_problems(value or "")]


def _annotation_problems(key: str, _value: str | None) -> list[str]:
    return [invalid(key, p) for p in qualified_name_problems(key.lower())]


def _annotation_size(value: Any, path: str) -> list[MetaProblem]:
    size = sum(len(k.encode()) + len((v or "").encode()) for k, v in (value or {}).items())
    if size > ANNOTATIONS_MAX_BYTES:
        message = f"Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes"
        return [MetaProblem(path, message, True)]
    return []


def _finalizer_problems(value: Any, path: str) -> list[MetaProblem]:
    return [
        MetaProblem(path, invalid(finalizer, problem))
        for finalizer in value or []
        for problem in qualified_name_problems(finalizer)
    ]


def _owner_problems(value: Any, path: str) -> list[MetaProblem]:
    return [
        MetaProblem(f"{path}.{field}", invalid("", "must not be empty"))
        for reference in value or []
        for field in _OWNER_STRINGS
        if not reference.get(field)
    ]


# -- small helpers ---------------------------------------------------------------------------


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_time(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
