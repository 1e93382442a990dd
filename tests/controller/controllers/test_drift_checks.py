"""The cloud's drift verdict [DISR-6] is asked again when the node class changes and
otherwise at most every CLOUD_DRIFT_RECHECK, however often pods come and go; the Drifted
condition says when the drift was seen, however late its write gets through."""

from __future__ import annotations

from ctl_harness import Harness
from joiner.api.conditions import get_condition
from joiner.api.validation import validate_object
from joiner.clock import to_rfc3339
from joiner.controllers.disruption.conditions import CLOUD_DRIFT_RECHECK, CONFLICT_RETRY
from joiner.operator import Operator
from joiner.state.feed import DrainFeed


def _drift(h: Harness, claim_name: str) -> str | None:
    h.operator.pump()  # as the manager does before each reconcile: the state has every write
    h.operator.disruption_conditions.reconcile(claim_name)  # as a pod event would wake it
    claim = h.kube.get("NodeClaim", claim_name)
    drifted = get_condition(claim["status"]["conditions"], "Drifted")
    return drifted["reason"] if drifted else None


def _provider_id(h: Harness, claim_name: str) -> str:
    return h.kube.get("NodeClaim", claim_name)["status"]["providerID"]


def _change_node_class(h: Harness, tags: dict[str, str]) -> None:
    nodeclass = h.kube.get("EC2NodeClass", "default")
    nodeclass["spec"]["tags"] = tags
    h.kube.update(nodeclass)
    h.settle()


def test_the_verdict_is_remembered_until_the_recheck_interval() -> None:
    h = Harness()
    h.default_setup()
    claim, _ = h.initialized_node()  # judged not drifted as it initialized
    h.cloud.drifted[_provider_id(h, claim)] = "AMIDrift"
    assert _drift(h, claim) is None
    h.clock.advance(CLOUD_DRIFT_RECHECK)
    assert _drift(h, claim) == "AMIDrift"
    h.cloud.drifted[_provider_id(h, claim)] = "SubnetDrift"
    h.clock.advance(CLOUD_DRIFT_RECHECK - 1)
    assert _drift(h, claim) == "AMIDrift"
    h.clock.advance(1)
    assert _drift(h, claim) == "SubnetDrift"


def test_a_changed_node_class_is_judged_again_at_once() -> None:
    h = Harness()
    h.default_setup()
    claim, _ = h.initialized_node()
    h.cloud.drifted[_provider_id(h, claim)] = "AMIDrift"
    _change_node_class(h, {"team": "platform"})
    assert _drift(h, claim) == "AMIDrift"
    del h.cloud.drifted[_provider_id(h, claim)]
    _change_node_class(h, {"team": "payments"})
    assert _drift(h, claim) is None


def test_a_drift_write_refused_by_a_conflict_keeps_the_time_the_drift_was_seen() -> None:
    """Drift candidates are taken in the order they drifted: the Drifted condition's
    transition time must not move with the retry of a refused write."""
    h = Harness()
    h.default_setup()
    claim, _ = h.initialized_node()
    h.cloud.drifted[_provider_id(h, claim)] = "AMIDrift"
    h.clock.advance(CLOUD_DRIFT_RECHECK)
    h.operator.pump()
    seen = to_rfc3339(h.clock.now())
    # Another writer changes the NodeClaim first: the state's copy is stale, the write 409s.
    raw = h.kube.get("NodeClaim", claim)
    raw["metadata"].setdefault("labels", {})["team"] = "payments"
    h.kube.update(raw)
    h.operator.disruption_conditions.reconcile(claim)
    assert get_condition(h.kube.get("NodeClaim", claim)["status"]["conditions"], "Drifted") is None
    h.clock.advance(CONFLICT_RETRY)
    assert _drift(h, claim) == "AMIDrift"
    drifted = get_condition(h.kube.get("NodeClaim", claim)["status"]["conditions"], "Drifted")
    assert drifted["lastTransitionTime"] == seen


def test_a_fresh_process_judges_drift_only_once_every_kind_is_listed() -> None:
    """In production each kind is listed by its own thread: a restarted controller may see
    the NodeClaims before their NodePool. Judged then, a NodeClaim would look poolless and
    lose its Drifted condition, to get it back later with a new transition time."""
    h = Harness()
    h.default_setup()
    claim, _ = h.initialized_node()
    h.cloud.drifted[_provider_id(h, claim)] = "AMIDrift"
    h.clock.advance(CLOUD_DRIFT_RECHECK)
    assert _drift(h, claim) == "AMIDrift"
    written = get_condition(h.kube.get("NodeClaim", claim)["status"]["conditions"], "Drifted")
    h.clock.advance(60)
    fresh = Operator(h.kube, h.cloud, h.clock, h.cloud.resolve_nodeclass, validate=validate_object)
    fresh.attach(
        lambda kube, kinds, handler, listed: DrainFeed(kube, ["NodeClaim"], handler, listed)
    )
    fresh.pump()  # the NodeClaims are listed, the NodePool is not yet
    fresh.disruption_conditions.reconcile(claim)
    drifted = get_condition(h.kube.get("NodeClaim", claim)["status"]["conditions"], "Drifted")
    assert drifted == written
    fresh.feed.stop()
    fresh.attach(DrainFeed)  # now every kind
    fresh.pump()
    fresh.disruption_conditions.reconcile(claim)
    drifted = get_condition(h.kube.get("NodeClaim", claim)["status"]["conditions"], "Drifted")
    assert drifted == written
