"""Forceful expiration [DISR-1]: a NodeClaim older than its expireAfter is deleted,
whatever the budgets say; its pods find new capacity through normal provisioning."""

from __future__ import annotations

import contextlib
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.duration import parse_duration
from joiner.clock import from_rfc3339
from joiner.controllers.context import Controller
from joiner.controllers.runtime import DONE, Result
from joiner.events import NORMAL
from joiner.kube.api import Conflict, NotFound

EXPIRED = "Expired"


class Expiration(Controller):
    name = "nodeclaim.expiration"

    def reconcile(self, key: str) -> Result:
        # Every change of a NodeClaim asks; the state's copy answers when it expires, and
        # the API's (fresh) copy decides the deletion.
        cached = self.state.objects["NodeClaim"].get(key)
        waiting = self._until_expiry(cached)
        if waiting is not None:
            return waiting
        raw = self.fresh("NodeClaim", key)
        waiting = self._until_expiry(raw)
        if raw is None or waiting is not None:
            return DONE if waiting is None else waiting
        now = self.clock.now()
        meta = raw["metadata"]
        conditions = raw.setdefault("status", {}).setdefault("conditions", [])
        cond.set_condition(conditions, nc.DISRUPTION_REASON, cond.TRUE, now, reason=EXPIRED)
        with contextlib.suppress(Conflict):
            self.kube.update_status(raw)
        pool = (meta.get("labels") or {}).get(wk.NODEPOOL, "")
        self.metrics.nodeclaims_disrupted.labels(pool, EXPIRED).inc()
        self.recorder.record(
            raw, NORMAL, "DisruptionTerminating", f"Disrupting NodeClaim: {EXPIRED}"
        )
        with contextlib.suppress(NotFound):
            self.kube.delete("NodeClaim", key)
        return DONE

    def _until_expiry(self, raw: dict[str, Any] | None) -> Result | None:
        """What to do while the NodeClaim has not expired; None once it has."""
        expires_at = expiry(raw) if raw is not None else None
        if expires_at is None:
            return DONE
        now = self.clock.now()
        return Result(requeue_after=expires_at - now) if now < expires_at else None


def expiry(raw: dict[str, Any]) -> float | None:
    """When the NodeClaim expires (None: never, or it is being deleted already)."""
    meta = raw["metadata"]
    expire = parse_duration((raw.get("spec") or {}).get("expireAfter", "720h"))
    if meta.get("deletionTimestamp") or expire is None or not meta.get("creationTimestamp"):
        return None
    return from_rfc3339(meta["creationTimestamp"]) + expire
