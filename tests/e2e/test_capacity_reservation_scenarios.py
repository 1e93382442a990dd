"""Capacity reservations end to end [issue 22]: the real operator in the simulator on the
embedded AWS (moto, with Joiner's emulation of reservations), the scenario declaring the
account's reservations. A reservation is filled before on-demand is used; when EC2 says
the reservation is full (other instances took it after the class resolved), the launch
fails as insufficient capacity and the pods land on on-demand; a reservation removed from
the class drifts its nodes, which are replaced on-demand."""

from __future__ import annotations

from typing import Any

import yaml
from joiner import testing
from joiner.api import labels as wk
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

CLUSTER = "odcr"
RESERVATION = "cr-0a1b2c3d4e5f60718"
ZONE = "us-east-1a"


def _nodeclass(terms: list[dict[str, Any]]) -> dict[str, Any]:
    nodeclass = testing.ec2nodeclass(cluster=CLUSTER, role="KarpenterNodeRole")
    if terms:
        nodeclass["spec"]["capacityReservationSelectorTerms"] = terms
    return nodeclass


def _scenario(
    steps: list[dict[str, Any]],
    count: int = 2,
    types: tuple[str, ...] = ("m5.large",),
    cpu: str = "1500m",
    disruption: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One m5.large reservation; a pool allowing reserved and on-demand ``types`` (by
    default m5.large) in its zone; a Deployment of ``cpu`` pods (by default one per
    node), scaled by ``steps``."""
    requirements = [
        testing.capacity_types("reserved", "on-demand"),
        {"key": wk.INSTANCE_TYPE, "operator": "In", "values": list(types)},
        {"key": wk.ZONE, "operator": "In", "values": [ZONE]},
    ]
    return {
        "apiVersion": "joiner.sim/v1",
        "kind": "Scenario",
        "metadata": {"name": "reservations"},
        "spec": {
            "cluster": {"name": CLUSTER, "region": "us-east-1", "zones": [ZONE, "us-east-1b"]},
            "cloud": {
                "provider": "aws",
                "enforceIAM": True,
                "capacityReservations": [
                    {
                        "id": RESERVATION,
                        "instanceType": "m5.large",
                        "zone": ZONE,
                        "count": count,
                        "tags": {"team": "web"},
                    }
                ],
            },
            "objects": [
                _nodeclass([{"tags": {"team": "web"}}]),
                testing.nodepool(requirements=requirements, disruption=disruption),
                testing.deployment("web", replicas=0, cpu=cpu, memory="1Gi"),
            ],
            "steps": steps,
        },
    }


def _run(doc: dict[str, Any]) -> tuple[Simulation, SimulationResult]:
    simulation = Simulation(load_scenario(yaml.safe_dump(doc)))
    return simulation, simulation.run()


def _scale(replicas: int) -> dict[str, Any]:
    return {"scale": {"kind": "Deployment", "name": "web", "replicas": replicas}}


def _live_by_capacity(simulation: Simulation) -> dict[str, list[str | None]]:
    """The live NodeClaims' reservation ids, by capacity type."""
    found: dict[str, list[str | None]] = {}
    for claim in simulation.kube.list("NodeClaim").items:
        labels = claim["metadata"].get("labels") or {}
        found.setdefault(labels[wk.CAPACITY_TYPE], []).append(
            labels.get(wk.CAPACITY_RESERVATION_ID)
        )
    return found


def test_the_reservation_is_filled_before_on_demand_is_used() -> None:
    steps = [
        _scale(3),
        {"settle": "5m"},
        {"expect": {"pendingPods": 0, "nodesByCapacityType": {"reserved": 2, "on-demand": 1}}},
    ]
    simulation, result = _run(_scenario(steps))
    assert [f for s in result.steps for f in s.failures] == []
    assert _live_by_capacity(simulation) == {"reserved": [RESERVATION] * 2, "on-demand": [None]}
    nodeclass = simulation.kube.get("EC2NodeClass", "default")
    assert [r["id"] for r in nodeclass["status"]["capacityReservations"]] == [RESERVATION]
    assert simulation.cloud.iam_denials() == []


def test_a_reservation_others_filled_falls_back_to_on_demand() -> None:
    """The class resolved two free slots; then instances outside the cluster take them.
    The first launch into the reservation is refused (ReservationCapacityExceeded), and the
    pods run on on-demand nodes instead, none left pending."""
    full = {"instanceType": "m5.large", "zone": ZONE, "capacityType": "reserved"}
    steps = [
        {"settle": "1m"},
        {"capacity": {"unavailable": [full]}},
        _scale(2),
        {"settle": "5m"},
        {"expect": {"pendingPods": 0, "nodesByCapacityType": {"on-demand": 2}}},
    ]
    simulation, result = _run(_scenario(steps))
    assert [f for s in result.steps for f in s.failures] == []
    assert _live_by_capacity(simulation) == {"on-demand": [None, None]}
    never_launched = [c for c in result.nodeclaims if c.launched_at is None]
    assert len(never_launched) >= 1  # the launch EC2 refused
    assert simulation.cloud.provider.reservations.available(RESERVATION) == 0


def test_a_reservation_removed_from_the_class_drifts_its_nodes() -> None:
    steps = [
        _scale(2),
        {"settle": "5m"},
        {"expect": {"nodesByCapacityType": {"reserved": 2}}},
        {"apply": [_nodeclass([])]},
        {"advance": "20m"},  # settle would end at once: drift is not pending work
        {"settle": "10m"},
        {"expect": {"pendingPods": 0, "nodesByCapacityType": {"on-demand": 2}}},
    ]
    simulation, result = _run(_scenario(steps))
    assert [f for s in result.steps for f in s.failures] == []
    drifted = [c for c in result.nodeclaims if c.disruption_reason == "Drifted"]
    assert [c.capacity_type for c in drifted] == ["reserved", "reserved"]
    assert _live_by_capacity(simulation) == {"on-demand": [None, None]}


def test_consolidation_keeps_a_reserved_node_over_a_cheaper_on_demand_type() -> None:
    """A t3.medium on-demand costs less than an m5.large on-demand, not less than the
    m5.large in the reservation: the reserved node is never replaced."""
    disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"}
    steps = [
        _scale(1),
        {"settle": "5m"},
        {"expect": {"nodesByCapacityType": {"reserved": 1}}},
        {"advance": "30m"},
        {"expect": {"pendingPods": 0, "nodesByCapacityType": {"reserved": 1}}},
    ]
    doc = _scenario(
        steps, count=1, types=("m5.large", "t3.medium"), cpu="500m", disruption=disruption
    )
    simulation, result = _run(doc)
    assert [f for s in result.steps for f in s.failures] == []
    assert [(c.instance_type, c.capacity_type, c.deleted_at) for c in result.nodeclaims] == [
        ("m5.large", "reserved", None)
    ]
    assert _live_by_capacity(simulation) == {"reserved": [RESERVATION]}
