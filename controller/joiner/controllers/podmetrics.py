"""Pod startup duration [SPEC 11]: from a pod's creation to the moment the controller
sees it Running, observed once per pod.

Only pods first seen before they ran count: a controller (re)starting finds pods that
have been running for days, and their age says nothing about start-up.
"""

from __future__ import annotations

from typing import Any

from joiner.clock import Clock, from_rfc3339
from joiner.metrics import Metrics


class PodStartupMetrics:
    def __init__(self, clock: Clock, metrics: Metrics) -> None:
        self.clock, self.metrics = clock, metrics
        self._not_running: set[str] = set()  # uids of pods seen before they ran

    def on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        uid = meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"
        if event_type == "DELETED":
            self._not_running.discard(uid)
            return
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase == "Pending":
            self._not_running.add(uid)
        elif uid in self._not_running:
            self._not_running.discard(uid)
            created = meta.get("creationTimestamp")
            if phase == "Running" and created:
                started = max(0.0, self.clock.now() - from_rfc3339(created))
                self.metrics.pods_startup_duration.observe(started)
