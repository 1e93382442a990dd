"""A CapacityBuffer's time windows annotation [joiner.api.capacitywindows]: what it reads,
and for bad input one error per problem, naming the field, with its exact text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from joiner.api.annotations import AnnotationError
from joiner.api.capacitywindows import FIELD, Window, parse_windows, windows_errors


def test_a_window_as_written() -> None:
    text = (
        "- {name: business-hours, schedule: '0 8 * * 1-5', timeZone: Europe/Paris,"
        " duration: 10h, percentage: 20}\n"
        "- {schedule: '@daily', duration: 1h30m, replicas: 0, limits: {cpu: '2'}}\n"
    )
    assert parse_windows(text, scalable=True) == (
        Window(
            0,
            "business-hours",
            "0 8 * * 1-5",
            "0 8 * * 1-5",
            "Europe/Paris",
            36000.0,
            "10h",
            percentage=20,
        ),
        Window(
            1, "", "@daily", "0 0 * * *", "UTC", 5400.0, "1h30m", replicas=0, limits={"cpu": 2000}
        ),
    )
    assert parse_windows(None, scalable=False) == ()


def _errors(text: str, scalable: bool = True) -> list[str]:
    with pytest.raises(AnnotationError) as raised:
        parse_windows(text, scalable)
    return [str(error).removeprefix(FIELD) for error in raised.value.errors]


GOOD = {"schedule": "0 8 * * 1-5", "duration": "10h", "replicas": 1}
NOT_CRON = "is not a cron schedule (5 fields like '0 8 * * 1-5', or a macro like @daily)"
IANA = "(an IANA name like Europe/Paris, or UTC)"
NOT_DURATION = "is not a duration in hours and minutes above zero like 10h or 1h30m"
KNOWN = "name, schedule, timeZone, duration, replicas, percentage, limits"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"schedule": "0 8 * *"}, f"[0].schedule: '0 8 * *' {NOT_CRON}"),
        ({"schedule": "0 25 * * *"}, f"[0].schedule: '0 25 * * *' {NOT_CRON}"),
        ({"schedule": None}, "[0].schedule: required"),
        ({"schedule": "0 0 30 2 *"}, "[0].schedule: '0 0 30 2 *' never starts"),
        ({"timeZone": "Europe/Pariss"}, f"[0].timeZone: unknown time zone 'Europe/Pariss' {IANA}"),
        ({"timeZone": "../etc/passwd"}, f"[0].timeZone: unknown time zone '../etc/passwd' {IANA}"),
        ({"duration": "10 hours"}, f"[0].duration: '10 hours' {NOT_DURATION}"),
        ({"duration": "0h"}, f"[0].duration: '0h' {NOT_DURATION}"),
        ({"duration": None}, "[0].duration: required"),
        ({"replicas": -1}, "[0].replicas: expected a whole number >= 0, got -1"),
        ({"replicas": "3"}, "[0].replicas: expected a whole number >= 0, got '3'"),
        (
            {"limits": {"cpu": "lots"}},
            "[0].limits.cpu: invalid value 'lots': expected a quantity like 500m, 2, 4Gi or 100G",
        ),
        (
            {"replicas": None},
            "[0]: one of replicas, percentage and limits must be set (replicas: 0 for none)",
        ),
        ({"size": 3}, f"[0].size: unknown field (one of {KNOWN})"),
    ],
)
def test_each_bad_field_is_named(change: dict[str, Any], expected: str) -> None:
    window = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    assert _errors(json.dumps([window])) == [expected]


def test_a_percentage_needs_a_scalable_ref() -> None:
    text = "[{schedule: '@daily', duration: 1h, percentage: 20}]"
    assert _errors(text, scalable=False) == [
        "[0].percentage: only with spec.scalableRef (a percentage of its replicas)"
    ]


def test_every_problem_of_every_window_is_reported() -> None:
    text = (
        "[{schedule: x, duration: 1h, replicas: 1}, 7,"
        " {schedule: '@daily', timeZone: Mars/Olympus}]"
    )
    assert _errors(text) == [
        f"[0].schedule: 'x' {NOT_CRON}",
        "[1]: expected a mapping with schedule, duration and a size",
        f"[2].timeZone: unknown time zone 'Mars/Olympus' {IANA}",
        "[2].duration: required",
        "[2]: one of replicas, percentage and limits must be set (replicas: 0 for none)",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{schedule: '@daily'}", ": expected a list of windows (a YAML or JSON list of mappings)"),
        ("[unclosed", ": not YAML: "),
    ],
)
def test_the_annotation_must_be_a_yaml_list(text: str, expected: str) -> None:
    [error] = _errors(text)
    assert error.startswith(expected), error


def test_windows_errors_read_the_annotation_of_a_manifest() -> None:
    buffer = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {
            "name": "spare",
            "annotations": {
                "joiner.sh/capacity-windows": "[{schedule: '@daily', duration: 1h, percentage: 5}]"
            },
        },
        "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 1},
    }
    assert [str(e) for e in windows_errors(buffer)] == [
        f"{FIELD}[0].percentage: only with spec.scalableRef (a percentage of its replicas)"
    ]
    buffer["spec"] = {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}}
    assert windows_errors(buffer) == []
