"""Forceful expiration [DISR-1]: a NodeClaim older than its expireAfter is deleted,
whatever the budgets say; its pods find new capacity through normal provisioning."""

from __future__ import annotations

import contextlib

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
        raw = self.fresh("NodeClaim", key)
        if raw is None:
            return DONE
        meta = raw["metadata"]
        expire = parse_duration((raw.get("spec") or {}).get("expireAfter", "720h"))
        if meta.get("deletionTimestamp") or expire is None or not meta.get("creationTimestamp"):
            return DONE
        expires_at = from_rfc3339(meta["creationTimestamp"]) + expire
        now = self.clock.now()
        if now < expires_at:
            return Result(requeue_after=expires_at - now)
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
