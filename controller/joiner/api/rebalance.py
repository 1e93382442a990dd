"""The rebalancer's per-NodePool opt-in and churn budget, read from the NodePool's
annotations (Joiner-only: the API server accepts any annotation, so a Karpenter manifest
stays valid with or without them, and they are outside ``spec.template``, so setting them
drifts no node).

    joiner.sh/rebalance                           "true" turns it on (default off)
    joiner.sh/rebalance-evictions-per-hour        pods a pool's moves may evict per hour
    joiner.sh/rebalance-pods-per-move             pods one move may evict
    joiner.sh/rebalance-min-saving-per-eviction   $/hour a move must save per pod it evicts
    joiner.sh/rebalance-amortisation              a node a move launched is not drained by
                                                  another move for this long

``rebalance_settings(metadata)`` returns the settings or the field errors naming each bad
annotation; ``joiner validate`` prints those errors and the controller leaves such a pool
alone, with a warning event naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api.annotations import field_of
from joiner.api.duration import DurationError, parse_duration
from joiner.api.validation import FieldError

ENABLED = wk.REBALANCE
EVICTIONS_PER_HOUR = wk.REBALANCE_EVICTIONS_PER_HOUR
PODS_PER_MOVE = wk.REBALANCE_PODS_PER_MOVE
MIN_SAVING_PER_EVICTION = wk.REBALANCE_MIN_SAVING_PER_EVICTION
AMORTISATION = wk.REBALANCE_AMORTISATION
KNOWN = (ENABLED, EVICTIONS_PER_HOUR, PODS_PER_MOVE, MIN_SAVING_PER_EVICTION, AMORTISATION)

# The defaults: a pool of a few hundred pods is walked to its target within an hour or
# two, a move of a few nodes at a time, and only for a saving that repays its churn.
DEFAULT_EVICTIONS_PER_HOUR = 200
DEFAULT_PODS_PER_MOVE = 100
DEFAULT_MIN_SAVING_PER_EVICTION = 0.001  # $/hour per pod evicted
DEFAULT_AMORTISATION = 3600.0  # seconds: an hour


@dataclass(frozen=True)
class RebalanceSettings:
    enabled: bool = False
    evictions_per_hour: int = DEFAULT_EVICTIONS_PER_HOUR
    pods_per_move: int = DEFAULT_PODS_PER_MOVE
    min_saving_per_eviction: float = DEFAULT_MIN_SAVING_PER_EVICTION
    amortisation: float = DEFAULT_AMORTISATION  # seconds


def rebalance_settings(metadata: Any) -> tuple[RebalanceSettings, list[FieldError]]:
    """The settings the NodePool's ``metadata.annotations`` give, and an error for each bad
    one (naming ``metadata.annotations[<key>]``). With any error the pool is off."""
    annotations = (metadata or {}).get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return RebalanceSettings(), []
    errors: list[FieldError] = []
    values = {
        key: _read(annotations, key, reader, errors)
        for key, reader in _READERS.items()
        if key in annotations
    }
    unknown = [k for k in annotations if k.startswith(f"{ENABLED}-") and k not in KNOWN]
    errors += [
        FieldError(field_of(key), f"unknown rebalance setting; expected one of {', '.join(KNOWN)}")
        for key in sorted(unknown)
    ]
    if errors:
        return RebalanceSettings(), errors
    return RebalanceSettings(
        enabled=values.get(ENABLED, False),
        evictions_per_hour=values.get(EVICTIONS_PER_HOUR, DEFAULT_EVICTIONS_PER_HOUR),
        pods_per_move=values.get(PODS_PER_MOVE, DEFAULT_PODS_PER_MOVE),
        min_saving_per_eviction=values.get(
            MIN_SAVING_PER_EVICTION, DEFAULT_MIN_SAVING_PER_EVICTION
        ),
        amortisation=values.get(AMORTISATION, DEFAULT_AMORTISATION),
    ), []


def _read(
    annotations: Mapping[str, Any],
    key: str,
    reader: Callable[[str], Any],
    errors: list[FieldError],
) -> Any:
    value = annotations[key]
    try:
        return reader(value)
    except ValueError as error:
        errors.append(FieldError(field_of(key), f"{error}, got {value!r}"))
        return None


def _boolean(text: str) -> bool:
    if text not in ("true", "false"):
        raise ValueError('must be "true" or "false"')
    return text == "true"


def _positive_int(text: str) -> int:
    if not isinstance(text, str) or not text.isdigit() or int(text) < 1:
        raise ValueError("must be a whole number of at least 1")
    return int(text)


def _dollars(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be a number of dollars per hour, 0 or more (e.g. 0.002)")
    return value


def _duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except DurationError:
        seconds = -1.0
    if seconds is None or seconds < 0:
        raise ValueError("must be a duration such as 30m or 2h")
    return seconds


_READERS: dict[str, Callable[[str], Any]] = {
    ENABLED: _boolean,
    EVICTIONS_PER_HOUR: _positive_int,
    PODS_PER_MOVE: _positive_int,
    MIN_SAVING_PER_EVICTION: _dollars,
    AMORTISATION: _duration,
}
