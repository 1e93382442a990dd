"""The provisioning batch window [SCHED-2]: idle timeout from the last new pod, capped by
the maximum from the first; a pod seen before does not extend it."""

from __future__ import annotations

from joiner.clock import FakeClock
from joiner.controllers.provisioning import Batcher


def test_no_window_until_the_first_trigger():
    assert Batcher(FakeClock(0), idle=1, maximum=10).remaining() is None


def test_idle_timeout_restarts_with_each_new_pod():
    clock = FakeClock(0)
    batcher = Batcher(clock, idle=1, maximum=10)
    assert batcher.trigger("a") is True  # opened the window
    clock.advance(0.6)
    assert batcher.trigger("b") is False
    assert batcher.remaining() == 1.0
    clock.advance(1)
    assert batcher.remaining() == 0.0


def test_seen_pod_does_not_extend_the_window():
    clock = FakeClock(0)
    batcher = Batcher(clock, idle=1, maximum=10)
    batcher.trigger("a")
    clock.advance(0.5)
    batcher.trigger("a")  # an update of the same pod
    assert batcher.remaining() == 0.5


def test_maximum_caps_a_busy_window():
    clock = FakeClock(0)
    batcher = Batcher(clock, idle=1, maximum=3)
    for i in range(6):
        batcher.trigger(f"p{i}")
        clock.advance(0.5)
    assert clock.now() == 3.0
    assert batcher.remaining() == 0.0


def test_closing_starts_a_fresh_window_that_forgets_seen_pods():
    clock = FakeClock(0)
    batcher = Batcher(clock, idle=1, maximum=10)
    batcher.trigger("a")
    clock.advance(1)
    batcher.close()
    assert batcher.remaining() is None
    assert batcher.trigger("a") is True
    assert batcher.remaining() == 1.0
