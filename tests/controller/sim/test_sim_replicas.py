"""The ``leader`` step: two controller replicas with the production leader election on
the virtual clock; the leader crashes or pauses mid-launch and mid-drain, the other
takes over once the Lease expires, and nothing is lost or done twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from joiner.api import labels as wk
from joiner.leader import LEASE_NAME
from joiner.sim.engine import Simulation
from joiner.sim.replicas import LEASE_NAMESPACE
from joiner.sim.scenario import LeaderStep, ScenarioError, load_scenario
from sim_builders import SCALE_UP, load_steps, to_text, with_steps

LEASE_DURATION = 15.0
REPLACEMENT = Path(__file__).parents[2] / "e2e" / "crash" / "leader-crash-mid-replacement.yaml"


def test_leader_options_load():
    assert load_steps(
        [
            {"leader": {}},
            {"leader": {"loss": "pause", "for": "1m", "at": "30s"}},
            {"leader": {"loss": "crash", "afterReconciles": 9}},
        ]
    ) == (
        LeaderStep(index=0),
        LeaderStep(index=1, loss="pause", pause_for=60.0, at=30.0),
        LeaderStep(index=2, after_reconciles=9),
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"loss": "hang"},
            "spec.steps[0].leader.loss: must be one of crash, pause, got 'hang'",
        ),
        ({"for": "1m"}, "spec.steps[0].leader.for: only a pause lasts a while (loss: pause)"),
        (
            {"loss": "pause", "at": "1m", "every": "2m"},
            "spec.steps[0].leader: give at most one of at, every, afterReconciles",
        ),
        (
            {"loss": "pause", "for": "0s"},
            "spec.steps[0].leader.for: must be longer than 0s",
        ),
    ],
)
def test_leader_errors_name_the_field(value: Any, message: str):
    with pytest.raises(ScenarioError) as caught:
        load_steps([{"leader": value}])
    assert str(caught.value) == message


def simulation(steps: list[dict[str, Any]]) -> Simulation:
    """Five 500m pods on 2-CPU nodes (three per node): two NodeClaims."""
    return Simulation(load_scenario(to_text(with_steps(steps))))


def lease_holder(sim: Simulation) -> str:
    return sim.kube.get("Lease", LEASE_NAME, LEASE_NAMESPACE)["spec"]["holderIdentity"]


def operator_events(result: Any) -> list[tuple[float, str]]:
    return [(e.time, e.reason) for e in result.events if e.kind == "Operator"]


@pytest.mark.parametrize("reconciles", range(1, 25, 2))
def test_a_leader_crash_anywhere_in_a_launch_loses_nothing(reconciles: int):
    steps = [{"leader": {"afterReconciles": reconciles}}, SCALE_UP, {"settle": "10m"}]
    sim = simulation(steps)
    result = sim.run()
    (crashed, _), (elected, reason) = operator_events(result)
    assert reason == "LeaderElected" and elected - crashed >= LEASE_DURATION
    assert lease_holder(sim) == "joiner-2"  # the follower, not the crashed one's successor
    assert len(result.nodeclaims) == 2  # as without the crash: none launched twice
    assert all(c.initialized_at and c.deleted_at is None for c in result.nodeclaims)
    assert result.final.pending_pods == [] and result.steps[-1].unsettled is None
    claimed = {c["status"]["providerID"] for c in sim.kube.list("NodeClaim").items}
    assert set(sim.cloud.provider.instances) == claimed  # nothing leaked


def test_a_paused_leader_acts_no_more_when_it_resumes():
    pause = {"leader": {"loss": "pause", "for": "40s", "afterReconciles": 3}}
    sim = simulation([pause, SCALE_UP, {"settle": "10m"}, {"advance": "2m"}])
    paused = sim.replicas.current
    at_pause: list[int] = []
    lose = sim.replicas.lose_leader

    def counting(step: LeaderStep) -> None:
        at_pause.append(paused.operator.manager.reconcile_count)
        lose(step)

    sim.replicas.lose_leader = counting  # type: ignore[method-assign]
    result = sim.run()
    assert [r for _, r in operator_events(result)] == ["LeaderPaused", "LeaderElected"]
    assert lease_holder(sim) == "joiner-2" and not paused.leads()
    assert paused in sim.replicas.live  # resumed, following
    assert [paused.operator.manager.reconcile_count] == at_pause  # nothing since
    assert len(result.nodeclaims) == 2 and result.final.pending_pods == []


@pytest.mark.parametrize("at", ["35s", "40s", "45s", "50s", "55s", "1m"])
@pytest.mark.parametrize("loss", ["crash", "pause"])
def test_a_leader_lost_mid_drain_leaves_no_taint_and_no_second_replacement(at: str, loss: str):
    document = yaml.safe_load(REPLACEMENT.read_text())
    document["spec"]["steps"][2]["leader"] = {"loss": loss, "at": at}
    sim = Simulation(load_scenario(to_text(document)))
    result = sim.run()
    assert [s.failures for s in result.steps if s.failures] == []
    assert [r for _, r in operator_events(result)][-1] == "LeaderElected"
    nodes = sim.kube.list("Node").items
    assert [n["metadata"]["labels"][wk.INSTANCE_TYPE] for n in nodes] == ["small"]
    taints = [t["key"] for n in nodes for t in (n["spec"].get("taints") or [])]
    assert wk.DISRUPTED_TAINT_KEY not in taints
    assert result.totals.nodeclaims_created == 2  # the big node and one replacement
