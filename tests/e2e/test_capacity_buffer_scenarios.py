"""CapacityBuffers end to end [joiner.buffers]: the real operator in the simulator, buffers
in the scenario, and what the API promises for buffer.x-k8s.io/active-capacity: the
buffer's capacity is provisioned and kept, real pods take precedence over it.

- held after scale-up and scale-down: the workload grows onto new nodes and shrinks back,
  and through both the buffer's chunks stay held (consolidation keeps their room);
- a burst within the buffer schedules at once: no NodeClaim is launched for it;
- a buffer follows a Deployment by percentage as it scales;
- a NodePool's limit caps a buffer, and its Provisioning condition says so;
- night at zero (Joiner-only time windows): a buffer of 20% during business hours in
  Paris and none at night and at weekends; the pool goes to zero nodes after hours and
  comes back with the buffer in the morning.
"""

from __future__ import annotations

from typing import Any

import yaml
from joiner import testing
from joiner.api.conditions import get_condition
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

TYPE = "std-4x16"  # 4 CPU: four 1-CPU pods a node
CONSOLIDATE = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"}


def _chunk_template(cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    chunk = testing.deployment("spare", 1, cpu=cpu, memory=memory)["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "spare", "namespace": "default"},
        "template": chunk,
    }


def _buffer(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "spare", "namespace": "default"},
        "spec": spec,
    }


