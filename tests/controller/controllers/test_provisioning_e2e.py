"""Pending pods -> one batch -> NodeClaim -> instance -> Node registered and Ready ->
NodeClaim initialized, through the memory adapter and the fake cloud on a virtual clock
[SCHED-1, SCHED-2, SCHED-11, LIFE-1]."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from typing import Any

from ctl_harness import ZONE_A, ZONE_B, Harness, catalogue, pending_pod
from joiner.api import labels as wk
from joiner.api.conditions import is_true
from joiner.kube.api import Forbidden
from joiner.kube.controllermanager import NODE_LIFECYCLE_DELAY
from joiner.testing import ec2nodeclass, nodepool

LIFECYCLE = ("Launched", "Registered", "Initialized", "Ready")
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _conditions(claim: dict) -> list[str]:
    """The lifecycle conditions that are True, in the order they were set."""
    conditions = claim["status"]["conditions"]
    return [c["type"] for c in conditions if c["status"] == "True" and c["type"] in LIFECYCLE]


def test_pending_pods_become_one_initialized_nodeclaim():
    h = Harness()
    h.default_setup()
    for name, cpu in (("p0", "1500m"), ("p1", "1500m"), ("p2", "500m")):
        h.create_unschedulable(pending_pod(name, cpu))

    h.advance(0.9)
    assert h.nodeclaims() == []  # the batch window (1s idle) is still open

    h.advance(0.1)
    [claim] = h.nodeclaims()
    name = claim["metadata"]["name"]
    assert name.startswith("default-")
    assert claim["spec"]["resources"]["requests"] == {
        "cpu": "3500m",
        "memory": "768Mi",
        "pods": "3",
    }
    assert {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["medium", "large"]} in claim[
        "spec"
    ]["requirements"]
    assert claim["metadata"]["finalizers"] == [wk.TERMINATION_FINALIZER]
    assert claim["metadata"]["ownerReferences"][0]["name"] == "default"
    labels = claim["metadata"]["labels"]
    assert (labels[wk.INSTANCE_TYPE], labels[wk.CAPACITY_TYPE], labels[wk.ZONE]) == (
        "medium",
        "spot",
        ZONE_A,
    )
    assert claim["status"]["providerID"] == f"fake:///{ZONE_A}/i-00000000000000001"
    assert claim["status"]["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "20"}
    assert _conditions(claim) == ["Launched"]
    assert h.events() == [
        ("Pod", "p0", "Nominated"),
        ("Pod", "p1", "Nominated"),
        ("Pod", "p2", "Nominated"),
    ]
    messages = {e["message"] for e in h.kube.list("Event").items if e["reason"] == "Nominated"}
    assert messages == {f"Pod should schedule on: nodeclaim/{name}"}

    # The test plays kubelet: the Node appears with the instance's providerID, NotReady.
    node_name = h.register_node(name)
    h.settle()
    node = h.kube.get("Node", node_name)
    assert node["spec"]["taints"] == [NOT_READY]  # the unregistered taint is gone
    assert node["metadata"]["finalizers"] == [wk.TERMINATION_FINALIZER]
    assert node["metadata"]["labels"][wk.NODE_REGISTERED] == "true"
    assert wk.NODE_INITIALIZED not in node["metadata"]["labels"]
    claim = h.kube.get("NodeClaim", name)
    assert claim["status"]["nodeName"] == node_name
    assert _conditions(claim) == ["Launched", "Registered"]

    h.advance(10)  # still NotReady: the claim waits
    assert _conditions(h.kube.get("NodeClaim", name)) == ["Launched", "Registered"]

    h.set_node_ready(node_name)
    h.settle()  # Ready, but the not-ready taint stays until the node lifecycle controller acts
    assert _conditions(h.kube.get("NodeClaim", name)) == ["Launched", "Registered"]
    h.advance(NODE_LIFECYCLE_DELAY)
    assert "taints" not in h.kube.get("Node", node_name)["spec"]
    claim = h.kube.get("NodeClaim", name)
    assert _conditions(claim) == ["Launched", "Registered", "Initialized", "Ready"]
    assert h.kube.get("Node", node_name)["metadata"]["labels"][wk.NODE_INITIALIZED] == "true"
    # The lifecycle is on the conditions only: no Event for launch, registration or
    # initialization (as upstream), just the pods' nominations.
    assert [reason for _, _, reason in h.events()] == ["Nominated"] * 3
    assert h.cloud.instances[claim["status"]["providerID"]].instance_type == "medium"
    created = h.operator.metrics.nodeclaims_created.labels("default", "provisioning")
    assert created._value.get() == 1


def test_startup_taints_hold_initialization_until_removed():
    h = Harness()
    startup = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}
    h.install(ec2nodeclass(), nodepool(startupTaints=[startup]))
    h.create_unschedulable(pending_pod("p0", "1"))
    h.advance(1)
    [claim] = h.nodeclaims()
    name = claim["metadata"]["name"]
    node_name = h.register_node(name)
    h.settle()
    assert h.kube.get("Node", node_name)["spec"]["taints"] == [NOT_READY, startup]
    h.set_node_ready(node_name)
    h.advance(10)
    assert not is_true(h.kube.get("NodeClaim", name)["status"]["conditions"], "Initialized")

    node = h.kube.get("Node", node_name)
    node["spec"]["taints"] = []  # the agent owning the startup taint removes it
    h.kube.update(node)
    h.advance(5)  # the next poll sees it
    assert is_true(h.kube.get("NodeClaim", name)["status"]["conditions"], "Initialized")


def test_window_closes_at_the_maximum_when_pods_keep_coming():
    h = Harness(batch_idle=1.0, batch_max=3.0)
    h.default_setup()
    for i in range(8):  # a new pod every 0.5s: the idle timeout never expires
        h.create_unschedulable(pending_pod(f"p{i}", "100m"))
        h.advance(0.5)
    [claim] = h.nodeclaims()
    assert claim["metadata"]["creationTimestamp"] == "2026-01-01T00:00:03Z"
    assert claim["spec"]["resources"]["requests"]["pods"] == "6"  # p0..p5 arrived by t=2.5


def test_nominations_hold_twice_the_batch_max_duration():
    """BATCH_MAX_DURATION sets the nomination window, as upstream's: 3 s batches, 10 s
    (the floor); 30 s batches, 60 s."""
    for batch_max, window in ((3.0, 10.0), (30.0, 60.0)):
        h = Harness(batch_idle=1.0, batch_max=batch_max)
        h.default_setup()
        h.create_unschedulable(pending_pod("p0", "100m"))
        h.advance(1)
        [claim] = h.nodeclaims()
        name = claim["metadata"]["name"]
        nominated_at = h.clock.now()
        assert h.operator.state.nominated_until(name) == nominated_at + window


def test_unplaceable_pod_gets_failed_scheduling_and_no_nodeclaim():
    h = Harness()
    h.default_setup()
    h.create_unschedulable(pending_pod("huge", "16"))
    h.advance(1)
    assert h.nodeclaims() == []
    assert h.events() == [("Pod", "huge", "FailedScheduling")]
    [event] = h.kube.list("Event").items
    assert event["type"] == "Warning"
    assert event["message"] == (
        "Failed to schedule pod, no instance type has enough resources, requests cpu=16, "
        "memory=256Mi, pods=1 (pod + daemonsets), nodepool=default"
    )


def test_pods_arriving_later_fill_the_in_flight_nodeclaim_first():
    h = Harness()
    h.default_setup()
    h.create_unschedulable(pending_pod("p0", "1500m"))
    h.create_unschedulable(pending_pod("p1", "1500m"))
    h.advance(1)
    [first] = h.nodeclaims()
    assert first["metadata"]["labels"][wk.INSTANCE_TYPE] == "medium"

    h.create_unschedulable(pending_pod("p2", "1"))  # fits the 1 CPU left on the medium
    h.advance(1)
    assert [c["metadata"]["name"] for c in h.nodeclaims()] == [first["metadata"]["name"]]
    assert h.events("Nominated")[-1] == ("Pod", "p2", "Nominated")

    h.create_unschedulable(pending_pod("p3", "1"))  # no room left: a second NodeClaim
    h.advance(1)
    claims = h.nodeclaims()
    assert len(claims) == 2
    assert claims[1]["spec"]["resources"]["requests"]["cpu"] == "1"
    assert claims[1]["metadata"]["labels"][wk.INSTANCE_TYPE] == "small"


def _startup_histogram(h: Harness) -> tuple[float, float]:
    """(count, sum) of karpenter_pods_startup_duration_seconds."""
    [metric] = h.operator.metrics.pods_startup_duration.collect()
    values = {s.name: s.value for s in metric.samples}
    return (
        values["karpenter_pods_startup_duration_seconds_count"],
        values["karpenter_pods_startup_duration_seconds_sum"],
    )


def test_pod_startup_duration_counts_pods_seen_pending_once():
    h = Harness()
    h.default_setup()
    h.create_unschedulable(pending_pod("p0", "1"))
    h.advance(1)
    [claim] = h.nodeclaims()
    node_name = h.register_node(claim["metadata"]["name"])
    h.set_node_ready(node_name)
    h.advance(44)
    h.bind_running("p0", node_name)  # running 45s after it was created
    h.settle()
    assert _startup_histogram(h) == (1, 45.0)

    pod = h.pod("p0")
    pod["metadata"]["labels"] = {"touched": "yes"}  # a later update of the running pod
    h.kube.update(pod)
    h.advance(5)
    assert _startup_histogram(h) == (1, 45.0)

    # A controller (re)starting sees pods that have been running for days: not start-ups.
    days_old = {
        **h.pod("p0"),
        "metadata": {"uid": "u-old", "creationTimestamp": "2025-01-01T00:00:00Z"},
    }
    h.operator.pod_startup.on_pod("ADDED", days_old)
    assert _startup_histogram(h) == (1, 45.0)


def test_price_metrics_follow_the_launched_offerings():
    h = Harness()
    h.default_setup()
    h.create_unschedulable(pending_pod("p0", "3"))  # a medium: $0.04 spot in zone A
    h.advance(2)
    h.create_unschedulable(pending_pod("p1", "1500m", nodeSelector={wk.ZONE: ZONE_B}))
    h.advance(60)
    launched = [
        (c["metadata"]["labels"][wk.INSTANCE_TYPE], c["metadata"]["labels"][wk.CAPACITY_TYPE])
        for c in h.nodeclaims()
    ]
    assert launched == [("medium", "spot"), ("small", "on-demand")]  # $0.04 each
    metrics = h.operator.metrics
    assert metrics.cluster_cost._value.get() == 0.08
    assert metrics.offering_price.labels("large", "on-demand", ZONE_B)._value.get() == 0.16
    assert len(metrics.offering_price.collect()[0].samples) == 6  # 3 types x 2 offerings

    for claim in h.nodeclaims():
        h.kube.delete("NodeClaim", claim["metadata"]["name"])
    h.kube.delete("Pod", "p0", "default")
    h.kube.delete("Pod", "p1", "default")
    h.advance(60)
    assert h.nodeclaims() == []
    assert metrics.cluster_cost._value.get() == 0.0


def _offering_prices(h: Harness) -> dict[tuple[str, str, str], float]:
    [family] = h.operator.metrics.offering_price.collect()
    return {
        (s.labels["instance_type"], s.labels["capacity_type"], s.labels["zone"]): s.value
        for s in family.samples
    }


def test_price_metrics_follow_price_changes_and_drop_offerings_once_no_pool_has_them():
    h = Harness()
    h.default_setup()
    h.advance(60)
    assert len(_offering_prices(h)) == 6
    small = h.cloud.instance_types[0]
    cheaper = [dataclasses.replace(o, price=o.price / 2) for o in small.offerings]
    h.cloud.instance_types[0] = dataclasses.replace(small, offerings=cheaper)
    h.advance(60)
    assert _offering_prices(h)[("small", "spot", ZONE_A)] == 0.01
    h.kube.delete("NodePool", "default")
    h.advance(60)
    assert _offering_prices(h) == {}


def test_pods_wait_for_a_ready_node_class_then_provision():
    h = Harness()
    h.install(ec2nodeclass("other"), nodepool())  # the pool's class "default" does not exist
    h.create_unschedulable(pending_pod("p0", "1"))
    h.advance(2)
    assert h.nodeclaims() == []
    [event] = h.kube.list("Event").items
    assert (event["reason"], event["message"]) == (
        "FailedScheduling",
        "Failed to schedule pod, no nodepool can launch nodes",
    )

    h.install(ec2nodeclass())  # resolved Ready: the pending pod gets another batch
    h.advance(1)
    [claim] = h.nodeclaims()
    assert h.events()[1:] == [("Pod", "p0", "Nominated")]
    assert _conditions(claim) == ["Launched"]


def test_nodepool_status_counts_a_burst_once_a_second_later():
    h = Harness(instance_types=[catalogue()[0]])  # only "small": 2 vCPU, 4Gi, 10 pods
    h.default_setup()
    runs: list[float] = []
    reconcile = h.operator.nodepool_status.reconcile

    def counted(key: str):
        runs.append(h.clock.now() - h.start)
        return reconcile(key)

    h.operator.nodepool_status.reconcile = counted  # type: ignore[method-assign]
    for i in range(6):  # one small (2 vCPU) each: six NodeClaims in one pass
        h.create_unschedulable(pending_pod(f"p{i}", "1500m"))
    h.advance(1)
    assert len(h.nodeclaims()) == 6
    assert runs == []
    h.advance(1)
    # One recount for the six creations and launches; the status write coming back
    # through the watch does not start another (it changed no spec).
    assert runs == [2.0]
    status = h.kube.get("NodePool", "default")["status"]
    assert (status["nodes"], status["resources"]) == (
        6,
        {"cpu": "12", "memory": "24Gi", "pods": "60"},
    )


def test_nominated_events_are_capped_at_karpenters_rate_and_every_pod_is_nominated():
    """Karpenter's limiter (5 a second, bursts of 10, all pods together): a burst is told
    in ten Events instead of one request per pod ahead of the next NodeClaim."""
    h = Harness()
    h.default_setup()
    for i in range(30):
        h.create_unschedulable(pending_pod(f"p{i:02d}", "100m"))
    h.advance(1.0)
    [claim] = h.nodeclaims()
    name = claim["metadata"]["name"]
    assert {h.operator.state.nomination(f"default/p{i:02d}") for i in range(30)} == {name}
    told = [pod for _, pod, _ in h.events("Nominated")]
    assert len(told) == len(set(told)) == 10

    h.advance(1.0)  # two seconds after the burst: ten tokens again
    for i in range(30, 42):
        h.create_unschedulable(pending_pod(f"p{i:02d}", "100m"))
    h.advance(1.0)
    assert all(h.operator.state.nomination(f"default/p{i:02d}") for i in range(30, 42))
    assert len(h.events("Nominated")) == 20


def test_a_plans_nodeclaims_are_created_together_and_a_refused_one_holds_back_its_pod():
    """As the controller process runs it (several creates at once, as Karpenter creates a
    batch's NodeClaims): the creates overlap, and one the API server refuses leaves only
    its own pod unnominated; the pass then reports the refusal."""
    h = Harness(creates_at_once=4)
    h.default_setup()
    for i in range(5):  # 6 vCPU each: a large NodeClaim apiece
        h.create_unschedulable(pending_pod(f"p{i}", "6"))
    create, together, tickets = h.kube.create, threading.Barrier(2, timeout=5), itertools.count()

    def overlapping(obj: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        # The first two creates wait for each other (in flight together), one is refused.
        if obj["kind"] == "NodeClaim" and next(tickets) < 2 and together.wait() == 0:
            raise Forbidden("exceeded quota")
        return create(obj, *args, **kwargs)

    h.kube.create = overlapping  # type: ignore[method-assign]
    errors = h.operator.manager.error_count
    h.advance(1.0)
    assert len(h.nodeclaims()) == 4
    nominated = [h.operator.state.nomination(f"default/p{i}") for i in range(5)]
    assert sorted(bool(n) for n in nominated) == [False, True, True, True, True]
    assert len(set(filter(None, nominated))) == 4
    assert h.operator.manager.error_count == errors + 1
