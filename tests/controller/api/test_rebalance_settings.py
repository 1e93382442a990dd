"""The rebalancer's NodePool annotations: defaults, values, and an error naming each bad one."""

from __future__ import annotations

import pytest
from joiner.api import labels as wk
from joiner.api.rebalance import RebalanceSettings, rebalance_settings


def test_absent_annotations_leave_the_rebalancer_off_with_the_defaults() -> None:
    assert rebalance_settings({"name": "p"}) == (RebalanceSettings(), [])
    assert rebalance_settings({"annotations": {"other": "x"}}) == (RebalanceSettings(), [])
    assert rebalance_settings(None) == (RebalanceSettings(), [])


def test_every_knob_is_read() -> None:
    settings, errors = rebalance_settings(
        {
            "annotations": {
                wk.REBALANCE: "true",
                wk.REBALANCE_EVICTIONS_PER_HOUR: "30",
                wk.REBALANCE_PODS_PER_MOVE: "12",
                wk.REBALANCE_MIN_SAVING_PER_EVICTION: "0.002",
                wk.REBALANCE_AMORTISATION: "1h30m",
            }
        }
    )
    assert errors == []
    assert settings == RebalanceSettings(True, 30, 12, 0.002, 5400.0)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (wk.REBALANCE, "yes", 'must be "true" or "false", got \'yes\''),
        (wk.REBALANCE_EVICTIONS_PER_HOUR, "0", "must be a whole number of at least 1, got '0'"),
        (wk.REBALANCE_PODS_PER_MOVE, "2.5", "must be a whole number of at least 1, got '2.5'"),
        (
            wk.REBALANCE_MIN_SAVING_PER_EVICTION,
            "-1",
            "must be a number of dollars per hour, 0 or more (e.g. 0.002), got '-1'",
        ),
        (
            wk.REBALANCE_MIN_SAVING_PER_EVICTION,
            "nan",
            "must be a number of dollars per hour, 0 or more (e.g. 0.002), got 'nan'",
        ),
        (wk.REBALANCE_AMORTISATION, "Never", "must be a duration such as 30m or 2h, got 'Never'"),
        (wk.REBALANCE_AMORTISATION, "2d", "must be a duration such as 30m or 2h, got '2d'"),
    ],
)
def test_a_bad_value_is_an_error_naming_the_annotation_and_turns_the_pool_off(
    key: str, value: str, message: str
) -> None:
    settings, errors = rebalance_settings({"annotations": {wk.REBALANCE: "true", key: value}})
    assert [str(e) for e in errors] == [f"metadata.annotations[{key}]: {message}"]
    assert settings == RebalanceSettings()


def test_a_misspelt_setting_is_an_error() -> None:
    _, errors = rebalance_settings({"annotations": {"joiner.sh/rebalance-pods-per-mov": "3"}})
    assert [e.path for e in errors] == ["metadata.annotations[joiner.sh/rebalance-pods-per-mov]"]
    assert errors[0].message.startswith("unknown rebalance setting; expected one of")
