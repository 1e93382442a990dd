"""The shared backoff: doubling from the base to the cap, jittered into [0.5, 1) of that,
and a Retrier that starts over after a healthy period."""

from __future__ import annotations

import pytest
from joiner.backoff import Backoff, Retrier


def test_delays_double_up_to_the_cap_and_jitter_halves_at_most():
    low = Backoff(base=0.5, cap=4.0, random=lambda: 0.0)
    high = Backoff(base=0.5, cap=4.0, random=lambda: 0.998)
    assert [low.delay(n) for n in range(6)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert [high.delay(n) for n in range(6)] == pytest.approx(
        [0.4995, 0.999, 1.998, 3.996, 3.996, 3.996]
    )
    assert low.delay(10_000) == 2.0  # no overflow however long the outage


def test_a_retrier_escalates_and_starts_over_after_a_healthy_period():
    now = [0.0]
    retrier = Retrier(Backoff(base=1.0, cap=30.0, random=lambda: 0.999), 120.0, lambda: now[0])
    delays = []
    for _ in range(3):
        delays.append(round(retrier.next_delay()))
        now[0] += delays[-1]  # failing again right after each wait
    assert delays == [1, 2, 4]
    now[0] += 119.0  # not yet healthy long enough
    assert round(retrier.next_delay()) == 8
    now[0] += 8 + 120.0  # two healthy minutes after the last wait
    assert round(retrier.next_delay()) == 1
    assert retrier.failures == 5


def test_a_backoff_needs_a_positive_base_below_its_cap():
    with pytest.raises(ValueError, match="base must be > 0 and cap >= base"):
        Backoff(base=0.0, cap=1.0)
    with pytest.raises(ValueError, match="base must be > 0 and cap >= base"):
        Backoff(base=2.0, cap=1.0)
