"""A Capacity Block ends and its pods move in time [issue 22, item 3], on the shipped
example: the real operator in the simulator on the embedded AWS, which ends the block as
EC2 does (the interruption warning through EventBridge and SQS 40 minutes ahead, the
block's instances terminated 30 minutes ahead, the reservation expired at its end)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from joiner import testing
from joiner.api import labels as wk
from joiner.sim.engine import SIM_START, Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "capacity-block.yaml"
BLOCK = "cr-0c0ffee0b10c00001"
END = 2 * 3600.0  # the block's endsAfter
DRAIN = END - 40 * 60  # upstream's lead time: the block is expiring, its nodes drain
RECLAIM = END - 30 * 60  # EC2 terminates what is still in the block


def _run(document: dict[str, Any]) -> tuple[Simulation, SimulationResult, list[tuple]]:
    """The run, and each change of the block's entry in the class's status (time, state;
    None once the class no longer lists it)."""
    simulation = Simulation(load_scenario(yaml.safe_dump(document)))
    states: list[tuple[float, str | None]] = []

    def watch() -> None:
        nodeclass = simulation.operator.state.nodeclasses.get("gpu")
        entries = (nodeclass.status.get("capacityReservations") or []) if nodeclass else []
        state = next((e["state"] for e in entries if e["id"] == BLOCK), None)
        if not states or states[-1][1] != state:
            states.append((simulation.clock.now() - SIM_START, state))

    simulation.after_instant = watch
    return simulation, simulation.run(), states


def _events(result: SimulationResult, reason: str) -> list[tuple[float, str]]:
    return sorted((e.time, e.name) for e in result.events if e.reason == reason)


def test_a_capacity_block_ends_and_its_training_pods_move_before_ec2_reclaims_it() -> None:
    simulation, result, states = _run(yaml.safe_load(EXAMPLE.read_text()))
    assert result.failures == []
    # The class says expiring from the lead time on, and drops the block at its end.
    assert [(t, s) for t, s in states if s != "active"] == [(DRAIN, "expiring"), (END, None)]
    in_block = [c for c in result.nodeclaims if c.capacity_type == wk.CAPACITY_TYPE_RESERVED]
    moved = [c for c in result.nodeclaims if c.capacity_type == wk.CAPACITY_TYPE_ON_DEMAND]
    assert len(in_block) == 2 and len(moved) == 2
    # The drain starts at the lead time, exactly, for both nodes of the block.
    assert _events(result, "CapacityBlockExpiring") == [(DRAIN, c.name) for c in in_block]
    assert [t for t, _ in _events(result, "Evicted")] == [DRAIN, DRAIN]  # the two pods
    # The pods run elsewhere before EC2 takes the block back ...
    assert all(c.deleted_at is not None and c.deleted_at < RECLAIM for c in in_block)
    assert all(DRAIN < c.initialized_at < RECLAIM for c in moved)  # type: ignore[operator]
    assert result.final.pods_running == 2
    # ... so EC2 terminated nothing that still ran in it: no pod was killed by the end.
    reclaimed = [e for e in result.events if e.reason == "CapacityBlockReclaimed"]
    assert [(e.time, e.name, e.message) for e in reclaimed] == [
        (RECLAIM, BLOCK, "EC2 terminated 0 instance(s) still in the capacity block")
    ]
    # EC2's warning came through the queue for both instances, and was acted on.
    received = simulation.operator.metrics.registry.get_sample_value(
        "karpenter_interruption_received_messages_total",
        {"message_type": "capacity_reservation_interruption"},
    )
    assert received == 2


def test_pods_that_require_the_block_are_drained_and_nothing_launches_into_it_again() -> None:
    """A pool that allows only reserved capacity: at the lead time the nodes are drained
    all the same (EC2 would kill the pods 10 minutes later), and the pods wait, pending:
    the expiring block's offering is unavailable, so no NodeClaim is launched into it."""
    document = yaml.safe_load(EXAMPLE.read_text())
    pool = next(o for o in document["spec"]["objects"] if o["kind"] == "NodePool")
    pool["spec"]["template"]["spec"]["requirements"][0]["values"] = ["reserved"]
    document["spec"]["steps"] = [*document["spec"]["steps"][:3], {"advance": "50m"}]
    _, result, _ = _run(document)
    assert _events(result, "CapacityBlockExpiring")[0][0] == DRAIN
    assert len(result.final.pending_pods) == 2  # nothing but the expiring block allowed
    reclaimed = [e.message for e in result.events if e.reason == "CapacityBlockReclaimed"]
    assert reclaimed == ["EC2 terminated 0 instance(s) still in the capacity block"]


def test_a_drain_a_budget_holds_past_the_reclaim_loses_the_nodes_to_ec2() -> None:
    """A PodDisruptionBudget allowing no eviction holds the drain: 30 minutes before the
    end EC2 terminates both instances still in the block, with the pods on them."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["spec"]["objects"].append(testing.pod_disruption_budget("trainer"))
    document["spec"]["steps"] = [*document["spec"]["steps"][:3], {"advance": "15m"}]
    _, result, _ = _run(document)
    assert _events(result, "CapacityBlockExpiring")[0][0] == DRAIN
    assert _events(result, "Evicted") == []
    reclaimed = [e for e in result.events if e.reason == "CapacityBlockReclaimed"]
    assert [(e.time, e.message.split(":")[0]) for e in reclaimed] == [
        (RECLAIM, "EC2 terminated 2 instance(s) still in the capacity block")
    ]
