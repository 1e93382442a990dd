"""Static NodePools end to end [STATIC]: the real operator in the simulator, and what
upstream Karpenter's docs promise: nothing without the StaticCapacity gate; exactly
``replicas`` nodes whatever the pods, never consolidated; scaling by editing replicas,
capped by ``limits.nodes``; scale-down past the disruption budgets, empty nodes first,
nodes with do-not-disrupt pods last, ``karpenter.sh/deprovisioning-priority`` in between;
drift replacing nodes only when ``limits.nodes`` leaves room; expiration refilled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from joiner import testing
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import ScenarioError, load_scenario

POOL = "static"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
AT_LIMIT = "static NodePool is at its node limit and cannot stage a replacement"
NO_DISRUPTION = {
    "consolidationPolicy": "WhenEmptyOrUnderutilized",
    "consolidateAfter": "0s",
    "budgets": [{"nodes": "0"}],
}


def _pool(replicas: int, **more: Any) -> dict[str, Any]:
    more.setdefault("disruption", NO_DISRUPTION)
    return testing.nodepool(
        POOL,
        requirements=[testing.capacity_types("on-demand")],
        replicas=replicas,
        **more,
    )


def _run(
    objects: list[dict[str, Any]], steps: list[dict[str, Any]], gate: bool = True
) -> SimulationResult:
    doc = testing.scenario(
        "static",
        instance_types=[
            testing.scenario_instance_type("m-4x16", "4", "16Gi", {"zone-a/on-demand": 0.192})
        ],
        objects=[testing.ec2nodeclass(), *objects],
        steps=[{"settle": "5m"}, *steps],
        settings={"FEATURE_GATES": f"StaticCapacity={str(gate).lower()}"},
    )
    return Simulation(load_scenario(yaml.safe_dump(doc))).run()


def _scale(replicas: int) -> dict[str, Any]:
    return {"scale": {"kind": "NodePool", "name": POOL, "replicas": replicas}}


def _nodes(result: SimulationResult, step: int = -1) -> list[str]:
    snapshot = result.final if step == -1 else result.steps[step].snapshot
    return sorted(n.name for n in snapshot.managed_nodes)


def _events(result: SimulationResult, reason: str) -> list[tuple[str, str]]:
    return [(e.name, e.message) for e in result.events if e.reason == reason]


def test_without_the_gate_a_static_pool_launches_nothing_not_even_for_pods() -> None:
    result = _run(
        [_pool(3), testing.deployment("app", replicas=2, cpu="1", memory="1Gi")],
        [{"advance": "5m"}],
        gate=False,
    )
    assert result.nodeclaims == []
    assert len(result.final.pending_pods) == 2


def test_a_static_pool_keeps_its_replicas_with_no_pods_and_is_never_consolidated() -> None:
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"}
    result = _run([_pool(3, disruption=disruption)], [{"advance": "1h"}])
    assert len(result.final.managed_nodes) == 3
    assert [c.deleted_at for c in result.nodeclaims] == [None, None, None]


def test_pods_use_static_nodes_but_never_make_the_pool_grow() -> None:
    result = _run(
        [_pool(1), testing.deployment("app", replicas=3, cpu="1500m", memory="1Gi")],
        [{"advance": "10m"}],
    )
    assert len(result.nodeclaims) == 1
    assert sum(len(n.pods) for n in result.final.managed_nodes) == 2  # 2 of 1500m on 4 CPUs
    assert len(result.final.pending_pods) == 1


def test_scaling_up_stops_at_limits_nodes_and_says_so() -> None:
    result = _run([_pool(2, limits={"nodes": "3"})], [_scale(5), {"settle": "5m"}])
    assert len(result.final.managed_nodes) == 3
    assert (POOL, "limits.nodes 3 leaves no room for the 5 replicas") in _events(
        result, "NodePoolNodeLimitReached"
    )


def test_scaling_down_ignores_the_budget_and_takes_empty_nodes_first() -> None:
    """Three nodes, a budget of 0; replicas 3 -> 1: the two empty nodes go, at once."""
    result = _run(
        [_pool(3), testing.deployment("app", replicas=1, cpu="1", memory="1Gi")],
        [_scale(1), {"settle": "5m"}],
    )
    (kept,) = result.final.managed_nodes
    assert len(kept.pods) == 1
    deleted = [c for c in result.nodeclaims if c.deleted_at is not None]
    assert len(deleted) == 2
    assert len({c.deleted_at for c in deleted}) == 1


def test_scaling_down_keeps_the_node_of_a_do_not_disrupt_pod() -> None:
    """Three nodes with one pod each, one pod carrying do-not-disrupt; down to 1: the
    other two go, the do-not-disrupt pod's node stays."""
    guarded = testing.deployment("guarded", replicas=1, cpu="3", memory="1Gi")
    guarded["spec"]["template"]["metadata"]["annotations"] = {DO_NOT_DISRUPT: "true"}
    app = testing.deployment("app", replicas=2, cpu="3", memory="1Gi")
    result = _run([_pool(3), guarded, app], [_scale(1), {"settle": "10m"}])
    (kept,) = result.final.managed_nodes
    assert [p.split("/")[-1].split("-")[0] for p in kept.pods] == ["guarded"]
    assert len([c for c in result.nodeclaims if c.deleted_at is not None]) == 2


