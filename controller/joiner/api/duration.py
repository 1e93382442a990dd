"""Durations as NodePools write them: ``30s``, ``10m``, ``1h30m``, ``720h``, ``Never``."""

from __future__ import annotations

import re

NEVER = "Never"
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# The longest duration Kubernetes tools hold (Go's time.Duration, 2**63-1 ns, about 292
# years). The API server accepts longer ones (a pattern); Joiner reads them as Never.
MAX_SECONDS = (2**63 - 1) / 1e9
DURATION_BEYOND_RANGE = "longer than Kubernetes can represent (about 292 years)"


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float | None:
    """Seconds, or None for ``Never`` and for durations beyond ``MAX_SECONDS``. Raises
    DurationError for anything else."""
    if text == NEVER:
        return None
    seconds = _seconds(text)
    return None if seconds > MAX_SECONDS else seconds


def beyond_range(text: str) -> bool:
    """True for a well-formed duration longer than ``MAX_SECONDS`` (read as Never)."""
    return text != NEVER and _seconds(text) > MAX_SECONDS


def _seconds(text: str) -> float:
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
