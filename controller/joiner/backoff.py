"""Exponential backoff with jitter: the one way Joiner waits before trying again.

``Backoff`` is the policy (first delay, cap); ``delay(attempt)`` is its jittered delay
for the n-th consecutive failure. A single call counts its own attempts (the http
adapter's request retries); a loop that runs for the life of the process (relists,
re-watches, background pollers) keeps a ``Retrier``, which remembers consecutive
failures and starts over at the first delay once it has gone a healthy period without
one. The jitter keeps many clients that failed together (every replica, every watch of
one replica after an API server restart) from retrying in lockstep.

These waits are transport pacing, not decisions: they read the monotonic clock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

HEALTHY_AFTER = 120.0  # seconds without a failure after which a Retrier starts over


@dataclass(frozen=True)
class Backoff:
    base: float  # seconds before the first retry
    cap: float  # the longest single wait
    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.base <= 0 or self.cap < self.base:
            raise ValueError("backoff: base must be > 0 and cap >= base")

    def delay(self, attempt: int) -> float:
        """The wait after the ``attempt``-th consecutive failure (0 = the first): the base
        doubled per attempt up to the cap, then scaled by a random factor in [0.5, 1)."""
        ceiling = min(self.cap, self.base * 2.0 ** min(attempt, 64))
        return ceiling * (0.5 + self.random() / 2)


class Retrier:
    """Consecutive failures of a long-running loop: each ``next_delay()`` waits longer; a
    loop that went ``reset_after`` seconds since its last failure starts over."""

    def __init__(
        self,
        backoff: Backoff,
        reset_after: float = HEALTHY_AFTER,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff, self.reset_after = backoff, reset_after
        self._monotonic = monotonic
        self._attempt = 0
        self._healthy_from: float | None = None  # when the last wait ended
        self.failures = 0  # every failure so far, for reporting

    def next_delay(self) -> float:
        """Record one failure; return how long to wait before trying again."""
        now = self._monotonic()
        if self._healthy_from is not None and now - self._healthy_from >= self.reset_after:
            self._attempt = 0
        delay = self.backoff.delay(self._attempt)
        self._attempt += 1
        self.failures += 1
        self._healthy_from = now + delay
        return delay
