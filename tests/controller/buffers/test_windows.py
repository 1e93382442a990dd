"""When a CapacityBuffer's time windows are active [joiner.buffers.windows]: cron read as
wall-clock time in the window's time zone, duration as elapsed time, a start exactly now
active and an end exactly now not, the next edge of any window, daylight saving time's
skipped and repeated hours, and a window over midnight."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from joiner.api.capacitywindows import Window, parse_windows
from joiner.buffers.windows import Schedule, schedule_at


def _at(text: str) -> float:
    """``2026-01-01T07:00:00`` (UTC) as epoch seconds."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _windows(*items: dict[str, Any]) -> tuple[Window, ...]:
    return parse_windows(json.dumps(list(items)), scalable=True)


BUSINESS_HOURS = {
    "schedule": "0 8 * * 1-5",
    "timeZone": "Europe/Paris",
    "duration": "10h",
    "percentage": 20,
}


@pytest.mark.parametrize(
    ("now", "active", "until"),
    [
        # 2026-01-01 is a Thursday; Paris is UTC+1 in winter: 08:00-18:00 is 07:00-17:00 UTC
        ("2026-01-01T06:59:59", False, "2026-01-01T07:00:00"),
        ("2026-01-01T07:00:00", True, "2026-01-01T17:00:00"),  # the start itself
        ("2026-01-01T16:59:59", True, "2026-01-01T17:00:00"),
        ("2026-01-01T17:00:00", False, "2026-01-02T07:00:00"),  # the end itself: over
        ("2026-01-02T17:00:00", False, "2026-01-05T07:00:00"),  # Friday night: to Monday
        ("2026-01-03T12:00:00", False, "2026-01-05T07:00:00"),  # Saturday noon
        # summer (CEST, UTC+2): 06:00-16:00 UTC
        ("2026-06-01T06:00:00", True, "2026-06-01T16:00:00"),
        ("2026-06-01T05:59:59", False, "2026-06-01T06:00:00"),
    ],
)
def test_business_hours_in_paris(now: str, active: bool, until: str) -> None:
    schedule = schedule_at(_windows(BUSINESS_HOURS), _at(now))
    assert (schedule.active is not None, schedule.until) == (active, _at(until))


def test_the_start_moves_an_hour_in_utc_when_the_clocks_go_forward() -> None:
    """Paris goes to summer time on 2026-03-29 at 01:00 UTC: 08:00 is 07:00 UTC the day
    before and 06:00 UTC that day."""
    [daily] = _windows(
        {"schedule": "0 8 * * *", "timeZone": "Europe/Paris", "duration": "1h", "replicas": 1}
    )
    before = schedule_at([daily], _at("2026-03-28T08:00:00"))
    assert (before.active, before.until) == (None, _at("2026-03-29T06:00:00"))
    assert schedule_at([daily], _at("2026-03-29T06:00:00")).active == daily
    assert schedule_at([daily], _at("2026-03-29T05:59:59")).active is None


def test_a_window_over_midnight_lasts_its_duration_across_the_change_of_clocks() -> None:
    """22:00 for 8h: 06:00 the next morning, in elapsed time; over the night the clocks go
    forward it ends at 07:00 local (05:00 UTC)."""
    [night] = _windows({"schedule": "0 22 * * *", "duration": "8h", "replicas": 0})  # UTC
    assert schedule_at([night], _at("2026-01-01T23:30:00")).until == _at("2026-01-02T06:00:00")
    assert schedule_at([night], _at("2026-01-02T05:59:59")).active == night
    assert schedule_at([night], _at("2026-01-02T06:00:00")).active is None
    [paris] = _windows(
        {"schedule": "0 22 * * *", "timeZone": "Europe/Paris", "duration": "8h", "replicas": 0}
    )
    # 2026-03-28 22:00 CET is 21:00 UTC; 8h later is 05:00 UTC, 07:00 CEST
    at_start = schedule_at([paris], _at("2026-03-28T21:00:00"))
    assert (at_start.active, at_start.until) == (paris, _at("2026-03-29T05:00:00"))


def test_a_start_the_clocks_skip_happens_once_they_have_gone_forward() -> None:
    """02:30 does not exist in Paris on 2026-03-29: the window starts at 03:30 CEST."""
    [skipped] = _windows(
        {"schedule": "30 2 * * *", "timeZone": "Europe/Paris", "duration": "1h", "replicas": 1}
    )
    assert schedule_at([skipped], _at("2026-03-29T00:59:00")).until == _at("2026-03-29T01:30:00")
    assert schedule_at([skipped], _at("2026-03-29T01:10:00")).active is None  # 03:10 CEST
    assert schedule_at([skipped], _at("2026-03-29T01:30:00")).active == skipped


def test_a_start_the_clocks_repeat_counts_once() -> None:
    """02:30 happens twice in Paris on 2026-10-25 (00:30 and 01:30 UTC): the window starts
    at the first and is over at the second."""
    [repeated] = _windows(
        {"schedule": "30 2 * * *", "timeZone": "Europe/Paris", "duration": "30m", "replicas": 1}
    )
    first = schedule_at([repeated], _at("2026-10-25T00:30:00"))
    assert (first.active, first.until) == (repeated, _at("2026-10-25T01:00:00"))
    second = schedule_at([repeated], _at("2026-10-25T01:30:00"))
    assert (second.active, second.until) == (None, _at("2026-10-26T01:30:00"))


def test_the_first_active_window_wins_and_the_nearest_edge_of_any_is_next() -> None:
    lunch = {"name": "lunch", "schedule": "0 12 * * *", "duration": "1h", "replicas": 5}
    day = {"name": "day", "schedule": "0 8 * * *", "duration": "10h", "replicas": 2}
    windows = _windows(lunch, day)
    at_ten = schedule_at(windows, _at("2026-01-01T10:00:00"))
    assert (at_ten.active and at_ten.active.name, at_ten.until) == (
        "day",
        _at("2026-01-01T12:00:00"),
    )
    at_noon = schedule_at(windows, _at("2026-01-01T12:30:00"))
    assert (at_noon.active and at_noon.active.name, at_noon.until) == (
        "lunch",
        _at("2026-01-01T13:00:00"),
    )


def test_no_windows_never_change() -> None:
    assert schedule_at((), _at("2026-01-01T00:00:00")) == Schedule(None, math.inf)


def test_a_leap_day_window_starts_in_the_next_leap_year() -> None:
    [leap] = _windows({"schedule": "0 0 29 2 *", "duration": "24h", "replicas": 1})
    assert schedule_at([leap], _at("2026-01-01T00:00:00")) == Schedule(
        None, _at("2028-02-29T00:00:00")
    )


def test_a_schedule_worked_out_once_holds_until_its_next_edge() -> None:
    """Remembered between edges (a buffer is resolved every 15 s), never past one."""
    windows = _windows(
        BUSINESS_HOURS, {"schedule": "@daily", "duration": "1h", "limits": {"cpu": "2"}}
    )
    first = schedule_at(windows, _at("2026-01-01T07:30:00"))
    assert schedule_at(windows, _at("2026-01-01T16:59:59")) is first
    assert schedule_at(windows, _at("2026-01-01T17:00:00")) == Schedule(
        None, _at("2026-01-02T00:00:00")
    )
    # earlier than when it was worked out: worked out again
    assert schedule_at(windows, _at("2026-01-01T00:30:00")).active == windows[1]
