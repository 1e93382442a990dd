"""Status conditions on plain lists of dicts."""

from joiner.api import conditions as cond
from joiner.clock import FakeClock, to_rfc3339

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def test_set_condition_appends_with_defaults() -> None:
    conditions: list[dict] = []
    assert cond.set_condition(conditions, "Launched", cond.TRUE, T0) is True
    assert conditions == [
        {
            "type": "Launched",
            "status": "True",
            "reason": "Launched",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]


def test_transition_time_moves_only_when_the_status_changes() -> None:
    clock = FakeClock(T0)
    conditions: list[dict] = []
    cond.set_condition(conditions, "Ready", cond.FALSE, clock.now(), reason="NotReady")
    clock.advance(60)
    changed = cond.set_condition(
        conditions, "Ready", cond.FALSE, clock.now(), reason="StillNotReady", message="waiting"
    )
    assert changed is True
    assert conditions[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert conditions[0]["reason"] == "StillNotReady"
    assert conditions[0]["message"] == "waiting"
    clock.advance(60)
    assert cond.set_condition(conditions, "Ready", cond.TRUE, clock.now()) is True
    assert conditions[0]["lastTransitionTime"] == to_rfc3339(T0 + 120) == "2026-01-01T00:02:00Z"
    assert conditions[0]["reason"] == "Ready"


def test_setting_the_same_condition_again_changes_nothing() -> None:
    conditions: list[dict] = []
    cond.set_condition(conditions, "Drifted", cond.TRUE, T0, reason="AMIDrift", message="m")
    before = [dict(c) for c in conditions]
    assert cond.set_condition(conditions, "Drifted", cond.TRUE, T0 + 5, "AMIDrift", "m") is False
    assert conditions == before


def test_observed_generation_is_recorded() -> None:
    conditions: list[dict] = []
    cond.set_condition(conditions, "Ready", cond.TRUE, T0, observed_generation=3)
    assert conditions[0]["observedGeneration"] == 3
    assert cond.set_condition(conditions, "Ready", cond.TRUE, T0, observed_generation=4) is True
    assert conditions[0]["observedGeneration"] == 4


def test_get_and_is_true() -> None:
    conditions = [
        {"type": "Launched", "status": "True"},
        {"type": "Registered", "status": "False"},
        {"type": "Initialized", "status": "Unknown"},
    ]
    assert cond.get_condition(conditions, "Registered") == {"type": "Registered", "status": "False"}
    assert cond.get_condition(conditions, "Missing") is None
    assert cond.get_condition(None, "Launched") is None
    assert cond.is_true(conditions, "Launched") is True
    assert cond.is_true(conditions, "Registered") is False
    assert cond.is_true(conditions, "Initialized") is False
    assert cond.is_true(conditions, "Missing") is False
    assert cond.is_true(None, "Launched") is False


def test_remove_condition() -> None:
    conditions = [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]
    assert cond.remove_condition(conditions, "A") is True
    assert conditions == [{"type": "B", "status": "True"}]
    assert cond.remove_condition(conditions, "A") is False
    assert conditions == [{"type": "B", "status": "True"}]
