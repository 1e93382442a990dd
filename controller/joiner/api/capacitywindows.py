"""Joiner-only: a CapacityBuffer's time windows, in the annotation ``joiner.sh/capacity-windows``.

Upstream's API has no way to change a buffer's size by the clock; Joiner reads a small
YAML (or JSON) list from an annotation, so a buffer keeps it whichever CRD is installed
(upstream's prunes a spec field it does not know; annotations always survive), and
Karpenter or Cluster Autoscaler simply ignore it. Each window:

    - name: business-hours         # optional, shown in the buffer's status
      schedule: "0 8 * * 1-5"      # cron (5 fields) or a macro (@daily), in timeZone
      timeZone: Europe/Paris       # an IANA name; UTC when omitted
      duration: 10h                # how long after each start (elapsed time, as budgets)
      percentage: 20               # the size while active: replicas, percentage and/or
                                   # limits, as the spec's (replicas: 0 for none)

While a window is active its size replaces the spec's ``replicas``, ``percentage`` and
``limits``; the first active window in the list wins; outside every window the spec's own
size applies. ``parse_windows`` raises ``AnnotationError`` (``joiner.api.annotations``),
one ``FieldError`` per problem, each naming its field
(``metadata.annotations[joiner.sh/capacity-windows][0].timeZone``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from joiner.api.annotations import (
    AnnotationError,
    annotation,
    field_of,
    load_value,
    resource_list,
)
from joiner.api.capacitybuffer import WINDOWS_ANNOTATION
from joiner.api.definitions.nodepool import BUDGET_DURATION
from joiner.api.duration import parse_duration
from joiner.api.nodepool import cron_expression
from joiner.api.resources import ResourceList
from joiner.api.validation import FieldError

FIELD = field_of(WINDOWS_ANNOTATION)
DEFAULT_TIME_ZONE = "UTC"
INT32_MAX = 2**31 - 1
SIZE_FIELDS = ("replicas", "percentage", "limits")
KNOWN_FIELDS = ("name", "schedule", "timeZone", "duration", *SIZE_FIELDS)
_DURATION = re.compile(BUDGET_DURATION)


@dataclass(frozen=True)
class Window:
    """One window: from each start of ``expression`` in ``time_zone``, for ``duration``
    seconds, the buffer's size is ``replicas`` / ``percentage`` / ``limits``."""

    index: int
    name: str
    schedule: str  # as written (a macro or five fields)
    expression: str  # five cron fields
    time_zone: str
    duration: float  # seconds
    duration_text: str  # as written
    replicas: int | None = None
    percentage: int | None = None
    # not hashed (a dict; equal windows still hash alike): windows key a cache
    limits: ResourceList | None = field(default=None, hash=False)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)

    def describe(self) -> str:
        """``window 0 "business-hours" (0 8 * * 1-5 Europe/Paris, 10h)``."""
        named = f" {self.name!r}" if self.name else ""
        return (
            f"window {self.index}{named} ({self.schedule} {self.time_zone}, {self.duration_text})"
        )


@functools.lru_cache(maxsize=256)  # a buffer is resolved every 15 s, its annotation rarely changes
def parse_windows(text: str | None, scalable: bool) -> tuple[Window, ...]:
    """The windows of an annotation's value (none when absent). ``scalable``: the buffer
    has a ``scalableRef`` (``percentage`` needs one)."""
    if text is None:
        return ()
    raw = load_value(WINDOWS_ANNOTATION, text)
    if not isinstance(raw, list):
        message = "expected a list of windows (a YAML or JSON list of mappings)"
        raise AnnotationError([FieldError(FIELD, message)])
    windows, errors = [], []
    for index, item in enumerate(raw):
        window, found = _window(index, item, scalable)
        errors += found
        if window is not None:
            windows.append(window)
    if errors:
        raise AnnotationError(errors)
    return tuple(windows)


