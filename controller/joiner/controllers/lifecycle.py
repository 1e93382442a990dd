"""NodeClaim lifecycle [SPEC 6.1]: launch, registration, initialization, liveness.

One reconcile moves a NodeClaim as far as it can go and asks to be looked at
again while it waits (for the instance, the Node, readiness). It works on the cluster
state's copy, writing with its resourceVersion (a stale copy is refused, a Conflict),
and reads the NodeClaim fresh from the API only before a launch, so a stale cache never
launches twice. Each step it wrote is remembered (by name and uid) until the watch
brings the write back: a reconcile between the two waits for the watch instead of
redoing the step (Karpenter keeps a launch cache for the same reason).

Each step is recorded on the NodeClaim's conditions, with its time; it records no Event
(as upstream Karpenter): Events are for decisions and failures, and one per step would
be three of the eleven requests a NodeClaim costs the API server from create to
Initialized.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import resources as res
from joiner.api.nodeclaim import NodeClaim
from joiner.clock import from_rfc3339
from joiner.cloudprovider.types import (
    CloudProviderError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from joiner.controllers.context import Controller, ControllerContext
from joiner.controllers.runtime import DONE, Result
from joiner.events import WARNING
from joiner.jsoncopy import deep_copy
from joiner.kube.api import Conflict, NotFound
from joiner.scheduling.taints import EPHEMERAL_TAINT_KEYS, describe, same_taint
from joiner.state.cluster import with_own_status

log = logging.getLogger(__name__)

LAUNCH_TTL = 5 * 60.0  # not launched by then -> deleted
REGISTRATION_TTL = 15 * 60.0  # not registered by then -> deleted
# Registered, but the Node not Ready this long after -> deleted: its kubelet is broken,
# and the pods it was launched for would wait for it forever (Karpenter's node repair
# replaces a Node NotReady for 30 minutes; this one never was Ready).
READY_TTL = 15 * 60.0
POLL = 5.0  # how often to look while waiting for the Node
# After a Conflict the newer version's watch event wakes the reconcile; this is the
# safety net should it not.
CONFLICT_RETRY = 1.0
STEPS = (nc.LAUNCHED, nc.REGISTERED, nc.INITIALIZED)
NOT_READY = "node not ready"


class NodeClaimLifecycle(Controller):
    name = "nodeclaim.lifecycle"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        # name -> (uid, steps written) until the watch brings the write back
        self._written: dict[str, tuple[str, int]] = {}

    def reconcile(self, key: str) -> Result:
        cached = self.state.objects["NodeClaim"].get(key)
        written = self._written.pop(key, None)
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            return DONE  # gone, or termination owns it now
        claim = self.state.nodeclaims[key]
        if (
            written
            and written[0] == claim.metadata.get("uid", "")
            and written[1] > _steps_done(claim)
        ):
            self._written[key] = written
            return DONE  # our last write is on its way back: its watch event wakes us
        raw = with_own_status(cached)  # registration and initialization write the status
        if not claim.condition_true(nc.LAUNCHED):
            # The API's word before an instance is bought: a stale cache never launches twice.
            raw = self.fresh("NodeClaim", key)
            if raw is None or raw["metadata"].get("deletionTimestamp"):
                return DONE
            claim = NodeClaim.from_dict(raw)
        try:
            return self._advance(claim, raw)
        except Conflict:
            return Result(requeue_after=CONFLICT_RETRY)  # someone wrote first

    def _wrote(self, raw: dict[str, Any], step: str) -> None:
        metadata = raw["metadata"]
        self._written[metadata["name"]] = (metadata.get("uid", ""), STEPS.index(step) + 1)

    def _advance(self, claim: NodeClaim, raw: dict[str, Any]) -> Result:
        if not claim.condition_true(nc.LAUNCHED):
            return self._launch(claim, raw)
        if not claim.condition_true(nc.REGISTERED):
            return self._register(claim, raw)
        if not claim.condition_true(nc.INITIALIZED):
            return self._initialize(claim, raw)
        return DONE

    # --- launch --------------------------------------------------------------

    def _launch(self, claim: NodeClaim, raw: dict[str, Any]) -> Result:
        if self._age(raw) > LAUNCH_TTL:
            return self._give_up(raw, "LaunchTimeout", "not launched within 5m")
        try:
            launched = self.cloud.create(claim)
        except (InsufficientCapacityError, NodeClassNotReadyError) as err:
            # The pods go back to pending and the next batch picks other offerings.
            return self._give_up(raw, "LaunchFailed", str(err))
        except CloudProviderError as err:
            self.recorder.record(raw, WARNING, "LaunchFailed", str(err))
            return Result(requeue_after=POLL)
        status = launched.status
        raw.setdefault("status", {}).update(
            {k: v for k, v in status.to_dict().items() if k != "conditions"}
        )
        conditions = raw["status"].setdefault("conditions", [])
        cond.set_condition(conditions, nc.LAUNCHED, cond.TRUE, self.clock.now())
        raw["metadata"].setdefault("labels", {}).update(launched.labels)
        for k, v in launched.metadata.get("annotations", {}).items():
            raw["metadata"].setdefault("annotations", {})[k] = v
        updated = self.kube.update(raw)
        raw["status"]["conditions"] = conditions
        raw["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]
        self.kube.update_status(raw)
        self._wrote(raw, nc.LAUNCHED)
        return Result(requeue_after=POLL)

    # --- registration ----------------------------------------------------------

    def _register(self, claim: NodeClaim, raw: dict[str, Any]) -> Result:
        node = self.state.node_by_provider_id(claim.status.provider_id)
        if node is None:
            if self._age(raw) > REGISTRATION_TTL:
                return self._give_up(raw, "RegistrationTimeout", "no Node registered within 15m")
            return Result(requeue_after=POLL)
        self._adopt_node(claim, node)
        raw["status"]["nodeName"] = node["metadata"]["name"]
        cond.set_condition(raw["status"]["conditions"], nc.REGISTERED, cond.TRUE, self.clock.now())
        self.kube.update_status(raw)
        self._wrote(raw, nc.REGISTERED)
        return Result(requeue_after=0.0)

    def _adopt_node(self, claim: NodeClaim, node: dict[str, Any]) -> None:
        """Copy the NodeClaim's labels and taints onto the Node, mark it registered, drop
        the unregistered taint and add the termination finalizer."""
        node = deep_copy(node)  # the state's object: never edited in place
        meta = node["metadata"]
        meta["labels"] = {
            **(meta.get("labels") or {}),
            **claim.labels,
            wk.NODE_REGISTERED: "true",
        }
        finalizers = meta.setdefault("finalizers", [])
        if wk.TERMINATION_FINALIZER not in finalizers:
            finalizers.append(wk.TERMINATION_FINALIZER)
        spec = node.setdefault("spec", {})
        taints = [t for t in spec.get("taints") or [] if t.get("key") != wk.UNREGISTERED_TAINT_KEY]
        for taint in [*claim.taints, *claim.startup_taints]:
            if not any(same_taint(taint, t) for t in taints):
                taints.append(taint)
        spec["taints"] = taints
        self.kube.update(node)

    # --- initialization ------------------------------------------------------------

    def _initialize(self, claim: NodeClaim, raw: dict[str, Any]) -> Result:
        node = self.state.node_by_provider_id(claim.status.provider_id)
        if node is None:
            return Result(requeue_after=POLL)
        waiting = self._not_initialized_because(claim, node)
        if waiting == NOT_READY and self._since(claim, nc.REGISTERED) > READY_TTL:
            return self._give_up(raw, "ReadyTimeout", "Node not Ready within 15m of registering")
        if waiting:
            return Result(requeue_after=POLL)
        node = deep_copy(node)  # the state's object: never edited in place
        node["metadata"]["labels"][wk.NODE_INITIALIZED] = "true"
        self.kube.update(node)
        now = self.clock.now()
        cond.set_condition(raw["status"]["conditions"], nc.INITIALIZED, cond.TRUE, now)
        cond.set_condition(raw["status"]["conditions"], nc.READY, cond.TRUE, now)
        self.kube.update_status(raw)
        self._wrote(raw, nc.INITIALIZED)
        return DONE

    def _not_initialized_because(self, claim: NodeClaim, node: dict[str, Any]) -> str | None:
        status = node.get("status") or {}
        if not cond.is_true(status.get("conditions"), "Ready"):
            return NOT_READY
        taints = (node.get("spec") or {}).get("taints") or []
        if any(same_taint(s, t) for s in claim.startup_taints for t in taints):
            return "startup taints present"
        # A Ready Node keeps the not-ready taint until the node lifecycle controller
        # removes it; pods cannot land on it before [LIFE-1].
        ephemeral = [t for t in taints if t.get("key") in EPHEMERAL_TAINT_KEYS]
        if ephemeral:
            return f"ephemeral taint {describe(ephemeral[0])} present"
        allocatable = res.parse_resource_list(status.get("allocatable"))
        for name, amount in claim.requests_milli.items():
            extended = name not in (res.CPU, res.MEMORY, res.PODS, res.EPHEMERAL_STORAGE)
            if extended and amount and not allocatable.get(name):
                return f"extended resource {name} not registered"
        return None

    # --- helpers -------------------------------------------------------------------

    def _since(self, claim: NodeClaim, condition: str) -> float:
        """How long the condition has been true (0 when it is not)."""
        found = cond.get_condition(claim.status.conditions, condition)
        if found is None or not found.get("lastTransitionTime"):
            return 0.0
        return self.clock.now() - from_rfc3339(found["lastTransitionTime"])

    def _age(self, raw: dict[str, Any]) -> float:
        created = raw["metadata"].get("creationTimestamp")
        return self.clock.now() - from_rfc3339(created) if created else 0.0

    def _give_up(self, raw: dict[str, Any], reason: str, message: str) -> Result:
        self.recorder.record(raw, WARNING, reason, message)
        log.info("deleting nodeclaim %s: %s", raw["metadata"]["name"], message)
        with contextlib.suppress(NotFound):
            self.kube.delete("NodeClaim", raw["metadata"]["name"])
        return DONE


def _steps_done(claim: NodeClaim) -> int:
    """How many lifecycle steps the NodeClaim shows done (they come in order)."""
    return sum(1 for step in STEPS if claim.condition_true(step))
