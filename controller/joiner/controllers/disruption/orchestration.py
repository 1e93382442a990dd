"""The orchestration queue [DISR-9]: a decided command is carried out in order:
taint the candidates, create the replacements, wait until every replacement is
initialized, then delete the candidates. If a replacement fails or the wait
times out, the candidates are untainted and stay. The commands live in memory; what
they wrote (taints, annotated replacements) lets a restarted process resume them."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.nodeclaim import NodeClaim
from joiner.clock import from_rfc3339
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


class Recovery(Enum):
    """What ``Orchestrator.recover`` found of a previous process's commands."""

    NOTHING = "nothing"
    RELEASED = "released"  # taints of dropped commands removed
    RESUMED = "resumed"  # a command taken up again


@dataclass(frozen=True)
class Target:
    """A candidate of a command in flight: its NodeClaim and its Node's name."""

    nodeclaim: str
    node: str


@dataclass
class InFlight:
    reason: str
    targets: list[Target]
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
        """Taint and mark the candidates, launch the replacements (each naming the
        NodeClaims it replaces, for a restarted process to resume the command)."""
        targets = [Target(c.nodeclaim, c.name) for c in command.candidates]
        try:
            flight = self._begin(command, targets)
        except Exception:
            # A write failed (or its answer was lost): forget the command but keep what
            # was written. Unmarked, the candidates are what the next pass's recover()
            # looks at: it removes their taint, or resumes the command if a
            # replacement was created. Kept marked, they stayed tainted for good.
            for target in targets:
                self.state.marked_for_deletion.difference_update({target.nodeclaim, target.node})
            raise
        self._announce(command)
        self.in_flight.append(flight)

    def _begin(self, command: Command, targets: list[Target]) -> InFlight:
        for candidate in command.candidates:
            self.state.marked_for_deletion.update({candidate.nodeclaim, candidate.name})
            self._taint(candidate.name, add=True)
            self._mark_reason(candidate.nodeclaim, command.reason)
            self.metrics.nodeclaims_disrupted.labels(candidate.pool.name, command.reason).inc()
            self.metrics.disruption_decisions.labels(command.decision, command.reason).inc()
        flight = InFlight(command.reason, targets, self.clock.now())
        replaces = ",".join(t.nodeclaim for t in targets)
        for plan in command.replacements:
            pool = self.state.nodepools[plan.nodepool]
            manifest = nodeclaim_manifest(pool, plan)
            manifest["metadata"]["annotations"].update(command.annotations)
            manifest["metadata"]["annotations"][wk.REPLACES_ANNOTATION] = replaces
            created = self.kube.create(manifest)
            flight.replacements.append(created["metadata"]["name"])
        return flight

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
        for target in flight.targets:
            with contextlib.suppress(NotFound):
                self.kube.delete("NodeClaim", target.nodeclaim)
        return True

    def _abandon(self, flight: InFlight, why: str) -> None:
        for target in flight.targets:
            self._release(target)
            claim = self.state.nodeclaims.get(target.nodeclaim)
            if claim is not None:
                self.recorder.record(
                    claim.to_dict(),
                    WARNING,
                    "DisruptionFailed",
                    f"{flight.reason}: {why}; node kept",
                )
        log.info("disruption abandoned: %s", why)

    def _release(self, target: Target) -> None:
        self.state.marked_for_deletion.difference_update({target.nodeclaim, target.node})
        self._taint(target.node, add=False)
        self._clear_reason(target.nodeclaim)

    # --- after a restart ------------------------------------------------------------------

    def recover(self) -> Recovery:
        """Take up what a previous process left (it restarted, or lost its leadership)
        with the nodes it tainted: a command whose replacements exist is resumed (marked
        and waited for again, from when they were created); a node no such command
        covers is untainted and its disruption reason cleared, as Karpenter does before
        each pass, so it is a candidate like any other again. Says which happened: a
        resumed command gives the orchestration queue work; a released node still shows
        its taint in the state until the watch brings the write back."""
        replacing: dict[str, list[str]] | None = None  # read at the first tainted node
        resumed: dict[tuple[str, ...], InFlight] = {}
        released = False
        for node in self.state.managed_nodes():
            claim = node.nodeclaim
            if claim is None or node.deleting or node.name in self.state.marked_for_deletion:
                continue
            if not any(t.get("key") == wk.DISRUPTED_TAINT_KEY for t in node.taints):
                continue
            target = Target(claim.name, node.name)
            if replacing is None:
                replacing = self._replacements_by_target()
            replacements = replacing.get(claim.name)
            if not replacements:
                log.info("node %s: disrupted taint of a dropped command removed", node.name)
                self._release(target)
                released = True
                continue
            key = tuple(sorted(replacements))
            flight = resumed.setdefault(key, self._resumed(claim, replacements))
            flight.targets.append(target)
            self.state.marked_for_deletion.update({target.nodeclaim, target.node})
        self.in_flight.extend(resumed.values())
        if resumed:
            return Recovery.RESUMED
        return Recovery.RELEASED if released else Recovery.NOTHING

    def _replacements_by_target(self) -> dict[str, list[str]]:
        return replacements_by_target(self.state.nodeclaims.values())

    def _resumed(self, claim: NodeClaim, replacements: list[str]) -> InFlight:
        created = [
            from_rfc3339(self.state.nodeclaims[name].metadata["creationTimestamp"])
            for name in replacements
        ]
        reason = cond.get_condition(claim.status.conditions, nc.DISRUPTION_REASON)
        why = (reason or {}).get("reason") or "Resumed"
        log.info("resuming disruption of %s (replacements %s)", claim.name, replacements)
        return InFlight(why, [], min(created), sorted(replacements))

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


def replacements_by_target(claims: Iterable[NodeClaim]) -> dict[str, list[str]]:
    """Live replacement NodeClaims (``joiner.sh/replaces``), by the name of each NodeClaim
    they replace."""
    replacing: dict[str, list[str]] = {}
    for claim in claims:
        names = (claim.metadata.get("annotations") or {}).get(wk.REPLACES_ANNOTATION)
        if not names or claim.metadata.get("deletionTimestamp"):
            continue
        for name in names.split(","):
            replacing.setdefault(name, []).append(claim.name)
    return replacing
