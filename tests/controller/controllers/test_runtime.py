from dataclasses import dataclass, field

from joiner.clock import FakeClock
from joiner.controllers.runtime import DONE, Manager, Result, WorkQueue


@dataclass
class Recorder:
    name: str
    results: dict[str, Result] = field(default_factory=dict)
    fail: set[str] = field(default_factory=set)
    calls: list[tuple[float, str]] = field(default_factory=list)
    clock: FakeClock | None = None

    def reconcile(self, key: str) -> Result:
        self.calls.append((self.clock.now() if self.clock else 0.0, key))
        if key in self.fail:
            raise RuntimeError(f"boom {key}")
        return self.results.get(key, DONE)


def test_queue_deduplicates_and_keeps_earliest_due_time():
    clock = FakeClock(0)
    queue = WorkQueue(clock)
    queue.add("a", delay=10)
    queue.add("a", delay=5)
    queue.add("a", delay=20)
    assert len(queue) == 1
    assert queue.next_due() == 5
    assert queue.pop_due() is None
    clock.advance(5)
    assert queue.pop_due() == "a"
    assert queue.pop_due() is None
    assert queue.next_due() is None


def test_queue_pops_in_due_order():
    clock = FakeClock(0)
    queue = WorkQueue(clock)
    queue.add("late", delay=3)
    queue.add("now")
    queue.add("soon", delay=1)
    clock.advance(3)
    assert [queue.pop_due(), queue.pop_due(), queue.pop_due()] == ["now", "soon", "late"]


def test_manager_requeues_after_the_requested_delay():
    clock = FakeClock(0)
    manager = Manager(clock)
    rec = Recorder("r", results={"k": Result(requeue_after=30)}, clock=clock)
    manager.register(rec, initial_keys=["k"])
    assert manager.run_due() == 1
    assert manager.next_due() == 30
    clock.set(29)
    assert manager.run_due() == 0
    clock.set(30)
    assert manager.run_due() == 1
    assert rec.calls == [(0, "k"), (30, "k")]


def test_failing_reconcile_backs_off_exponentially_and_others_still_run():
    clock = FakeClock(0)
    manager = Manager(clock)
    bad = Recorder("bad", fail={"x"}, clock=clock)
    good = Recorder("good", clock=clock)
    manager.register(bad, initial_keys=["x"])
    manager.register(good, initial_keys=["y"])
    manager.run_due()
    assert good.calls == [(0, "y")]
    assert manager.error_count == 1
    times = []
    for _ in range(4):
        clock.set(manager.next_due())
        times.append(clock.now())
        manager.run_due()
    assert times == [1, 3, 7, 15]


def test_duplicate_registration_is_rejected():
    manager = Manager(FakeClock(0))
    manager.register(Recorder("r"))
    try:
        manager.register(Recorder("r"))
    except ValueError as err:
        assert "registered twice" in str(err)
    else:
        raise AssertionError("expected ValueError")
