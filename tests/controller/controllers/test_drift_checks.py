"""The cloud's drift verdict [DISR-6] is asked again when the node class changes and
otherwise at most every CLOUD_DRIFT_RECHECK, however often pods come and go."""

from __future__ import annotations

from ctl_harness import Harness
from joiner.api.conditions import get_condition
from joiner.controllers.disruption.conditions import CLOUD_DRIFT_RECHECK


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