def _scenario(
    objects: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    doc = testing.on_demand_pool_scenario(
        "headroom",
        [testing.scenario_instance_type(TYPE, "4", "16Gi", {"zone-a/on-demand": 0.2})],
        CONSOLIDATE,
        objects,
        steps,
        "",
    )
    if limits is not None:
        doc["spec"]["objects"][1]["spec"]["limits"] = limits
    return doc


def _run(doc: dict[str, Any]) -> tuple[Simulation, SimulationResult]:
    simulation = Simulation(load_scenario(yaml.safe_dump(doc)))
    return simulation, simulation.run()


def _condition(simulation: Simulation, type_: str) -> tuple[str, str, str]:
    status = simulation.kube.get("CapacityBuffer", "spare", "default").get("status") or {}
    found = get_condition(status.get("conditions"), type_)
    assert found is not None, status
    return found["status"], found["reason"], found["message"]


def _steps(result: SimulationResult) -> list[tuple[str, bool]]:
    return [(s.name, not s.failures) for s in result.steps if s.name]


def test_a_buffer_is_held_after_scale_up_and_scale_down() -> None:
    """Two 2-CPU chunks (a node's worth); the web Deployment of 1-CPU pods grows from 1 to
    6 pods and shrinks back to 1. Without the buffer that is 1, 2 and 1 node; with it 2, 3
    and 2: consolidation keeps the room the chunks hold."""
    workload = testing.deployment("web", 1, cpu="1", memory="1Gi")
    simulation, result = _run(
        _scenario(
            [
                workload,
                _chunk_template(cpu="2"),
                _buffer(podTemplateRef={"name": "spare"}, replicas=2),
            ],
            [
                {"advance": "2m"},
                {"name": "start", "expect": {"pendingPods": 0, "nodes": {"managed": 2}}},
                {"scale": {"kind": "Deployment", "name": "web", "replicas": 6}},
                {"advance": "5m"},
                {"name": "up", "expect": {"pendingPods": 0, "nodes": {"managed": 3}}},
                {"scale": {"kind": "Deployment", "name": "web", "replicas": 1}},
                {"advance": "30m"},
                {"name": "down", "expect": {"pendingPods": 0, "nodes": {"managed": 2}}},
            ],
        )
    )
    assert _steps(result) == [("start", True), ("up", True), ("down", True)]
    assert _condition(simulation, "Provisioning") == ("True", "CapacityHeld", "2 of 2 chunks held")
    assert simulation.operator.buffers.placement().unheld == ()


def test_a_burst_within_the_buffer_schedules_at_once() -> None:
    """Three 1-CPU chunks held on a node of their own; a burst of three 1-CPU pods lands on
    it at once (kube-scheduler binds them there, nothing waits for a launch); then the
    buffer is held again on a new node."""
    simulation, result = _run(
        _scenario(
            [
                testing.deployment("burst", 0, cpu="1", memory="1Gi"),
                _chunk_template(),
                _buffer(podTemplateRef={"name": "spare"}, replicas=3),
            ],
            [
                {"settle": "5m"},  # waits for the chunks' room
                {"name": "held", "expect": {"nodes": {"managed": 1}, "podsRunning": 0}},
                {"scale": {"kind": "Deployment", "name": "burst", "replicas": 3}},
                {"advance": "2s"},
                {"name": "at once", "expect": {"pendingPods": 0, "podsRunning": 3}},
                {"advance": "5m"},
                {"name": "again", "expect": {"nodes": {"managed": 2}}},
            ],
        )
    )
    assert _steps(result) == [("held", True), ("at once", True), ("again", True)]
    [held] = [s for s in result.steps if s.name == "held"]
    [at_once] = [s for s in result.steps if s.name == "at once"]
    [node] = [n for n in held.snapshot.nodes if n.managed]
    [same] = [n for n in at_once.snapshot.nodes if n.name == node.name]
    assert sorted(p.split("/")[1].split("-")[0] for p in same.pods) == ["burst"] * 3
    assert _condition(simulation, "Provisioning") == ("True", "CapacityHeld", "3 of 3 chunks held")


def test_a_buffer_follows_a_deployment_by_percentage() -> None:
    """50% of web, shaped like web's pods: 2 chunks of 4 pods, 4 of 8, 1 of 1."""

    def replicas(simulation: Simulation) -> int:
        status = simulation.kube.get("CapacityBuffer", "spare", "default")["status"]
        return int(status["replicas"])

    web = testing.deployment("web", 4, cpu="1", memory="1Gi")
    scalable = {"apiGroup": "apps", "kind": "Deployment", "name": "web"}
    seen: list[int] = []
    for count in (4, 8, 1):
        simulation, result = _run(
            _scenario(
                [web, _buffer(scalableRef=scalable, percentage=50)],
                [
                    {"settle": "5m"},
                    {"scale": {"kind": "Deployment", "name": "web", "replicas": count}},
                    {"advance": "1m"},
                    {"settle": "10m"},
                    {"name": "settled", "expect": {"pendingPods": 0}},
                ],
            )
        )
        assert _steps(result) == [("settled", True)]
        seen.append(replicas(simulation))
        held = _condition(simulation, "Provisioning")
        assert held == ("True", "CapacityHeld", f"{seen[-1]} of {seen[-1]} chunks held")
    assert seen == [2, 4, 1]


def test_a_limit_caps_a_buffer_and_its_condition_says_so() -> None:
    """The pool may have 4 CPU: one node, four 1-CPU chunks on it, the fifth not."""
    simulation, result = _run(
        _scenario(
            [_chunk_template(), _buffer(podTemplateRef={"name": "spare"}, replicas=5)],
            # settles: the chunk the limit leaves out does not wait
            [{"settle": "5m"}, {"name": "capped", "expect": {"nodes": {"managed": 1}}}],
            limits={"cpu": "4"},
        )
    )
    assert _steps(result) == [("capped", True)]
    assert result.unsettled == []
    status, reason, message = _condition(simulation, "Provisioning")
    assert (status, reason) == ("False", "PoolLimitReached")
    assert message == (
        "4 of 5 chunks held; all available instance types exceed limits for nodepool "
        "(NodePool=default), limits on cpu leave no room for a node, nodepool=default"
    )


# Mon-Fri 08:00-18:00 in Paris (UTC+1 in January: 07:00-17:00 UTC)
BUSINESS_HOURS = (
    "- {name: business-hours, schedule: '0 8 * * 1-5', timeZone: Europe/Paris,"
    " duration: 10h, percentage: 20}"
)


def test_night_at_zero_the_pool_follows_the_buffer_s_business_hours() -> None:
    """The simulation starts on Thursday 2026-01-01 at 00:00 UTC. web (1-CPU pods, four a
    node) is at zero at night; its buffer is 20% of web in business hours and nothing
    otherwise (spec replicas 0). At 08:00 Paris the buffer alone brings a node (20% of no
    pods is one chunk, at least 1); with web at 10 pods, 2 chunks: 3 nodes; web goes to
    zero at 17:30 Paris, the buffer's node stays until 18:00, then the pool is empty
    until Friday 08:00, and again from Friday 18:00 through Saturday (the pool's return
    on Monday is examples/night-at-zero.yaml's)."""
    buffer = _buffer(
        scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "web"}, replicas=0
    )
    buffer["metadata"]["annotations"] = {"joiner.sh/capacity-windows": BUSINESS_HOURS}

    def at(name: str, managed: int, **expect: int) -> dict[str, Any]:
        return {"name": name, "expect": {"nodes": {"managed": managed}, **expect}}

    steps = [
        {"advance": "6h59m"},
        at("Thu 07:59 Paris", 0),
        {"advance": "4m"},
        at("Thu 08:03 Paris: the buffer's node", 1, podsRunning=0),
        {"scale": {"kind": "Deployment", "name": "web", "replicas": 10}},
        {"advance": "5m"},
        at("Thu 08:08 Paris: 10 pods and 2 chunks", 3, podsRunning=10, pendingPods=0),
        {"advance": "9h22m"},
        {"scale": {"kind": "Deployment", "name": "web", "replicas": 0}},
        {"advance": "29m"},
        at("Thu 17:59 Paris: web at zero, the buffer's node kept", 1, podsRunning=0),
        {"advance": "11m"},
        at("Thu 18:10 Paris: the pool at zero", 0),
        {"advance": "13h53m"},
        at("Fri 08:03 Paris: back with the buffer", 1),
        {"advance": "10h7m"},
        at("Fri 18:10 Paris", 0),
        {"advance": "13h53m"},
        at("Sat 08:03 Paris: no window at weekends", 0),
    ]
    simulation, result = _run(
        _scenario([testing.deployment("web", 0, cpu="1", memory="1Gi"), buffer], steps)
    )
    assert _steps(result) == [(step["name"], True) for step in steps if "name" in step]
    assert _condition(simulation, "joiner.sh/TimeWindow") == (
        "False",
        "OutsideWindows",
        "outside every window: the spec's size until 2026-01-05T07:00:00Z",
    )
    assert _condition(simulation, "Provisioning") == ("True", "CapacityHeld", "0 of 0 chunks held")
