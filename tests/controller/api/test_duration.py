"""NodePool durations: 30s, 10m, 1h30m, 720h and Never."""

import pytest
from joiner.api.duration import NEVER, DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0s", 0.0),
        ("30s", 30.0),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("720h", 2_592_000.0),
        ("1h1m1s", 3661.0),
        ("90s", 90.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("2m30s", 150.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_never_is_none() -> None:
    assert parse_duration(NEVER) is None
    assert NEVER == "Never"


@pytest.mark.parametrize("text", ["", "never", "10", "10x", "h", "1h 30m", "-5m", "1d", " 5s"])
def test_bad_durations_name_the_input(text: str) -> None:
    with pytest.raises(DurationError) as raised:
        parse_duration(text)
    assert repr(text) in str(raised.value)
    assert "expected e.g. 30s, 10m, 1h30m or Never" in str(raised.value)


@pytest.mark.parametrize("value", [None, 30, 1.5, ["5m"]])
def test_non_strings_are_rejected(value: object) -> None:
    with pytest.raises(DurationError):
        parse_duration(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.4, "0s"),
        (59, "59s"),
        (60, "1m"),
        (61, "1m1s"),
        (3600, "1h"),
        (5400, "1h30m"),
        (3661, "1h1m1s"),
        (2_592_000, "720h"),
        (-90, "-1m30s"),
        (None, "Never"),
    ],
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [0, 1, 59, 60, 3599, 3600, 86_399, 2_592_000, None])
def test_format_then_parse_round_trips(seconds: int | None) -> None:
    assert parse_duration(format_duration(seconds)) == seconds
