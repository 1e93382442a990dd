"""PodDisruptionBudget status, as the disruption controller of kube-controller-manager computes it.

The memory adapter uses this to keep ``status.disruptionsAllowed`` current and to
decide evictions; it is pure (pods, scales and the time come in as arguments).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from joiner.clock import from_rfc3339, to_rfc3339

# A pod listed in status.disruptedPods is not counted healthy for this long after
# its eviction was admitted (the API server's DeletionTimeout).
DISRUPTED_POD_TIMEOUT = 120.0

ScaleLookup = Callable[[dict[str, Any], str], int | None]


def is_pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_pod_healthy(pod: dict[str, Any]) -> bool:
    return is_pod_ready(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _scaled(value: int | str, total: int) -> int:
    """An int-or-percent against a total, rounding up as the API server does."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)


def _expected_from_controllers(
    pods: list[dict[str, Any]], namespace: str, scale_of: ScaleLookup
) -> int | None:
    """Sum of the desired replicas of the pods' controllers; None if a pod has none."""
    total, seen = 0, set()
    for pod in pods:
        refs = (pod.get("metadata") or {}).get("ownerReferences") or []
        controller = next((r for r in refs if r.get("controller")), None)
        if controller is None:
            return None
        if controller.get("uid") in seen:
            continue
        seen.add(controller.get("uid"))
        replicas = scale_of(controller, namespace)
        if replicas is None:
            return None
        total += replicas
    return total


def _recent_disruptions(pdb: dict[str, Any], live: set[str], now: float) -> dict[str, str]:
    disrupted = (pdb.get("status") or {}).get("disruptedPods") or {}
    return {
        name: stamp
        for name, stamp in disrupted.items()
        if name in live and from_rfc3339(stamp) + DISRUPTED_POD_TIMEOUT > now
    }


def compute_status(
    pdb: dict[str, Any], pods: list[dict[str, Any]], scale_of: ScaleLookup, now: float
) -> dict[str, Any]:
    """The PDB status for the pods its selector matches."""
    spec = pdb.get("spec") or {}
    namespace = pdb["metadata"].get("namespace", "")
    live = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
    disrupted = _recent_disruptions(pdb, live, now)
    healthy = sum(1 for p in pods if is_pod_healthy(p) and p["metadata"]["name"] not in disrupted)
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if max_unavailable is None and isinstance(min_available, int):
        expected: int | None = len(pods)
    else:
        expected = _expected_from_controllers(pods, namespace, scale_of)
    if expected is None:
        desired, allowed, expected = 0, 0, 0
    else:
        if max_unavailable is not None:
            desired = max(0, expected - _scaled(max_unavailable, expected))
        else:
            desired = _scaled(min_available if min_available is not None else 1, expected)
        allowed = max(0, healthy - desired)
    status: dict[str, Any] = {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [_condition(allowed, now, pdb.get("status") or {})],
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    return status


def _condition(allowed: int, now: float, previous: dict[str, Any]) -> dict[str, Any]:
    status = "True" if allowed > 0 else "False"
    before = next(
        (c for c in previous.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), {}
    )
    # The transition time moves only when the condition flips.
    since = before.get("lastTransitionTime") if before.get("status") == status else None
    return {
        "type": "DisruptionAllowed",
        "status": status,
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
        "lastTransitionTime": since or to_rfc3339(now),
    }


def record_eviction(status: dict[str, Any], pod_name: str, now: float) -> dict[str, Any]:
    """The status after admitting one eviction: one fewer allowed, the pod noted."""
    updated = dict(status)
    updated["disruptionsAllowed"] = max(0, int(status.get("disruptionsAllowed", 0)) - 1)
    updated["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: to_rfc3339(now)}
    return updated
