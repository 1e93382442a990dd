"""The token bucket: a burst at once, then the rate; waiting or dropping."""

import pytest
from joiner.ratelimit import TokenBucket


def test_acquire_allows_the_burst_then_paces() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    bucket = TokenBucket(qps=10, burst=3, monotonic=lambda: now[0], sleep=sleep)
    waits = [bucket.acquire() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.1)
    assert waits[4] == pytest.approx(0.1)
    assert sum(slept) == pytest.approx(0.2)


def test_try_acquire_takes_the_burst_then_refuses_until_tokens_come_back() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=5, burst=10, monotonic=lambda: now[0])
    assert [bucket.try_acquire() for _ in range(12)] == [True] * 10 + [False] * 2
    now[0] = 0.1  # half a token
    assert bucket.try_acquire() is False
    now[0] = 0.2  # a whole token: a refusal takes nothing
    assert [bucket.try_acquire() for _ in range(2)] == [True, False]
    now[0] = 100.0  # refills to the burst, not beyond
    assert [bucket.try_acquire() for _ in range(11)] == [True] * 10 + [False]


def test_rate_and_burst_must_be_positive() -> None:
    with pytest.raises(ValueError, match="qps must be > 0 and burst >= 1"):
        TokenBucket(qps=0, burst=1)
    with pytest.raises(ValueError, match="qps must be > 0 and burst >= 1"):
        TokenBucket(qps=1, burst=0)
