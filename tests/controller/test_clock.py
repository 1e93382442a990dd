"""Injected clocks and Kubernetes timestamps."""

import time

import pytest
from joiner.clock import Clock, FakeClock, RealClock, from_rfc3339, to_micro_time, to_rfc3339

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock()
    assert clock.now() == T0
    assert clock.now() == T0
    clock.advance(1.5)
    assert clock.now() == T0 + 1.5
    clock.set(T0 + 10)
    assert clock.now() == T0 + 10
    clock.advance(0)
    assert clock.now() == T0 + 10


def test_fake_clock_cannot_go_backwards() -> None:
    clock = FakeClock(100.0)
    with pytest.raises(ValueError, match="cannot go backwards"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="cannot go backwards"):
        clock.set(99.0)
    assert clock.now() == 100.0


def test_real_clock_reads_the_wall() -> None:
    before = time.time()
    now = RealClock().now()
    assert before <= now <= time.time()


def test_both_clocks_satisfy_the_protocol() -> None:
    clocks: list[Clock] = [RealClock(), FakeClock()]
    assert all(isinstance(c.now(), float) for c in clocks)


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (T0, "2026-01-01T00:00:00Z"),
        (T0 + 0.999, "2026-01-01T00:00:00Z"),  # second precision, truncated
        (T0 + 86_399, "2026-01-01T23:59:59Z"),
        (0.0, "1970-01-01T00:00:00Z"),
    ],
)
def test_to_rfc3339(t: float, text: str) -> None:
    assert to_rfc3339(t) == text


def test_to_micro_time_keeps_microseconds_and_reads_back() -> None:
    assert to_micro_time(T0 + 0.25) == "2026-01-01T00:00:00.250000Z"
    assert from_rfc3339(to_micro_time(T0 + 0.25)) == T0 + 0.25


@pytest.mark.parametrize(
    ("text", "t"),
    [
        ("2026-01-01T00:00:00Z", T0),
        ("2026-01-01T01:00:00+01:00", T0),
        ("2026-01-01T00:00:00.5Z", T0 + 0.5),
        ("2026-01-01T00:00:00", T0),  # no offset: UTC, never local time
    ],
)
def test_from_rfc3339(text: str, t: float) -> None:
    assert from_rfc3339(text) == t


def test_round_trip() -> None:
    assert from_rfc3339(to_rfc3339(T0 + 3723)) == T0 + 3723


def test_garbage_timestamp_names_the_input() -> None:
    with pytest.raises(ValueError, match="yesterday"):
        from_rfc3339("yesterday")
