"""The CapacityBuffer controller: resolves each buffer, writes its status, and asks the
provisioner for capacity when some chunk is not held.

Per buffer (key ``namespace/name``): the resolution (``joiner.buffers.resolution``) and
the status as the API defines it: ``replicas`` (the chunks it resolved to),
``podTemplateRef`` and ``podTemplateGeneration`` (for a podTemplateRef buffer),
``provisioningStrategy``, and two conditions:

- ``ReadyForProvisioning``: True (``AttributesSetSuccessfully``) once resolved, else False
  with why (``PodTemplateNotFound``, ``ScalableNotFound``, ``NoSize``...).
- ``Provisioning``: True (``CapacityHeld``) when the cluster holds every chunk, else False
  with why: ``PoolLimitReached`` (a NodePool's limits), ``NoOffering`` (no instance type
  or offering fits a chunk), ``NoNodePool``, ``Unschedulable`` (another constraint), or
  ``Pending`` (capacity not asked for yet).

A buffer is resolved again every ``RESYNC`` seconds, so one that follows a workload by
percentage follows its scaling, and at each edge of its time windows. A NodePool's
``joiner.sh/spare-capacity`` is a buffer too (key ``NodePool/<pool>``,
``joiner.buffers.pools``), expanded again on each event of the pool. The ``HOLD_KEY``
pass checks where the chunks are held after pods or nodes changed, and asks for a
provisioning pass when some are not.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from joiner.api import conditions as cond
from joiner.api.capacitybuffer import KIND, CapacityBuffer
from joiner.api.capacitywindows import Window
from joiner.api.resources import format_resource_list
from joiner.buffers.holding import Buffers, Placement
from joiner.buffers.pools import expand, pool_of
from joiner.buffers.provisioning import HELD, PROVISIONING, holding_of
from joiner.buffers.resolution import Resolved, Unresolved, resolve
from joiner.buffers.signals import BufferSignals
from joiner.clock import Clock, to_rfc3339
from joiner.controllers.runtime import NOT_SYNCED, Result
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.state.cluster import ClusterState, with_own_status

log = logging.getLogger(__name__)

HOLD_KEY = "hold"  # the pass over every buffer's chunks (not a buffer: no "/")
RESYNC = 15.0  # seconds between resolutions of a buffer (a workload's replicas change)
HOLD_RESYNC = 30.0  # seconds between hold passes when nothing asked for one
# A chunk the last provisioning pass could not place is tried again after this long,
# not on every pod event (a pool at its limit stays there until something changes).
RETRY_UNPLACEABLE = 60.0

READY = "ReadyForProvisioning"
RESOLVED = "AttributesSetSuccessfully"
# Joiner-only, on a buffer with time windows (joiner.api.capacitywindows).
WINDOW = "joiner.sh/TimeWindow"
WINDOW_ACTIVE = "WindowActive"
NO_WINDOW = "OutsideWindows"


class BufferController:
    name = "capacitybuffer"

    def __init__(
        self,
        kube: KubeAPI,
        state: ClusterState,
        clock: Clock,
        buffers: Buffers,
        request_capacity: Callable[[], None],
        enqueue: Callable[[str], None],
        signals: BufferSignals,
    ) -> None:
        self.kube, self.state, self.clock, self.buffers = kube, state, clock, buffers
        self.signals = signals  # metrics and Events
        self.request_capacity = request_capacity  # opens a provisioning batch
        self.enqueue = enqueue  # a key of this controller
        self._asked_at = float("-inf")  # when capacity was last asked for

    def reconcile(self, key: str) -> Result:
        if key == HOLD_KEY:
            return self._hold()
        pool = pool_of(key)
        if pool is not None:
            return self._pool_shorthand(key, pool)
        raw = self.state.objects[KIND].get(key)
        if raw is None:
            self.signals.unresolved(key)
            if self.buffers.set(key, None):
                self.enqueue(HOLD_KEY)
            return Result()
        buffer = CapacityBuffer.from_dict(raw)
        now = self.clock.now()
        resolution = resolve(buffer, self._get, now)
        if self.buffers.set(key, resolution):
            self.enqueue(HOLD_KEY)
        self._write(raw, resolution, self.buffers.placement())
        return Result(requeue_after=_next_resolution(resolution, now))

    def _pool_shorthand(self, key: str, pool: str) -> Result:
        """A NodePool's ``joiner.sh/spare-capacity``: the buffer it expands to. It has no
        object to hold a status: ``joiner explain nodepool`` shows it, and a bad
        annotation is logged (and refused by ``joiner validate``)."""
        nodepool = self.state.nodepools.get(pool)
        resolution = expand(nodepool) if nodepool is not None else None
        known = self.buffers.resolutions.get(key)
        if isinstance(resolution, Unresolved) and resolution != known:
            log.warning("NodePool %s: %s", pool, resolution.message)
        if self.buffers.set(key, resolution):
            self.enqueue(HOLD_KEY)
        return Result()

    def _get(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        return self.kube.get(kind, name, namespace)

    # --- holding ---------------------------------------------------------------------

    def _hold(self) -> Result:
        if not self.buffers.resolutions:
            return Result()  # a buffer's first resolution asks for the next pass
        if not self.state.synced:
            return NOT_SYNCED
        placement = self.buffers.placement()
        now = self.clock.now()
        if placement.unheld and self._should_ask(now):
            self._asked_at = now
            self.request_capacity()
        for key, resolution in self.buffers.resolutions.items():
            raw = self.state.objects[KIND].get(key)
            if raw is not None:
                self._write(raw, resolution, placement)
        return Result(requeue_after=HOLD_RESYNC)

    def _should_ask(self, now: float) -> bool:
        """Not while capacity launched for chunks is on its way; chunks the last pass
        could not place only once ``RETRY_UNPLACEABLE`` has passed."""
        if self.buffers.awaiting_launch(now):
            return False
        return self.buffers.waiting() > 0 or now - self._asked_at >= RETRY_UNPLACEABLE

    # --- status ----------------------------------------------------------------------

    def _write(
        self, raw: dict[str, Any], resolution: Resolved | Unresolved, placement: Placement
    ) -> None:
        obj = with_own_status(raw)
        status = obj["status"]
        before = dict(status, conditions=[dict(c) for c in status.get("conditions") or ()])
        status["provisioningStrategy"] = resolution.buffer.strategy
        conditions = status.setdefault("conditions", [])
        now, generation = self.clock.now(), resolution.buffer.generation
        if isinstance(resolution, Unresolved):
            for field in ("replicas", "podTemplateRef", "podTemplateGeneration"):
                status.pop(field, None)
            cond.set_condition(
                conditions,
                READY,
                cond.FALSE,
                now,
                resolution.reason,
                resolution.message,
                generation,
            )
            cond.remove_condition(conditions, PROVISIONING)
            self.signals.unresolved(resolution.buffer.key)
        else:
            self._resolved_status(status, resolution)
            cond.set_condition(conditions, READY, cond.TRUE, now, RESOLVED, "", generation)
            holding = holding_of(resolution, placement, self.buffers.unplaceable)
            self.signals.holding(resolution.buffer.key, raw, holding)
            held = cond.TRUE if holding.reason == HELD else cond.FALSE
            cond.set_condition(
                conditions, PROVISIONING, held, now, holding.reason, holding.message, generation
            )
        _window_condition(conditions, resolution, now)
        if status == before:
            return
        try:
            self.kube.update_status(obj)
        except (Conflict, NotFound):  # a newer version's event brings another pass
            return

    @staticmethod
    def _resolved_status(status: dict[str, Any], resolution: Resolved) -> None:
        status["replicas"] = resolution.replicas
        if resolution.pod_template is None:
            status.pop("podTemplateRef", None)
            status.pop("podTemplateGeneration", None)
            return
        status["podTemplateRef"] = {"name": resolution.pod_template}
        if resolution.template_generation is not None:
            status["podTemplateGeneration"] = resolution.template_generation


def _next_resolution(resolution: Resolved | Unresolved, now: float) -> float:
    """Seconds to the next resolution: ``RESYNC``, or sooner when a time window starts or
    ends before (the size changes at the edge, not at the next resync)."""
    schedule = resolution.schedule if isinstance(resolution, Resolved) else None
    if schedule is None:
        return RESYNC
    return min(RESYNC, max(0.0, schedule.until - now))


def _window_condition(
    conditions: list[dict[str, Any]], resolution: Resolved | Unresolved, now: float
) -> None:
    """Joiner-only ``joiner.sh/TimeWindow``, on a buffer with time windows: which window
    sizes it, or that none does, and until when."""
    schedule = resolution.schedule if isinstance(resolution, Resolved) else None
    if schedule is None:
        cond.remove_condition(conditions, WINDOW)
        return
    until = to_rfc3339(schedule.until) if schedule.until < math.inf else "never"
    generation = resolution.buffer.generation
    if schedule.active is None:
        message = f"outside every window: the spec's size until {until}"
        cond.set_condition(conditions, WINDOW, cond.FALSE, now, NO_WINDOW, message, generation)
        return
    message = f"{schedule.active.describe()}: {_size(schedule.active)} until {until}"
    cond.set_condition(conditions, WINDOW, cond.TRUE, now, WINDOW_ACTIVE, message, generation)


def _size(window: Window) -> str:
    """``percentage 20``, ``replicas 0, limits cpu=16``."""
    sizes = [
        f"{name} {value}"
        for name, value in (("replicas", window.replicas), ("percentage", window.percentage))
        if value is not None
    ]
    if window.limits is not None:
        written = format_resource_list(window.limits)
        sizes.append("limits " + ",".join(f"{name}={value}" for name, value in written.items()))
    return ", ".join(sizes)
