"""Status conditions (metav1.Condition) on plain lists of dicts."""

from __future__ import annotations

from typing import Any

from joiner.clock import to_rfc3339

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


def get_condition(conditions: list[dict[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    for condition in conditions or ():  # a loop, not next(generator): asked millions of times
        if condition.get("type") == type_:
            return condition
    return None


def is_true(conditions: list[dict[str, Any]] | None, type_: str) -> bool:
    found = get_condition(conditions, type_)
    return found is not None and found.get("status") == TRUE


def set_condition(
    conditions: list[dict[str, Any]],
    type_: str,
    status: str,
    now: float,
    reason: str = "",
    message: str = "",
    observed_generation: int | None = None,
) -> bool:
    """Set in place; the transition time moves only when the status changes.
    Returns True when anything changed."""
    reason = reason or type_
    found = get_condition(conditions, type_)
    wanted = {"type": type_, "status": status, "reason": reason, "message": message}
    if observed_generation is not None:
        wanted["observedGeneration"] = observed_generation
    if found is None:
        conditions.append({**wanted, "lastTransitionTime": to_rfc3339(now)})
        return True
    changed = any(found.get(k) != v for k, v in wanted.items())
    if found.get("status") != status:
        found["lastTransitionTime"] = to_rfc3339(now)
    found.update(wanted)
    return changed


def remove_condition(conditions: list[dict[str, Any]], type_: str) -> bool:
    before = len(conditions)
    conditions[:] = [c for c in conditions if c.get("type") != type_]
    return len(conditions) != before
