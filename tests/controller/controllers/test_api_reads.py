"""What the NodeClaim controllers ask the API server: they work on the cluster state's
copy and write with its resourceVersion, reading a NodeClaim fresh only before its
launch [LIFE-1]; a reconcile that runs before the watch brought back its own last
write waits for it. The disruption conditions [DISR-5]: no Consolidatable condition
while consolidation is off (Karpenter's), lastPodEventTime kept up to date."""

from __future__ import annotations

from typing import Any

import pytest
from ctl_harness import Harness, pending_pod
from joiner.api.conditions import get_condition, is_true
from joiner.clock import to_rfc3339
from joiner.testing import ec2nodeclass, nodeclaim, nodepool

NEVER = {"consolidateAfter": "Never"}


def _count_gets(h: Harness, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The (kind, name) of every get from now on, the test's own included."""
    gets: list[tuple[str, str]] = []
    real_get = h.kube.get

    def counting(kind: str, name: str, namespace: str | None = None, **options: Any) -> Any:
        gets.append((kind, name))
        return real_get(kind, name, namespace, **options)

    monkeypatch.setattr(h.kube, "get", counting)
    return gets


def test_one_nodeclaim_read_from_the_api_from_creation_to_initialized(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness()
    h.install(ec2nodeclass(), nodepool(disruption=NEVER))
    gets = _count_gets(h, monkeypatch)
    h.create_unschedulable(pending_pod("p0", "1"))
    h.advance(1)
    [claim] = h.nodeclaims()
    name = claim["metadata"]["name"]
    assert gets == [("NodeClaim", name)]  # before the launch

    node_name = h.register_node(name)  # the test's kubelet reads the NodeClaim
    h.settle()
    h.set_node_ready(node_name)
    h.settle()
    h.advance(30)
    assert is_true(h.kube.get("NodeClaim", name)["status"]["conditions"], "Initialized")
    ours = [g for g in gets if g[0] == "NodeClaim"]
    assert ours == [("NodeClaim", name)] * 3  # the launch's, the kubelet's, this test's


def test_a_reconcile_ahead_of_the_watch_waits_for_its_own_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness()
    h.default_setup()
    h.kube.create(nodeclaim("direct"))
    h.operator.pump()  # the state has the NodeClaim, not launched
    gets = _count_gets(h, monkeypatch)
    lifecycle = h.operator.lifecycle
    lifecycle.reconcile("direct")  # launches
    assert len(h.cloud.create_calls) == 1
    assert lifecycle.reconcile("direct").requeue_after is None  # the state still lags
    assert (len(h.cloud.create_calls), gets) == (1, [("NodeClaim", "direct")])

    h.operator.pump()  # the watch brings the launch back: on to registration
    assert lifecycle.reconcile("direct").requeue_after == 5.0  # waiting for the Node
    assert (len(h.cloud.create_calls), gets) == (1, [("NodeClaim", "direct")])


def test_no_consolidatable_condition_while_consolidation_is_off() -> None:
    h = Harness()
    h.install(ec2nodeclass(), nodepool(disruption=NEVER))
    name, _ = h.initialized_node()
    h.advance(60)
    conditions = h.kube.get("NodeClaim", name)["status"]["conditions"]
    assert get_condition(conditions, "Consolidatable") is None

    pool = h.kube.get("NodePool", "default")
    pool["spec"]["disruption"]["consolidateAfter"] = "30s"
    h.kube.update(pool)
    h.settle()  # on again: empty for a minute, it is consolidatable at once
    conditions = h.kube.get("NodeClaim", name)["status"]["conditions"]
    assert is_true(conditions, "Consolidatable")


def test_last_pod_event_time_is_written_when_only_it_changes() -> None:
    h = Harness()
    h.install(ec2nodeclass(), nodepool(disruption=NEVER))
    name, node_name = h.initialized_node()  # its seed pod came and went
    h.create_unschedulable(pending_pod("late", "100m"))
    h.advance(5)
    bound_at = h.clock.now()
    h.bind_running("late", node_name)
    h.settle()
    status = h.kube.get("NodeClaim", name)["status"]
    assert status["lastPodEventTime"] == to_rfc3339(bound_at)


def test_only_pods_coming_or_going_wake_their_nodeclaims_conditions() -> None:
    h = Harness()
    h.install(ec2nodeclass(), nodepool(disruption=NEVER))
    name, node_name = h.initialized_node()
    h.create_unschedulable(pending_pod("web", "100m"))
    h.advance(5)
    woken: list[str] = []
    reconcile = h.operator.disruption_conditions.reconcile

    def counted(key: str) -> Any:
        woken.append(key)
        return reconcile(key)

    h.operator.disruption_conditions.reconcile = counted  # type: ignore[method-assign]
    h.bind_running("web", node_name)
    h.settle()
    assert woken and set(woken) == {name}  # the pod came (and lastPodEventTime was written)
    before = len(woken)
    pod = h.pod("web")
    pod["metadata"]["labels"] = {"release": "2"}
    h.kube.update(pod)
    h.settle()
    assert len(woken) == before  # a relabelled pod stays where it was
    h.kube.delete("Pod", "web", "default", grace_period_seconds=0)
    h.settle()
    assert len(woken) > before and set(woken) == {name}
