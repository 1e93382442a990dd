"""The reconcile machinery, independent of who drives time.

A ``Reconciler`` handles one key at a time and says when to look again. A
``Manager`` owns one ``WorkQueue`` per reconciler and runs whatever is due at
``clock.now()``. Production drives it from a thread on the wall clock; the
simulator calls ``run_due()`` at virtual times and jumps the clock to
``next_due()``. Controller code never sleeps.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from joiner.clock import Clock

log = logging.getLogger(__name__)

# Exponential backoff for reconciles that raise: 1s, 2s, 4s ... capped.
ERROR_BACKOFF_BASE = 1.0
ERROR_BACKOFF_MAX = 300.0


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next: nothing, or another look after a delay."""

    requeue_after: float | None = None


DONE = Result()
# Until every watched kind is listed the state is partial (a NodeClaim seen before its
# NodePool would look like one without a pool): controllers that judge on it wait this long.
NOT_SYNCED = Result(requeue_after=1.0)


class Reconciler(Protocol):
    name: str

    def reconcile(self, key: str) -> Result: ...


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    key: str = field(compare=False)


class WorkQueue:
    """Keys to reconcile, each at most once: a key added while queued keeps the
    earliest due time. Delays are measured on the injected clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._heap: list[_Due] = []
        self._due_at: dict[str, float] = {}
        self._seq = 0
        self._failures: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._due_at)

    def add(self, key: str, delay: float = 0.0) -> None:
        at = self._clock.now() + max(0.0, delay)
        current = self._due_at.get(key)
        if current is not None and current <= at:
            return
        self._due_at[key] = at
        self._seq += 1
        heapq.heappush(self._heap, _Due(at, self._seq, key))

    def pop_due(self) -> str | None:
        """The next key whose time has come, or None."""
        now = self._clock.now()
        while self._heap and self._heap[0].at <= now:
            item = heapq.heappop(self._heap)
            if self._due_at.get(item.key) == item.at:
                del self._due_at[item.key]
                return item.key
        return None

    def next_due(self) -> float | None:
        while self._heap and self._due_at.get(self._heap[0].key) != self._heap[0].at:
            heapq.heappop(self._heap)  # superseded entry
        return self._heap[0].at if self._heap else None

    def failed(self, key: str) -> float:
        """Record a failure and return the backoff before the next try."""
        count = self._failures.get(key, 0)
        self._failures[key] = count + 1
        return min(ERROR_BACKOFF_MAX, ERROR_BACKOFF_BASE * 2**count)

    def succeeded(self, key: str) -> None:
        self._failures.pop(key, None)


class Manager:
    """Runs reconcilers over their queues; one reconcile at a time."""

    def __init__(self, clock: Clock, pump: Callable[[], object] | None = None) -> None:
        self.clock = clock
        # Called before every reconcile so each one sees the writes of the last.
        self._pump = pump or (lambda: None)
        self._reconcilers: dict[str, Reconciler] = {}
        self._queues: dict[str, WorkQueue] = {}
        self.reconcile_count = 0
        self.error_count = 0

    def register(self, reconciler: Reconciler, initial_keys: Iterable[str] = ()) -> WorkQueue:
        if reconciler.name in self._reconcilers:
            raise ValueError(f"reconciler {reconciler.name!r} registered twice")
        queue = WorkQueue(self.clock)
        self._reconcilers[reconciler.name] = reconciler
        self._queues[reconciler.name] = queue
        for key in initial_keys:
            queue.add(key)
        return queue

    def enqueue(self, name: str, key: str, delay: float = 0.0) -> None:
        self._queues[name].add(key, delay)

    def enqueuer(self, name: str) -> Callable[[str], None]:
        queue = self._queues[name]
        return lambda key: queue.add(key)

    def run_due(self, limit: int = 100_000, proceed: Callable[[], bool] = lambda: True) -> int:
        """Reconcile every key whose time has come (including keys that become due
        immediately while running), as long as ``proceed()`` allows before each one (a
        replica that lost its leadership stops at once). Returns how many ran."""
        ran = 0
        progressed = True
        while progressed and ran < limit:
            progressed = False
            for name, queue in self._queues.items():
                if not proceed():
                    return ran
                self._pump()
                key = queue.pop_due()
                if key is None:
                    continue
                self._run_one(name, queue, key)
                ran += 1
                progressed = True
        return ran

    def next_due(self) -> float | None:
        times = [t for q in self._queues.values() if (t := q.next_due()) is not None]
        return min(times, default=None)

    def _run_one(self, name: str, queue: WorkQueue, key: str) -> None:
        self.reconcile_count += 1
        try:
            result = self._reconcilers[name].reconcile(key)
        except Exception:  # a reconcile bug must not stop the other controllers
            self.error_count += 1
            delay = queue.failed(key)
            log.exception("reconcile failed", extra={"controller": name, "key": key})
            queue.add(key, delay)
            return
        queue.succeeded(key)
        if result.requeue_after is not None:
            queue.add(key, result.requeue_after)