def test_drift_waits_for_room_under_limits_nodes() -> None:
    """replicas 2 with limits.nodes 2: a drifted node cannot get its replacement first,
    so it stays and says why; with limits.nodes 3 it is replaced before it drains."""
    at_limit = _run([_drifting(nodes="2")], [_drift(nodes="2"), {"advance": "5m"}])
    assert [c.deleted_at for c in at_limit.nodeclaims] == [None, None]
    assert {m for _, m in _events(at_limit, "DisruptionBlocked")} == {AT_LIMIT}

    room = _run([_drifting(nodes="3")], [_drift(nodes="3"), {"advance": "10m"}])
    replaced = [c for c in room.nodeclaims if c.disruption_reason == "Drifted"]
    assert len(replaced) == 2
    assert len(room.final.managed_nodes) == 2
    assert len(room.nodeclaims) == 4


def _drifting(nodes: str, **more: Any) -> dict[str, Any]:
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"}
    return _pool(2, limits={"nodes": nodes}, disruption=disruption, **more)


def _drift(nodes: str) -> dict[str, Any]:
    """Apply the pool with a changed template label: its nodes drift."""
    return {"apply": [_drifting(nodes, labels={"version": "2"})]}


def test_an_expired_node_is_replaced() -> None:
    result = _run([_pool(2, expire_after="30m")], [{"advance": "40m"}])
    assert len(result.final.managed_nodes) == 2
    assert len([c for c in result.nodeclaims if c.deleted_at is not None]) >= 2


@pytest.mark.parametrize("after", [1, 3, 6, 10, 20])
def test_a_restart_anywhere_in_a_scale_up_never_launches_twice(after: int) -> None:
    """The count comes from the NodeClaims written, not from memory: a controller
    restarted between any two reconciles of a scale-up creates only what is missing."""
    result = _run(
        [_pool(4)], [_scale(6), {"restart": {"afterReconciles": after}}, {"settle": "5m"}]
    )
    assert len(result.final.managed_nodes) == 6
    assert len(result.nodeclaims) == 6
    assert result.totals.restarts == 1


def test_scaling_a_dynamic_pool_fails_as_the_api_server_refuses_it() -> None:
    dynamic = testing.nodepool(POOL, requirements=[testing.capacity_types("on-demand")])
    with pytest.raises(ScenarioError, match="Cannot transition NodePool between static"):
        _run([dynamic], [_scale(2)])


def test_the_example_holds_its_expectations() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "static-nodepool.yaml"
    result = Simulation(load_scenario(example)).run()
    assert result.failures == []
    drifted = [c for c in result.nodeclaims if c.disruption_reason == "Drifted"]
    assert len(drifted) == 1


def test_replicas_0_removes_every_node_and_the_pool_can_grow_again() -> None:
    """replicas may be 0 (the CRD's minimum): the pool keeps no node; raised to 2 again,
    two new nodes come."""
    result = _run([_pool(2)], [_scale(0), {"settle": "5m"}, _scale(2), {"settle": "5m"}])
    assert _nodes(result, step=2) == []
    assert len(result.final.managed_nodes) == 2
    assert len(result.nodeclaims) == 4


def test_a_scale_down_past_the_budget_still_waits_for_pod_disruption_budgets() -> None:
    """Two nodes of one 3-CPU pod each, a PDB allowing no eviction; down to 1: the
    surplus node is deleted at once but its drain holds; once the PDB allows one
    eviction the node goes, and its pod stays pending (the pool does not grow for it)."""
    app = testing.deployment("app", replicas=2, cpu="3", memory="1Gi")
    pdb = testing.pod_disruption_budget("app", max_unavailable=0)
    relaxed = testing.pod_disruption_budget("app", max_unavailable=1)
    result = _run(
        [_pool(2), app, pdb],
        [_scale(1), {"advance": "10m"}, {"apply": [relaxed]}, {"settle": "10m"}],
    )
    held = result.steps[2].snapshot
    assert (len(held.managed_nodes), held.pods_running) == (2, 2)
    assert {m for _, m in _events(result, "FailedDraining")} == {
        "Eviction blocked: Cannot evict pod as it would violate the pod's disruption budget."
    }
    assert len(result.final.managed_nodes) == 1
    assert result.totals.evictions == 1
    assert len(result.final.pending_pods) == 1
