"""Waiting for what real processes do on the wall clock (a control plane, a controller on
its own thread or in its own process): poll at a short interval, never sleep a fixed
time, and say what was awaited when it does not come."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_INTERVAL = 0.05  # seconds between two looks


def wait_for(
    condition: Callable[[], T], what: str, timeout: float, interval: float = POLL_INTERVAL
) -> T:
    """The first truthy value of ``condition()``; an AssertionError naming ``what`` when
    there is none after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
