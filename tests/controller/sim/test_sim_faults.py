"""The ``fault`` step: its fields and their errors, each kind of fault doing what it
says to the controller, and the controller getting over it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from joiner.clock import FakeClock
from joiner.kube.api import InternalError, Timeout
from joiner.kube.memory import MemoryKube
from joiner.sim.engine import Simulation
from joiner.sim.faults import CallFaults, FaultyKube
from joiner.sim.scenario import (
    CallFault,
    CapacityKey,
    FaultStep,
    ScenarioError,
    load_scenario,
)
from sim_builders import SCALE_UP, load_steps, to_text, with_steps


def error_of(fault: Any) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_steps([{"fault": fault}])
    return str(caught.value)


def run(steps: list[dict[str, Any]], seed: int = 0) -> tuple[Simulation, Any]:
    sim = Simulation(load_scenario(to_text(with_steps(steps))), seed=seed)
    return sim, sim.run()


# --- loading -----------------------------------------------------------------------------


def test_fault_kinds_load():
    steps = load_steps(
        [
            {"fault": {"kube": {"error": 409, "calls": ["update"], "kinds": ["Node"]}}},
            {"fault": {"kube": {"error": "timeout", "after": 2, "times": 3}}},
            {"fault": {"kube": {"error": "429", "rate": 0.25}}},
            {"fault": {"watch": {"kind": "Pod", "error": "410"}}},
            {"fault": {"cloud": {"error": "failed", "calls": ["delete"]}}},
            {"fault": {"insufficientCapacity": [{"instanceType": "small", "zone": "zone-a"}]}},
            {"fault": {"kubelet": {"neverRegister": 2}}},
            {"fault": {"kubelet": {"neverReady": 1}}},
        ]
    )
    assert steps == (
        FaultStep(index=0, kube=CallFault("409", frozenset({"update"}), frozenset({"Node"}))),
        FaultStep(index=1, kube=CallFault("timeout", after=2, times=3)),
        FaultStep(index=2, kube=CallFault("429", rate=0.25)),
        FaultStep(index=3, watch=("Pod", "410")),
        FaultStep(index=4, cloud=CallFault("failed", frozenset({"delete"}))),
        FaultStep(index=5, insufficient_capacity=(CapacityKey("small", "zone-a", None),)),
        FaultStep(index=6, never_register=2),
        FaultStep(index=7, never_ready=1),
    )


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (
            {},
            "spec.steps[0].fault: give exactly one of kube, watch, cloud, "
            "insufficientCapacity, kubelet",
        ),
        (
            {"kube": {"error": 418}},
            "spec.steps[0].fault.kube.error: must be one of 409, 429, 500, timeout, got '418'",
        ),
        (
            {"kube": {"error": 500, "calls": ["put"]}},
            "spec.steps[0].fault.kube.calls[0]: must be one of get, list, create, update, "
            "updateStatus, patch, delete, evict, got 'put'",
        ),
        (
            {"kube": {"error": 500, "rate": 0}},
            "spec.steps[0].fault.kube.rate: expected a probability, more than 0 and at most "
            "1, got 0",
        ),
        (
            {"kube": {"error": 500, "rate": 0.5, "times": 2}},
            "spec.steps[0].fault.kube: rate goes without after and times",
        ),
        (
            {"kube": {"error": 500, "times": 0}},
            "spec.steps[0].fault.kube.times: expected an integer >= 1, got 0",
        ),
        (
            {"cloud": {"error": "failed", "kinds": ["Node"]}},
            "spec.steps[0].fault.cloud: unknown field 'kinds' (expected one of error, calls, "
            "after, times, rate)",
        ),
        (
            {"cloud": {"error": "slow"}},
            "spec.steps[0].fault.cloud.error: must be one of throttled, failed, got 'slow'",
        ),
        (
            {"watch": {"kind": "Deployment", "error": "drop"}},
            "spec.steps[0].fault.watch.kind: must be one of Node, NodeClaim, Pod, NodePool, "
            "EC2NodeClass, DaemonSet, PodDisruptionBudget, PersistentVolumeClaim, "
            "PersistentVolume, StorageClass, CSINode, NodeOverlay, CapacityBuffer",
        ),
        (
            {"watch": {"kind": "Pod", "error": "reset"}},
            "spec.steps[0].fault.watch.error: must be one of drop, 410, got 'reset'",
        ),
        (
            {"insufficientCapacity": [{"instanceType": "huge"}]},
            "spec.steps[0].fault.insufficientCapacity[0].instanceType: 'huge' is not in "
            "spec.cloud.instanceTypes",
        ),
        (
            {"kubelet": {"neverRegister": 0}},
            "spec.steps[0].fault.kubelet.neverRegister: expected an integer >= 1, got 0",
        ),
        (
            {"kubelet": {"neverRegister": 1, "neverReady": 1}},
            "spec.steps[0].fault.kubelet: give exactly one of neverRegister, neverReady",
        ),
    ],
)
def test_fault_errors_name_the_field(fault: Any, message: str):
    assert error_of(fault) == message


# --- the faulty ports --------------------------------------------------------------------


def test_call_faults_let_through_then_fail_in_a_row():
    faults = CallFaults(rng=None)  # type: ignore[arg-type]  # no rate: never drawn
    faults.arm(CallFault("500", frozenset({"update"}), frozenset({"Node"}), after=1, times=2))
    outcomes = [
        faults.take(call, kind)
        for call, kind in [
            ("update", "Pod"),
            ("update", "Node"),
            ("get", "Node"),
            ("update", "Node"),
            ("update", "Node"),
            ("update", "Node"),
        ]
    ]
    assert outcomes == [None, None, None, "500", "500", None]


def test_a_timed_out_write_was_applied_and_a_500_was_not():
    kube = MemoryKube(FakeClock(0))
    faulty = FaultyKube(kube, random.Random(0))
    faulty.faults.arm(CallFault("timeout"))
    faulty.faults.arm(CallFault("500", after=1))
    with pytest.raises(Timeout):
        faulty.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})
    assert kube.get("Namespace", "a")["metadata"]["name"] == "a"
    with pytest.raises(InternalError):  # the 500 fault let the first call (above) through
        faulty.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}})
    assert "b" not in [n["metadata"]["name"] for n in kube.list("Namespace").items]
    assert faulty.calls == 2


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


@pytest.mark.parametrize("error", ["drop", "410"])
def test_a_broken_watch_catches_up_with_what_it_missed(error: str):
    kube = MemoryKube(FakeClock(0))
    faulty = FaultyKube(kube, random.Random(0))
    watch = faulty.watch("Node")

    def drained() -> list[tuple[str, str]]:
        return [(e.type, e.object["metadata"]["name"]) for e in watch.drain()]

    kube.create(node("a"))
    assert drained() == [("ADDED", "a")]
    kube.create(node("b"))
    faulty.break_watches("Node", error)  # b's event is lost with the connection
    kube.delete("Node", "a")
    if error == "drop":  # watched again from where it was: every change, in order
        assert drained() == [("ADDED", "b"), ("DELETED", "a")]
    else:  # listed again: the differences with what it had delivered
        assert drained() == [("DELETED", "a"), ("ADDED", "b")]
    kube.create(node("c"))
    assert drained() == [("ADDED", "c")]


# --- the controller gets over them ------------------------------------------------------------


def test_a_failed_nodeclaim_creation_is_retried_and_nothing_doubles():
    _, baseline = run([SCALE_UP, {"settle": "10m"}])
    sim, result = run(
        [
            {"fault": {"kube": {"error": 500, "calls": ["create"], "kinds": ["NodeClaim"]}}},
            SCALE_UP,
            {"settle": "10m"},
        ]
    )
    assert result.unsettled == [] and result.final.pending_pods == []
    assert len(result.nodeclaims) == len(baseline.nodeclaims) == 2
    assert sim.observer.unclaimed_instances() == []


def test_a_throttled_launch_is_retried():
    sim, result = run(
        [
            {"fault": {"cloud": {"error": "throttled", "calls": ["create"], "times": 2}}},
            SCALE_UP,
            {"settle": "10m"},
        ]
    )
    failed = [e.message for e in result.events if e.reason == "LaunchFailed"]
    assert failed == ["create: RequestLimitExceeded: Request limit exceeded (injected fault)"] * 2
    assert result.final.pending_pods == [] and len(result.nodeclaims) == 2
    assert len(sim.cloud.provider.instances) == 2


def test_a_terminate_that_fails_once_is_retried_and_the_instance_goes():
    sim, result = run(
        [
            SCALE_UP,
            {"settle": "10m"},
            {"fault": {"cloud": {"error": "failed", "calls": ["delete"]}}},
            {"scale": {"kind": "Deployment", "name": "app", "replicas": 0}},
            {"settle": "10m"},
            {"advance": "3m"},
        ]
    )
    assert result.unsettled == []
    assert [c.deleted_at is not None for c in result.nodeclaims] == [True, True]
    assert sim.cloud.provider.instances == {}


def test_insufficient_capacity_at_launch_falls_to_the_next_offering():
    sim, result = run(
        [
            {"fault": {"insufficientCapacity": [{"instanceType": "small", "zone": "zone-a"}]}},
            SCALE_UP,
            {"settle": "10m"},
        ]
    )
    assert result.final.pending_pods == []
    assert {(n.zone, n.capacity_type) for n in result.final.nodes} == {("zone-b", "on-demand")}
    assert ("small", "zone-a", "spot") in sim.cloud.provider.insufficient_capacity


def test_an_instance_that_never_registers_is_replaced_after_15_minutes():
    _, result = run([{"fault": {"kubelet": {"neverRegister": 1}}}, SCALE_UP, {"settle": "30m"}])
    timeouts = [e for e in result.events if e.reason == "RegistrationTimeout"]
    assert len(timeouts) == 1
    assert result.final.pending_pods == [] and len(result.final.nodes) == 2
    assert len(result.nodeclaims) == 3


def test_a_seeded_rate_replays():
    steps = [{"fault": {"kube": {"error": 500, "rate": 0.2}}}, SCALE_UP, {"settle": "20m"}]
    first, again, other = (run(steps, seed)[1] for seed in (7, 7, 8))
    assert first.to_dict() == again.to_dict()
    assert first.to_dict() != other.to_dict()
    assert first.final.pending_pods == []
