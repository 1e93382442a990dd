"""Reading resource properties the way the policy engine hands them over.

The engine passes properties as read-only ``Mapping``/``Sequence`` proxies (not dicts and
lists) that raise ``UnknownValueError`` when a value is not known yet during a preview; the
engine turns that into an advisory "can't run during preview" note. So these helpers accept
any Mapping/Sequence and only touch the fields a check needs: an unknown field elsewhere in
the resource does not stop the check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pulumi_policy.proxy import UnknownValueError

EMPTY: Mapping[str, Any] = {}
T = TypeVar("T")


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one."""
    return value if isinstance(value, Mapping) else EMPTY


def items(value: Any) -> list[Any]:
    """The elements of a list value (a lone string or object is not a list: empty)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return []
    return list(value)


def strings(value: Any) -> list[str]:
    """A string-or-list-of-strings field (IAM's Action, Resource, ...) as a list."""
    if isinstance(value, str):
        return [value]
    return [item for item in items(value) if isinstance(item, str)]


def dig(value: Any, *path: str) -> Any:
    """The value at ``path`` inside nested objects, or None when any step is missing."""
    for key in path:
        value = mapping(value).get(key)
    return value


def is_set(value: Any, key: str) -> bool:
    """True when ``key`` is given a non-empty value; a value that will only be known after
    the update (a KMS key created in the same stack) counts as set."""
    fields = mapping(value)
    if key not in set(fields):  # iterating keys does not touch (unknown) values
        return False
    try:
        return bool(fields[key])
    except UnknownValueError:
        return True


def is_true(value: Any) -> bool:
    """True for ``True`` and for the string ``"true"`` (pulumi-aws types some booleans as
    strings, e.g. a launch template's ``ebs.encrypted``)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def number(value: Any) -> float | None:
    """A numeric field (the engine sends every number as a float; strings are accepted)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def config_value(config: Mapping[str, Any], key: str, default: Any) -> Any:
    """A policy's configuration value, or the documented default when it is not set."""
    value = config.get(key)
    return default if value is None else value


def known(read: Callable[[], T]) -> T | None:
    """``read()``, or None when it touches a value not known during a preview. Stack
    policies use it so one unknown resource does not stop the check of the others."""
    try:
        return read()
    except UnknownValueError:
        return None
