"""The orchestration queue [DISR-9]: a decided command is carried out in order:
taint the candidates, create the replacements, wait until every replacement is
initialized, then delete the candidates. If a replacement fails or the wait
times out, the candidates are untainted and stay."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.controllers.context import Controller, ControllerContext
from joiner.controllers.disruption.methods import Command
from joiner.controllers.provisioning import nodeclaim_manifest
from joiner.controllers.runtime import DONE, Result
from joiner.events import NORMAL, WARNING
from joiner.kube.api import Conflict, NotFound

log = logging.getLogger(__name__)

KEY = "orchestration"
REPLACEMENT_TIMEOUT = 10 * 60.0
POLL = 2.0


@dataclass
class InFlight:
    command: Command
    started: float
    replacements: list[str] = field(default_factory=list)


class Orchestrator(Controller):
    name = "disruption.orchestration"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.in_flight: list[InFlight] = []

    @property
    def busy(self) -> bool:
        return bool(self.in_flight)

    def start(self, command: Command) -> None:
        """Taint and mark the candidates, launch the replacements."""
        for candidate in command.candidates:
            self.state.marked_for_deletion.update({candidate.nodeclaim, candidate.name})
            self._taint(candidate.name, add=True)
            self._mark_reason(candidate.nodeclaim, command.reason)
            self.metrics.nodeclaims_disrupted.labels(candidate.pool.name, command.reason).inc()
            self.metrics.disruption_decisions.labels(command.decision, command.reason).inc()
        flight = InFlight(command, self.clock.now())
        for plan in command.replacements:
            pool = self.state.nodepools[plan.nodepool]
            created = self.kube.create(nodeclaim_manifest(pool, plan))
            flight.replacements.append(created["metadata"]["name"])
        self._announce(command)
        self.in_flight.append(flight)

    def reconcile(self, key: str) -> Result:
        remaining = []
        for flight in self.in_flight:
            if not self._advance(flight):
                remaining.append(flight)
        self.in_flight = remaining
        return Result(requeue_after=POLL) if remaining else DONE

    def _advance(self, flight: InFlight) -> bool:
        """True when the flight is over (done or abandoned)."""
        states = [self.state.nodeclaims.get(name) for name in flight.replacements]
        if any(claim is None or claim.metadata.get("deletionTimestamp") for claim in states):
            self._abandon(flight, "a replacement failed to launch")
            return True
        if not all(claim is not None and claim.condition_true(nc.INITIALIZED) for claim in states):
            if self.clock.now() - flight.started > REPLACEMENT_TIMEOUT:
                self._abandon(flight, "replacements not initialized within 10m")
                return True
            return False
        for candidate in flight.command.candidates:
            with contextlib.suppress(NotFound):
                self.kube.delete("NodeClaim", candidate.nodeclaim)
        return True

    def _abandon(self, flight: InFlight, why: str) -> None:
        for candidate in flight.command.candidates:
            self.state.marked_for_deletion.difference_update({candidate.nodeclaim, candidate.name})
            self._taint(candidate.name, add=False)
            self._clear_reason(candidate.nodeclaim)
            claim = self.state.nodeclaims.get(candidate.nodeclaim)
            if claim is not None:
                self.recorder.record(
                    claim.to_dict(),
                    WARNING,
                    "DisruptionFailed",
                    f"{flight.command.reason}: {why}; node kept",
                )
        log.info("disruption abandoned: %s", why)

    def _announce(self, command: Command) -> None:
        for candidate in command.candidates:
            claim = self.state.nodeclaims.get(candidate.nodeclaim)
            if claim is not None:
                self.recorder.record(
                    claim.to_dict(), NORMAL, "DisruptionTerminating", command.describe()
                )

    def _taint(self, node_name: str, add: bool) -> None:
        with contextlib.suppress(NotFound, Conflict):
            node = self.kube.get("Node", node_name)
            taints = [
                t
                for t in (node.get("spec") or {}).get("taints") or []
                if t.get("key") != wk.DISRUPTED_TAINT_KEY
            ]
            if add:
                taints.append(dict(wk.DISRUPTED_TAINT))
            if taints != (node.get("spec") or {}).get("taints"):
                node.setdefault("spec", {})["taints"] = taints
                self.kube.update(node)

    def _clear_reason(self, claim_name: str) -> None:
        with contextlib.suppress(NotFound, Conflict):
            raw: dict[str, Any] = self.kube.get("NodeClaim", claim_name)
            conditions = (raw.get("status") or {}).get("conditions") or []
            if cond.remove_condition(conditions, nc.DISRUPTION_REASON):
                self.kube.update_status(raw)

    def _mark_reason(self, claim_name: str, reason: str) -> None:
        with contextlib.suppress(NotFound, Conflict):
            raw: dict[str, Any] = self.kube.get("NodeClaim", claim_name)
            conditions = raw.setdefault("status", {}).setdefault("conditions", [])
            now = self.clock.now()
            cond.set_condition(conditions, nc.DISRUPTION_REASON, cond.TRUE, now, reason=reason)
            self.kube.update_status(raw)
