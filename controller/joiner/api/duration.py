"""Durations as NodePools write them: ``30s``, ``10m``, ``1h30m``, ``720h``, ``Never``."""

from __future__ import annotations

import re

NEVER = "Never"
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float | None:
    """Seconds, or None for ``Never``. Raises DurationError for anything else."""
    if text == NEVER:
        return None
    if not isinstance(text, str) or not _WHOLE.match(text):
        raise DurationError(f"invalid duration {text!r} (expected e.g. 30s, 10m, 1h30m or Never)")
    return sum(float(n) * _UNIT[u] for n, u in _PART.findall(text))


def format_duration(seconds: float | None) -> str:
    """The shortest h/m/s form in whole seconds: 5400 -> '1h30m', 0 -> '0s', None -> 'Never'."""
    if seconds is None:
        return NEVER
    sign = "-" if seconds < 0 else ""
    hours, rest = divmod(int(abs(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    out += f"{secs}s" if secs or not out else ""
    return sign + out if out != "0s" else out
