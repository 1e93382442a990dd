"""What a CapacityBuffer's holding shows outside its status: metrics and Events.

Metrics, per buffer (``namespace``, ``name``): the chunks it resolved to and the chunks
the cluster holds, set at every pass; a buffer that is deleted or does not resolve has
neither. Events on the CapacityBuffer, only when its holding changes, not once per pass:
``CapacityHeld`` (Normal) when every chunk came to be held, or the reason some cannot be
held (Warning: ``PoolLimitReached``, ``NoOffering``, ``NoNodePool``, ``Unschedulable``).
While room is being asked for or launched (``Pending``) nothing is told: a burst that
takes the buffer's room and a node launched to hold it again is no news.
"""

from __future__ import annotations

import contextlib
from typing import Any

from joiner.api.conditions import get_condition
from joiner.buffers.provisioning import HELD, PENDING, PROVISIONING, Holding
from joiner.events import NORMAL, WARNING, EventRecorder
from joiner.metrics import Metrics


class BufferSignals:
    def __init__(self, metrics: Metrics, recorder: EventRecorder) -> None:
        self.metrics, self.recorder = metrics, recorder
        # The holding reason last told for each buffer (namespace/name).
        self._told: dict[str, str] = {}

    def holding(self, key: str, raw: dict[str, Any], holding: Holding) -> None:
        """What the buffer ``key`` (namespace/name; ``raw`` as watched, before its status
        is written) holds."""
        labels = key.split("/", 1)
        self.metrics.buffer_chunks_wanted.labels(*labels).set(holding.wanted)
        self.metrics.buffer_chunks_held.labels(*labels).set(holding.held)
        told = self._told.get(key, _written_reason(raw))
        if holding.reason in (PENDING, told):
            return
        self._told[key] = holding.reason
        type_ = NORMAL if holding.reason == HELD else WARNING
        self.recorder.record(raw, type_, holding.reason, holding.message)

    def unresolved(self, key: str) -> None:
        """The buffer ``key`` does not resolve, or is gone: no chunks to show."""
        for gauge in (self.metrics.buffer_chunks_wanted, self.metrics.buffer_chunks_held):
            with contextlib.suppress(KeyError):  # never shown
                gauge.remove(*key.split("/", 1))
        self._told.pop(key, None)


def _written_reason(raw: dict[str, Any]) -> str | None:
    """The reason the buffer's status already says: a restarted controller does not tell
    it again."""
    found = get_condition((raw.get("status") or {}).get("conditions"), PROVISIONING)
    return found.get("reason") if found is not None else None
