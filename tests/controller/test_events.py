"""EventRecorder: one Event per (object, reason, message), repeats counted and written
at most every REPEAT_WRITE_INTERVAL, a new Event once the aggregation window has passed."""

from __future__ import annotations

from joiner.clock import FakeClock, to_rfc3339
from joiner.events import NORMAL, REPEAT_WRITE_INTERVAL, EventRecorder
from joiner.kube.memory import MemoryKube

NODECLAIM = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "default-abc", "uid": "uid-1"},
}


def events(kube: MemoryKube) -> list[tuple[int, str, str]]:
    return sorted(
        (e["count"], e["firstTimestamp"], e["lastTimestamp"])
        for e in kube.list("Event", "default").items
    )


def record_at(recorder: EventRecorder, clock: FakeClock, times: list[float]) -> None:
    start = clock.now()
    for at in times:
        clock.advance(start + at - clock.now())
        recorder.record(NODECLAIM, NORMAL, "DisruptionBlocked", "budget 0 for Drifted")


def test_repeats_soon_after_the_last_write_are_counted_not_written() -> None:
    clock = FakeClock()
    kube = MemoryKube(clock)
    recorder = EventRecorder(kube, clock)
    start = to_rfc3339(clock.now())
    record_at(recorder, clock, [0, 10, 20, 30])
    assert events(kube) == [(1, start, start)]


def test_the_first_repeat_an_interval_after_the_last_write_writes_every_repeat_so_far() -> None:
    clock = FakeClock()
    kube = MemoryKube(clock)
    recorder = EventRecorder(kube, clock)
    t0 = clock.now()
    later = REPEAT_WRITE_INTERVAL + 10
    record_at(recorder, clock, [0, 10, 20, 30, REPEAT_WRITE_INTERVAL - 1, later])
    assert events(kube) == [(6, to_rfc3339(t0), to_rfc3339(t0 + later))]
    record_at(recorder, clock, [0, REPEAT_WRITE_INTERVAL - 1])  # counted, not yet written
    assert events(kube) == [(6, to_rfc3339(t0), to_rfc3339(t0 + later))]


def test_a_repeat_after_the_aggregation_window_starts_a_new_event() -> None:
    clock = FakeClock()
    kube = MemoryKube(clock)
    recorder = EventRecorder(kube, clock)
    t0 = clock.now()
    record_at(recorder, clock, [0, REPEAT_WRITE_INTERVAL, 600])
    assert events(kube) == [
        (1, to_rfc3339(t0 + 600), to_rfc3339(t0 + 600)),
        (2, to_rfc3339(t0), to_rfc3339(t0 + REPEAT_WRITE_INTERVAL)),
    ]


def test_other_messages_are_separate_events() -> None:
    clock = FakeClock()
    kube = MemoryKube(clock)
    recorder = EventRecorder(kube, clock)
    recorder.record(NODECLAIM, NORMAL, "DisruptionBlocked", "budget 0 for Drifted")
    recorder.record(NODECLAIM, NORMAL, "DisruptionBlocked", "do-not-disrupt pod default/x")
    messages = sorted(e["message"] for e in kube.list("Event", "default").items)
    assert messages == ["budget 0 for Drifted", "do-not-disrupt pod default/x"]
