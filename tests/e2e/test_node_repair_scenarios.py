"""Node repair end to end [REPAIR]: the real operator in the simulator, a node made
unhealthy by an ``unhealthy`` step, and what upstream Karpenter's docs promise: nothing
without the NodeRepair gate, nothing before the condition's toleration, force
termination (no drain: PDBs and do-not-disrupt do not hold it) and a replacement after
it, and no repair at all while more than 20% of the pool is unhealthy."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from joiner import testing
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

APP = "web"


def _scenario(
    steps: list[dict[str, Any]],
    gate: bool = True,
    replicas: int = 10,
    extra: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """Five on-demand nodes of two web pods each (10 replicas of 1500m on 4-CPU types)."""
    return testing.on_demand_pool_scenario(
        "repair",
        [testing.scenario_instance_type("m-4x16", "4", "16Gi", {"zone-a/on-demand": 0.192})],
        {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        [testing.deployment(APP, replicas=replicas, cpu="1500m", memory="1Gi"), *extra],
        [{"settle": "5m"}, *steps],
        f"NodeRepair={str(gate).lower()}",
    )


def _unhealthy(count: int, condition: str = "Ready", status: str = "False", **more: Any) -> dict:
    return {
        "unhealthy": {
            "nodeSelector": {"karpenter.sh/nodepool": "default"},
            "count": count,
            "condition": condition,
            "status": status,
            **more,
        }
    }


def _run(doc: dict[str, Any]) -> SimulationResult:
    return Simulation(load_scenario(yaml.safe_dump(doc))).run()


def _repaired(result: SimulationResult) -> list[str]:
    return [c.name for c in result.nodeclaims if c.disruption_reason == "Unhealthy"]


def _became_unhealthy_at(result: SimulationResult) -> float:
    return next(s.time for s in result.steps if s.action == "unhealthy")


def _reasons(result: SimulationResult, reason: str) -> list[tuple[str, str]]:
    return [(e.kind, e.message) for e in result.events if e.reason == reason]


def test_a_node_not_ready_for_30_minutes_is_replaced_without_a_drain() -> None:
    """Ready=False is tolerated 30 minutes; then the NodeClaim is deleted at once and its
    two pods, though a PDB allows no disruption, are not evicted: they go with the node
    and run again on a new one."""
    pdb = testing.pod_disruption_budget(APP, max_unavailable=0)
    result = _run(
        _scenario(
            [_unhealthy(1), {"advance": "29m"}, {"advance": "2m"}, {"settle": "10m"}],
            extra=(pdb,),
        )
    )
    (repaired,) = _repaired(result)
    record = next(c for c in result.nodeclaims if c.name == repaired)
    assert record.deleted_at is not None
    # condition times are whole seconds
    assert record.deleted_at - _became_unhealthy_at(result) == pytest.approx(30 * 60, abs=1)
    assert len(result.steps[2].snapshot.managed_nodes) == 5  # still there after 29 minutes
    assert _reasons(result, "Evicted") == []
    assert ("NodeClaim", "Disrupting NodeClaim: Unhealthy (Ready=False for longer than 30m)") in (
        _reasons(result, "DisruptionTerminating")
    )
    assert len(result.final.managed_nodes) == 5
    assert result.final.pods_running == 10
    assert len(result.nodeclaims) == 6
    assert result.failures == []


def test_without_the_gate_an_unhealthy_node_stays() -> None:
    result = _run(_scenario([_unhealthy(1), {"advance": "2h"}], gate=False))
    assert _repaired(result) == []
    assert len(result.nodeclaims) == 5


def test_a_node_that_recovers_within_its_toleration_is_kept() -> None:
    result = _run(_scenario([_unhealthy(1, **{"for": "20m"}), {"advance": "2h"}]))
    assert _repaired(result) == []
    assert len(result.nodeclaims) == 5


def test_the_node_monitoring_agents_accelerated_hardware_condition_is_tolerated_10_minutes() -> (
    None
):
    result = _run(
        _scenario([_unhealthy(1, condition="AcceleratedHardwareReady"), {"advance": "15m"}])
    )
    (repaired,) = _repaired(result)
    record = next(c for c in result.nodeclaims if c.name == repaired)
    assert record.deleted_at is not None
    assert record.deleted_at - _became_unhealthy_at(result) == pytest.approx(10 * 60, abs=1)


def test_a_condition_no_policy_names_is_ignored() -> None:
    result = _run(
        _scenario([_unhealthy(1, condition="MemoryPressure", status="True"), {"advance": "2h"}])
    )
    assert _repaired(result) == []


def test_more_than_20_percent_unhealthy_blocks_repair_of_the_whole_pool() -> None:
    """Two of five nodes unhealthy (one is allowed: 20% of 5, rounded up): none is
    repaired; the nodes, their NodeClaims and the NodePool say why."""
    result = _run(_scenario([_unhealthy(2), {"advance": "1h"}]))
    assert _repaired(result) == []
    blocked = _reasons(result, "NodeRepairBlocked")
    message = 'more than 20% of nodes in nodepool "default" are unhealthy'
    assert {kind for kind, _ in blocked} == {"Node", "NodeClaim", "NodePool"}
    assert {text for _, text in blocked} == {message}


def test_once_the_pool_is_healthy_enough_again_the_blocked_node_is_repaired() -> None:
    """Two nodes go unhealthy together and block each other; the first recovers after
    40 minutes, and the second, unhealthy beyond its toleration, is repaired at the next
    look (every 5 minutes while blocked)."""
    result = _run(
        _scenario(
            [
                _unhealthy(1, **{"for": "40m"}),  # the first node, for 40 minutes
                _unhealthy(2),  # the first (no change) and the second, for good
                {"advance": "50m"},
                {"settle": "10m"},
            ]
        )
    )
    (repaired,) = _repaired(result)
    record = next(c for c in result.nodeclaims if c.name == repaired)
    assert record.deleted_at is not None
    assert 40 * 60 <= record.deleted_at - _became_unhealthy_at(result) <= 45 * 60
    assert _reasons(result, "NodeRepairBlocked")
    assert len(result.final.managed_nodes) == 5
    assert result.final.pods_running == 10


def test_ready_unknown_is_tolerated_30_minutes_as_ready_false() -> None:
    """A node that stops reporting (Ready=Unknown) is repaired after the same 30 minutes."""
    result = _run(_scenario([_unhealthy(1, status="Unknown"), {"advance": "40m"}]))
    (repaired,) = _repaired(result)
    record = next(c for c in result.nodeclaims if c.name == repaired)
    assert record.deleted_at is not None
    assert record.deleted_at - _became_unhealthy_at(result) == pytest.approx(30 * 60, abs=1)


def test_the_only_node_of_a_pool_is_repaired() -> None:
    """20% of one node, rounded up, is one node: a one-node pool is never too unhealthy
    to repair (upstream rounds the threshold up the same way)."""
    result = _run(_scenario([_unhealthy(1), {"advance": "40m"}, {"settle": "10m"}], replicas=2))
    assert len(_repaired(result)) == 1
    assert _reasons(result, "NodeRepairBlocked") == []
    assert len(result.final.managed_nodes) == 1
    assert result.final.pods_running == 2