def windows_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """What is wrong with a CapacityBuffer's windows annotation (``joiner validate``)."""
    spec = obj.get("spec")
    scalable = isinstance(spec, Mapping) and spec.get("scalableRef") is not None
    try:
        parse_windows(annotation(obj, WINDOWS_ANNOTATION), scalable)
    except AnnotationError as error:
        return error.errors
    return []


def _window(index: int, item: Any, scalable: bool) -> tuple[Window | None, list[FieldError]]:
    path = f"{FIELD}[{index}]"
    if not isinstance(item, Mapping):
        return None, [FieldError(path, "expected a mapping with schedule, duration and a size")]
    errors = [
        FieldError(f"{path}.{key}", f"unknown field (one of {', '.join(KNOWN_FIELDS)})")
        for key in item
        if key not in KNOWN_FIELDS
    ]
    name = item.get("name", "")
    if not isinstance(name, str):
        errors.append(FieldError(f"{path}.name", "expected a string"))
    expression, schedule_errors = _schedule(path, item.get("schedule"))
    zone, zone_errors = _time_zone(path, item.get("timeZone", DEFAULT_TIME_ZONE))
    duration, duration_errors = _duration(path, item.get("duration"))
    size, size_errors = _size(path, item, scalable)
    errors += schedule_errors + zone_errors + duration_errors + size_errors
    if errors:
        return None, errors
    assert expression is not None and zone is not None and duration is not None
    schedule, written = item["schedule"], item["duration"]
    window = Window(index, name, schedule, expression, zone, duration, written, **size)
    return window, []


def _schedule(path: str, schedule: Any) -> tuple[str | None, list[FieldError]]:
    if schedule is None:
        return None, [FieldError(f"{path}.schedule", "required")]
    expression = cron_expression(schedule) if isinstance(schedule, str) else None
    if expression is None:
        message = (
            f"{schedule!r} is not a cron schedule (5 fields like '0 8 * * 1-5', "
            "or a macro like @daily)"
        )
        return None, [FieldError(f"{path}.schedule", message)]
    if not _fires(expression):
        return None, [FieldError(f"{path}.schedule", f"{schedule!r} never starts")]
    return expression, []


def _fires(expression: str) -> bool:
    """Whether a cron expression has a date at all (``0 0 30 2 *`` has none)."""
    try:
        croniter(expression, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError:
        return False
    return True


def _time_zone(path: str, name: Any) -> tuple[str | None, list[FieldError]]:
    message = f"unknown time zone {name!r} (an IANA name like Europe/Paris, or UTC)"
    if not isinstance(name, str) or not name:
        return None, [FieldError(f"{path}.timeZone", message)]
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None, [FieldError(f"{path}.timeZone", message)]
    return name, []


def _duration(path: str, text: Any) -> tuple[float | None, list[FieldError]]:
    if text is None:
        return None, [FieldError(f"{path}.duration", "required")]
    seconds = parse_duration(text) if isinstance(text, str) and _DURATION.match(text) else None
    if not seconds:
        message = f"{text!r} is not a duration in hours and minutes above zero like 10h or 1h30m"
        return None, [FieldError(f"{path}.duration", message)]
    return seconds, []


def _size(path: str, item: Mapping[str, Any], scalable: bool) -> tuple[dict, list[FieldError]]:
    """The window's size fields, parsed; at least one must be set."""
    if not any(key in item for key in SIZE_FIELDS):
        message = "one of replicas, percentage and limits must be set (replicas: 0 for none)"
        return {}, [FieldError(path, message)]
    size: dict[str, Any] = {}
    errors = []
    for key in ("replicas", "percentage"):
        if key not in item:
            continue
        value = item[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
            errors.append(
                FieldError(f"{path}.{key}", f"expected a whole number >= 0, got {value!r}")
            )
        size[key] = value
    if "percentage" in item and not scalable:
        errors.append(
            FieldError(
                f"{path}.percentage", "only with spec.scalableRef (a percentage of its replicas)"
            )
        )
    if "limits" in item:
        limits, limit_errors = resource_list(f"{path}.limits", item["limits"])
        size["limits"] = limits
        errors += limit_errors
    return size, errors
