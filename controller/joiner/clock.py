"""Time for decision code comes from an injected clock, never from the wall.

The same reconcilers run in production (``RealClock``), in tests and in the
simulator (``FakeClock``, advanced explicitly), so every wait reads ``now()``.
Times are float seconds since the Unix epoch.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...


class RealClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError("a clock cannot go backwards")
        self._now = t


def to_rfc3339(t: float) -> str:
    """Kubernetes timestamp form (second precision, UTC), e.g. 2026-01-01T00:00:00Z."""
    return datetime.fromtimestamp(int(t), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_micro_time(t: float) -> str:
    """Kubernetes MicroTime form (a Lease's renewTime), e.g. 2026-01-01T00:00:00.250000Z."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_rfc3339(s: str) -> float:
    """Seconds since the epoch; a timestamp without an offset is read as UTC, never local."""
    parsed = datetime.fromisoformat(s.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
