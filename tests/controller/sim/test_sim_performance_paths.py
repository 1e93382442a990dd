"""The simulator's fast paths give what the slow, obvious computations give: the pods
indexed from the watch, and the cost and pending time integrated from watched facts,
equal what a full listing of the API says at every clock jump; the
joined node view is rebuilt when the state changes, and the disruption pass reuses a
rescheduling simulation only while nothing it read has changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from joiner.clock import FakeClock
from joiner.controllers.disruption.candidates import build_candidates
from joiner.scheduling.model import pod_key
from joiner.scheduling.pods import pod_requests
from joiner.sim.engine import Simulation
from joiner.sim.podindex import PodIndex, is_pending
from joiner.sim.scenario import load_scenario
from joiner.state.cluster import ClusterState
from sim_builders import BASE_SCENARIO, to_text


def _type(name: str, cpu: str, memory: str, price: float) -> dict[str, Any]:
    return {
        "name": name,
        "cpu": cpu,
        "memory": memory,
        "pods": 30,
        "offerings": [
            {"zone": "zone-a", "capacityType": "on-demand", "price": price},
            {"zone": "zone-b", "capacityType": "on-demand", "price": price * 1.1},
        ],
    }


def _scenario_text() -> str:
    """Scale out onto several nodes, scale in so consolidation removes and replaces some,
    with a priced static node that pods may not use."""
    doc = copy.deepcopy(BASE_SCENARIO)
    spec = doc["spec"]
    spec["cloud"]["instanceTypes"] = [
        _type("small", "2", "4Gi", 0.1),
        _type("large", "8", "16Gi", 0.38),
    ]
    spec["nodes"] = [
        {
            "name": "system-1",
            "instanceType": "small",
            "zone": "zone-a",
            "taints": [{"key": "system", "effect": "NoSchedule"}],
        }
    ]
    pool = spec["objects"][1]["spec"]
    pool["template"]["spec"]["requirements"][0]["values"] = ["on-demand"]
    pool["disruption"] = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }
    spec["objects"][2]["metadata"]["namespace"] = "default"
    app = {"kind": "Deployment", "name": "app", "namespace": "default"}
    spec["steps"] = [
        {"scale": {**app, "replicas": 20}},
        {"settle": "10m"},
        {"advance": "5m"},
        {"scale": {**app, "replicas": 3}},
        {"advance": "20m"},
        {"scale": {**app, "replicas": 0}},
        {"advance": "5m"},
    ]
    return to_text(doc)


def test_cost_and_pending_time_match_a_snapshot_at_every_clock_jump(
    monkeypatch: pytest.MonkeyPatch,
):
    simulation = Simulation(load_scenario(_scenario_text()))
    observer = simulation.observer
    seen: list[tuple[float, int]] = []
    original = observer.account

    def checked(seconds: float) -> None:
        snapshot = observer.snapshot(with_reasons=False)
        pods = simulation.kube.list("Pod").items  # what the indexes stand in for
        pending = sorted(pod_key(p) for p in pods if is_pending(p))
        assert [p.name for p in snapshot.pending_pods] == pending
        assert observer.pods.pending_count() == len(pending)
        for view in snapshot.nodes:
            assert view.pods == sorted(
                pod_key(p)
                for p in pods
                if p["spec"].get("nodeName") == view.name
                and p["status"].get("phase") not in ("Succeeded", "Failed")
            )
        assert observer.cost_per_hour() == snapshot.cost_per_hour
        seen.append((snapshot.cost_per_hour, len(pending)))
        original(seconds)

    monkeypatch.setattr(observer, "account", checked)
    result = simulation.run()
    assert any(pending > 0 for _, pending in seen)  # the pending path was exercised
    assert len({cost for cost, _ in seen}) >= 3  # and the cluster changed price
    assert result.totals.nodeclaims_deleted >= 1
    assert result.final.cost_per_hour == pytest.approx(0.1)  # only the static node left


def test_pending_time_integrates_pods_times_seconds():
    simulation = Simulation(load_scenario(_scenario_text()))
    result = simulation.run()
    # 20 pods wait for their node: launch (30s) + ready (10s) + batching, no more than 2m.
    assert 20 * 40 <= result.totals.pod_pending_seconds <= 20 * 120


def _state_with_nodes(names: list[str]):
    state = ClusterState(FakeClock(0.0))
    for name in names:
        state.apply("ADDED", {"kind": "Node", "metadata": {"name": name}, "spec": {}})
    return state


def test_state_node_by_name_follows_every_change():
    state = _state_with_nodes(["a", "b"])
    assert [sn.name for sn in state.state_nodes()] == ["a", "b"]
    assert state.state_node("b") is not None and state.state_node("c") is None
    state.apply("ADDED", {"kind": "Node", "metadata": {"name": "c"}, "spec": {}})
    assert state.state_node("c") is not None
    state.apply("DELETED", {"kind": "Node", "metadata": {"name": "a"}, "spec": {}})
    assert state.state_node("a") is None
    assert [sn.name for sn in state.state_nodes()] == ["b", "c"]


def test_state_nodes_returns_a_list_the_caller_may_change():
    state = _state_with_nodes(["a", "b"])
    state.state_nodes().clear()
    assert [sn.name for sn in state.state_nodes()] == ["a", "b"]


def _disruption_after_scale_in() -> Simulation:
    """A cluster right after a scale-in, with candidates to consolidate."""
    text = _scenario_text()
    simulation = Simulation(load_scenario(text))
    simulation._create_static_nodes()
    simulation._apply(simulation.scenario.objects, "spec.objects")
    for step in simulation.scenario.steps[:4]:
        simulation._step(step)
    return simulation


def test_disruption_reuses_a_simulation_only_while_its_inputs_hold(
    monkeypatch: pytest.MonkeyPatch,
):
    simulation = _disruption_after_scale_in()
    disruption = simulation.operator.disruption
    solves: list[tuple[str, ...]] = []
    original = disruption._solve_without

    def counted(candidates):
        solves.append(tuple(c.name for c in candidates))
        return original(candidates)

    monkeypatch.setattr(disruption, "_solve_without", counted)
    state = simulation.operator.state
    candidates, _ = build_candidates(state, disruption._prices(), simulation.clock.now())
    assert candidates, "the scale-in left nodes to consolidate"
    first = disruption._simulate(candidates[:1])
    again = disruption._simulate(candidates[:1])
    assert again is first and len(solves) == 1
    fresh = original(candidates[:1])  # what an uncached simulation says
    assert fresh.existing == first.existing
    assert [c.instance_types for c in fresh.nodeclaims] == [
        c.instance_types for c in first.nodeclaims
    ]

    state.marked_for_deletion.add("elsewhere")  # a mark changes what may take the pods
    disruption._simulate(candidates[:1])
    assert len(solves) == 2
    state.marked_for_deletion.discard("elsewhere")

    node = next(iter(state.nodes.values()))
    state.apply("MODIFIED", copy.deepcopy(node))  # any watch event changes the state
    disruption._simulate(candidates[:1])
    assert len(solves) == 3

    simulation.cloud.provider.unavailable.add(("small", "zone-a", "on-demand"))
    disruption._new_pass()  # a new pass reads the offerings again
    disruption._simulate(candidates[:1])
    assert len(solves) == 4


def _pod(name: str, node: str | None = None, phase: str = "Pending", owner: str = "rs-1"):
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": owner}],
        },
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_pod_index_follows_binding_completion_and_deletion():
    index = PodIndex()
    index.apply("ADDED", _pod("b"))
    index.apply("ADDED", _pod("a"))
    index.apply("ADDED", _pod("c", owner="rs-2"))
    assert [p["metadata"]["name"] for p in index.pending()] == ["a", "b", "c"]
    assert [p["metadata"]["name"] for p in index.owned_by("rs-1")] == ["a", "b"]

    index.apply("MODIFIED", _pod("a", node="n1", phase="Running"))
    assert [p["metadata"]["name"] for p in index.pending()] == ["b", "c"]
    assert [p["metadata"]["name"] for p in index.on_node("n1")] == ["a"]

    index.apply("MODIFIED", _pod("a", node="n1", phase="Succeeded"))  # finished: off the node
    assert index.on_node("n1") == [] and index.pending_count() == 2
    assert [p["metadata"]["name"] for p in index.owned_by("rs-1")] == ["a", "b"]

    index.apply("DELETED", _pod("a", node="n1", phase="Succeeded"))
    index.apply("DELETED", _pod("b"))
    assert [p["metadata"]["name"] for p in index.owned_by("rs-1")] == []
    assert [p["metadata"]["name"] for p in index.pending()] == ["c"]


def test_pod_requests_are_remembered_per_object_and_handed_out_as_copies():
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "250m"}}}]}}
    first = pod_requests(pod, {})
    first["cpu"] = 1  # a caller scribbling on its result
    assert pod_requests(pod, {}) == {"cpu": 250, "pods": 1000}
    twin = {"spec": {"containers": [{"resources": {"requests": {"cpu": "2"}}}]}}
    assert pod_requests(twin, {}) == {"cpu": 2000, "pods": 1000}


def test_pod_requests_with_a_runtime_class_follow_the_classes_given():
    pod = {"spec": {"runtimeClassName": "kata", "containers": [{"resources": {}}]}}
    assert pod_requests(pod, {"kata": {"cpu": 100}}) == {"cpu": 100, "pods": 1000}
    assert pod_requests(pod, {"kata": {"cpu": 300}}) == {"cpu": 300, "pods": 1000}


def test_pod_index_gives_the_same_node_list_until_a_pod_on_the_node_changes():
    index = PodIndex()
    index.apply("ADDED", _pod("a", node="n1", phase="Running"))
    first = index.on_node("n1")
    index.apply("ADDED", _pod("b", node="n2", phase="Running"))  # another node
    assert index.on_node("n1") is first
    updated = _pod("a", node="n1", phase="Running")
    updated["metadata"]["labels"] = {"tier": "web"}
    index.apply("MODIFIED", updated)
    assert index.on_node("n1") == [updated]
    index.apply("MODIFIED", _pod("b", node="n1", phase="Running"))  # moved from n2
    assert [p["metadata"]["name"] for p in index.on_node("n1")] == ["a", "b"]
    assert index.on_node("n2") == []


def test_pod_index_gives_the_same_owned_list_until_a_pod_of_the_owner_changes():
    index = PodIndex()
    index.apply("ADDED", _pod("a"))
    first = index.owned_by("rs-1")
    index.apply("ADDED", _pod("c", owner="rs-2"))  # another owner
    assert index.owned_by("rs-1") is first
    index.apply("ADDED", _pod("b"))
    assert [p["metadata"]["name"] for p in index.owned_by("rs-1")] == ["a", "b"]
    index.apply("DELETED", _pod("a"))
    assert [p["metadata"]["name"] for p in index.owned_by("rs-1")] == ["b"]


def test_pods_on_a_node_follow_binding_and_deletion():
    state = _state_with_nodes(["n1"])
    state.apply("ADDED", _pod("b", node="n1", phase="Running"))
    assert [p["metadata"]["name"] for p in state.pods_on("n1")] == ["b"]
    state.pods_on("n1").clear()  # the caller's copy
    state.apply("ADDED", _pod("a", node="n1", phase="Running"))
    assert [p["metadata"]["name"] for p in state.pods_on("n1")] == ["a", "b"]
    state.apply("DELETED", _pod("b", node="n1", phase="Running"))
    assert [p["metadata"]["name"] for p in state.pods_on("n1")] == ["a"]
