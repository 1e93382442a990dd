"""When a buffer's time windows (``joiner.api.capacitywindows``) are active, and the next
moment that changes.

A window starts at each time its cron schedule fires, read as wall-clock time in its time
zone, and lasts ``duration`` of elapsed time (as a disruption budget's). So ``0 8 * * *``
in Europe/Paris starts at 07:00 UTC in winter and 06:00 UTC in summer; a start the clocks
skip (02:30 on the night they go forward) happens when they have gone forward (03:30); a
start the clocks repeat (02:30 on the night they go back) counts once, the first time. A
window active exactly at its start is active; at its end it is not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from croniter import CroniterBadDateError, croniter

from joiner.api.capacitywindows import Window

_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class Schedule:
    """The window in force at a moment (None: the spec's own size) and until when nothing
    changes (the next start or end of any window)."""

    active: Window | None
    until: float


# windows -> (when their schedule was worked out, the schedule): it holds until the next
# edge, and a buffer is resolved every 15 s (croniter is slow to set up).
_KNOWN: dict[tuple[Window, ...], tuple[float, Schedule]] = {}
_KNOWN_AT_MOST = 1024


def schedule_at(windows: Sequence[Window], now: float) -> Schedule:
    """The first window active at ``now`` and the next edge of any window."""
    key = tuple(windows)
    since, known = _KNOWN.get(key, (math.inf, None))
    if known is not None and since <= now < known.until:
        return known
    schedule = _schedule_at(key, now)
    if len(_KNOWN) >= _KNOWN_AT_MOST:
        _KNOWN.clear()
    _KNOWN[key] = (now, schedule)
    return schedule


def _schedule_at(windows: Sequence[Window], now: float) -> Schedule:
    active = None
    edges = [math.inf]
    for window in windows:
        end = last_start(window, now) + window.duration
        if now < end:
            edges.append(end)
            active = active or window
        edges.append(next_start(window, now))
    return Schedule(active, min(edges))


def last_start(window: Window, now: float) -> float:
    """The latest start at or before ``now`` (epoch seconds); -inf when croniter finds
    none."""
    local = _wall_clock(window, now)
    # croniter's get_prev is strictly before its base: a start exactly at `now` counts.
    starts = croniter(window.expression, local.replace(microsecond=0) + _SECOND)
    try:
        while True:
            start = _instant(window, starts.get_prev(datetime))
            if start <= now:  # a skipped wall-clock time may map past `now`
                return start
    except CroniterBadDateError:
        return -math.inf


def next_start(window: Window, now: float) -> float:
    """The earliest start after ``now`` (epoch seconds); inf when croniter finds none."""
    starts = croniter(window.expression, _wall_clock(window, now))
    try:
        while True:
            start = _instant(window, starts.get_next(datetime))
            if start > now:  # a repeated wall-clock time may map before `now`
                return start
    except CroniterBadDateError:
        return math.inf


def _wall_clock(window: Window, now: float) -> datetime:
    """``now`` as the wall-clock time of the window's zone, without the zone."""
    return datetime.fromtimestamp(now, UTC).astimezone(window.zone).replace(tzinfo=None)


def _instant(window: Window, wall_clock: datetime) -> float:
    """A wall-clock time of the window's zone as epoch seconds (fold 0: the first of a
    repeated time; a skipped one is read with the offset before the change)."""
    return wall_clock.replace(tzinfo=window.zone, fold=0).timestamp()
