"""Kubernetes Events about the objects the controller acts on.

Repeats of the same (object, reason, message) within ``DEDUP_WINDOW`` only bump
the count, as the API server's event aggregation does, so a loop that keeps
failing does not flood the cluster. The count is written with the first repeat
at least ``REPEAT_WRITE_INTERVAL`` after the last write (counting the repeats in
between): a decision repeated every 10-second disruption pass is one write every
two minutes, not twelve.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from joiner.clock import Clock, to_rfc3339
from joiner.kube.api import ApiError, KubeAPI

log = logging.getLogger(__name__)

NORMAL, WARNING = "Normal", "Warning"
DEDUP_WINDOW = 600.0
REPEAT_WRITE_INTERVAL = 120.0  # Karpenter drops duplicate events for two minutes
COMPONENT = "karpenter"


class EventRecorder:
    def __init__(self, kube: KubeAPI, clock: Clock, namespace: str = "default") -> None:
        self.kube, self.clock = kube, clock
        self.default_namespace = namespace
        # (object, reason, message) -> the Event written for it
        self._recent: dict[tuple[str, str, str], _Written] = {}

    def record(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        now = self.clock.now()
        dedup = (meta.get("uid") or meta.get("name", ""), reason, message)
        seen = self._recent.get(dedup)
        try:
            if seen and now - seen.first < DEDUP_WINDOW:
                self._repeat(seen, now)
            else:
                self._create(dedup, obj, type_, reason, message, now)
        except ApiError as err:  # events are best effort: never fail a reconcile over one
            log.warning("event %s on %s not recorded: %s", reason, meta.get("name"), err)

    def _create(
        self,
        dedup: tuple[str, str, str],
        obj: dict[str, Any],
        type_: str,
        reason: str,
        message: str,
        now: float,
    ) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or self.default_namespace
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta.get('name', 'object')}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": to_rfc3339(now),
            "lastTimestamp": to_rfc3339(now),
            "count": 1,
        }
        created = self.kube.create(event)
        self._recent[dedup] = _Written(created["metadata"]["name"], namespace, now, now)

    def _repeat(self, seen: _Written, now: float) -> None:
        seen.count += 1
        if now - seen.written < REPEAT_WRITE_INTERVAL:
            return
        patch = {"count": seen.count, "lastTimestamp": to_rfc3339(now)}
        self.kube.patch("Event", seen.name, patch, seen.namespace)
        seen.written = now


@dataclass
class _Written:
    name: str
    namespace: str
    first: float  # when the Event was created
    written: float  # when it was last written
    count: int = 1
