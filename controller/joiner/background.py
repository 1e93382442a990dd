"""Threads that run for the life of the process and never die silently.

A ``BackgroundLoop`` runs its step over and over on a daemon thread until its stop
event is set. A step that raises, whatever the exception, is logged with its
traceback, counted (``failures``, and ``on_failure`` for the metric) and followed by a
jittered backoff pause; then the loop carries on. The watches, the interruption queue
poller and leader election each run as one. Should a thread end anyway without being
asked to, ``alive`` turns false and /healthz fails, so the pod is restarted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from joiner.backoff import Backoff, Retrier

log = logging.getLogger(__name__)

FAILURE_BACKOFF = Backoff(base=1.0, cap=30.0)

FailureHook = Callable[[str, Exception], None]  # the loop's name and error, after each failure


class BackgroundLoop:
    def __init__(
        self,
        name: str,
        step: Callable[[], None],
        stop: threading.Event,
        *,
        interval: float = 0.0,
        retrier: Retrier | None = None,
        on_failure: FailureHook | None = None,
    ) -> None:
        """``interval``: seconds between two steps that succeeded."""
        self.name = name
        self._step, self._stop, self._interval = step, stop, interval
        self.retrier = retrier or Retrier(FAILURE_BACKOFF)
        self._on_failure = on_failure or (lambda name, err: None)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    @property
    def failures(self) -> int:
        return self.retrier.failures

    @property
    def alive(self) -> bool:
        """False only when the thread ended while nobody had asked it to stop."""
        started = self._thread.ident is not None
        return not started or self._thread.is_alive() or self._stop.is_set()

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._step()
            except Exception as err:
                if self._stop.is_set():
                    return  # failing because the process is stopping: nothing to report
                self._failed(err)
                continue
            if self._interval:
                self._stop.wait(self._interval)

    def _failed(self, err: Exception) -> None:
        delay = self.retrier.next_delay()
        log.error(
            "%s failed, retrying in %.1fs: %s",
            self.name,
            delay,
            err,
            exc_info=True,
            extra={"loop": self.name, "failures": self.failures},
        )
        self._on_failure(self.name, err)
        self._stop.wait(delay)
