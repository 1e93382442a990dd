"""A token bucket: a rate with a burst allowance.

The http adapter paces its requests with it (``acquire`` waits for a token); the
provisioner caps its Nominated events with it (``try_acquire`` drops what is over the
rate), on whatever clock it is given, so the simulator's virtual time paces it too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved up; safe to share between threads."""

    def __init__(
        self,
        qps: float,
        burst: int,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._monotonic, self._sleep = monotonic, sleep
        self._last = monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, sleeping until one is there; returns the seconds waited."""
        with self._lock:
            self._refill()
            self._tokens -= 1
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        if wait > 0:
            self._sleep(wait)
        return wait

    def try_acquire(self) -> bool:
        """Take one token if there is one now; never waits."""
        with self._lock:
            self._refill()
            if self._tokens < 1:
                return False
            self._tokens -= 1
            return True

    def _refill(self) -> None:
        now = self._monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
