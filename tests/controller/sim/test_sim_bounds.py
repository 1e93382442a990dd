"""Every simulation is bounded: pods asked for are capped when the scenario is read,
``spec.limits`` sets the wall time and steps, the engine stops a run that reaches a
bound naming the step (exit 3), reports its progress, and keeps a bounded event log."""

from __future__ import annotations

import copy
import io
import itertools
from typing import Any

import pytest
from joiner.clock import to_rfc3339
from joiner.commands import simulate
from joiner.sim.bounds import (
    DEFAULT_STEPS,
    DEFAULT_WALL_SECONDS,
    INSTANT_STEPS_BASE,
    INSTANT_STEPS_PER_POD,
    MAX_NODECLAIMS,
    BoundReached,
    Budget,
    Limits,
)
from joiner.sim.engine import Simulation
from joiner.sim.progress import Progress, ProgressBar
from joiner.sim.scenario import ScenarioError, load_scenario
from sim_builders import BASE_SCENARIO, to_text


def error_of(document: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(to_text(document))
    return str(caught.value)


def _deployment(doc: dict[str, Any], name: str, replicas: int) -> dict[str, Any]:
    app = copy.deepcopy(doc["spec"]["objects"][2])
    app["metadata"]["name"] = name
    app["spec"]["replicas"] = replicas
    return app


# --- pods asked for ----------------------------------------------------------------


def test_the_pods_of_all_workloads_together_are_capped(scenario_doc):
    objects = scenario_doc["spec"]["objects"]
    objects[2]["spec"]["replicas"] = 30_000
    objects.append(_deployment(scenario_doc, "other", 20_001))
    assert error_of(scenario_doc) == (
        "spec.objects: the workloads would ask for 50,001 pods at this point, more than the "
        "simulator's limit of 50,000"
    )


def test_the_cap_follows_scale_apply_and_delete_steps(scenario_doc):
    objects = scenario_doc["spec"]["objects"]
    objects.append(_deployment(scenario_doc, "other", 20_000))
    app = {"kind": "Deployment", "name": "app", "namespace": "default"}
    other = {"kind": "Deployment", "name": "other", "namespace": "default"}
    scenario_doc["spec"]["steps"] = [
        {"scale": {**app, "replicas": 30_000}},  # 50,000 in all: the limit itself
        {"delete": [other]},
        {"scale": {**app, "replicas": 50_000}},
        {"apply": [_deployment(scenario_doc, "other", 1)]},
    ]
    assert error_of(scenario_doc) == (
        "spec.steps[3].apply: the workloads would ask for 50,001 pods at this point, more "
        "than the simulator's limit of 50,000"
    )
    scenario_doc["spec"]["steps"].pop()
    assert load_scenario(to_text(scenario_doc)).steps[2].replicas == 50_000


def test_a_job_asks_for_its_parallelism_and_is_capped_like_replicas(scenario_doc):
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {
            "parallelism": 50_000,
            "completions": 100_000,
            "template": scenario_doc["spec"]["objects"][2]["spec"]["template"],
        },
    }
    scenario_doc["spec"]["objects"].append(job)
    assert error_of(scenario_doc) == (
        "spec.objects[3] (Job/batch): spec.completions: must be at most 50,000 (the "
        "simulator's limit on pods), got 100,000"
    )
    job["spec"]["completions"] = 50_000
    assert error_of(scenario_doc) == (
        "spec.objects: the workloads would ask for 50,001 pods at this point, more than the "
        "simulator's limit of 50,000"
    )


# --- node lifetimes ------------------------------------------------------------------


def test_expiry_no_longer_than_node_start_up_is_refused_wherever_a_pool_comes_from(
    scenario_doc,
):
    scenario_doc["spec"]["cloud"]["launchDelay"] = "20s"
    scenario_doc["spec"]["cloud"]["readyDelay"] = "5s"
    pool = copy.deepcopy(scenario_doc["spec"]["objects"][1])
    pool["spec"]["template"]["spec"]["expireAfter"] = "25s"
    scenario_doc["spec"]["steps"].insert(1, {"name": "shorter", "apply": [pool]})
    assert error_of(scenario_doc) == (
        "spec.steps[1] (shorter).apply[0] (NodePool/default): "
        "spec.template.spec.expireAfter: 25s is not longer than a node takes to start here "
        "(spec.cloud.launchDelay + readyDelay = 25s): every node would expire before it "
        "runs a pod, and be replaced for ever"
    )
    for fine in ("26s", "Never", "720h"):
        pool["spec"]["template"]["spec"]["expireAfter"] = fine
        load_scenario(to_text(scenario_doc))


# --- spec.limits ---------------------------------------------------------------------


def test_limits_default_and_can_be_set(scenario_doc):
    assert load_scenario(to_text(scenario_doc)).limits == Limits(
        DEFAULT_WALL_SECONDS, DEFAULT_STEPS
    )
    scenario_doc["spec"]["limits"] = {"wallTime": "90s", "steps": 1234}
    assert load_scenario(to_text(scenario_doc)).limits == Limits(90.0, 1234)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            {"wall": "1m"},
            "spec.limits: unknown field 'wall' (expected one of wallTime, steps)",
        ),
        (
            {"wallTime": "soon"},
            "spec.limits.wallTime: invalid duration 'soon' (expected e.g. 30s, 5m, 1h)",
        ),
        ({"wallTime": "25h"}, "spec.limits.wallTime: must be at most 24h, got '25h'"),
        ({"steps": 0}, "spec.limits.steps: expected an integer >= 1, got 0"),
        (
            {"steps": 2_000_000_000},
            "spec.limits.steps: must be at most 1000000000, got 2000000000",
        ),
        ([1], "spec.limits: expected a mapping, got a list"),
    ],
)
def test_bad_limits_name_the_field(scenario_doc, limits: Any, message: str):
    scenario_doc["spec"]["limits"] = limits
    assert error_of(scenario_doc) == message


# --- the budget ------------------------------------------------------------------------


def test_budget_counts_steps_and_names_the_bound_that_ran_out():
    budget = Budget(Limits(wall_seconds=60, steps=10), clock=lambda: 0.0)
    assert budget.charge(10, pods=0, nodeclaims=0) is None
    assert budget.charge(1, pods=0, nodeclaims=0) == (
        "the step budget (spec.limits.steps: 10) ran out"
    )


def test_budget_bounds_one_instant_by_the_pods_there_are():
    budget = Budget(Limits(), clock=lambda: 0.0)
    cap = INSTANT_STEPS_BASE + INSTANT_STEPS_PER_POD * 1_000
    assert budget.charge(cap, pods=1_000, nodeclaims=0) is None
    assert budget.charge(1, pods=1_000, nodeclaims=0) == (
        f"{cap + 1:,} steps without virtual time moving (at most {cap:,} with 1,000 pods): "
        "controllers keep undoing each other"
    )
    budget.new_instant()
    assert budget.charge(1, pods=1_000, nodeclaims=0) is None


def test_budget_bounds_nodeclaims_and_wall_time():
    now = [0.0]
    budget = Budget(Limits(wall_seconds=90), clock=lambda: now[0])
    assert budget.charge(1, pods=0, nodeclaims=MAX_NODECLAIMS) is None
    assert budget.charge(1, pods=0, nodeclaims=MAX_NODECLAIMS + 1) == (
        f"{MAX_NODECLAIMS + 1:,} NodeClaims exist at once, more than the {MAX_NODECLAIMS:,} cap"
    )
    now[0] = 90.5
    assert budget.charge(1, pods=0, nodeclaims=0) == (
        "the wall-time bound (spec.limits.wallTime: 1m30s) passed"
    )


def test_a_run_past_its_wall_time_stops_naming_the_step():
    doc = copy.deepcopy(BASE_SCENARIO)
    doc["spec"]["limits"] = {"wallTime": "30s"}
    simulation = Simulation(load_scenario(to_text(doc)))
    ticks = itertools.count(0.0, 1.0)  # every look at the wall clock: one second later
    simulation.budget = Budget(simulation.scenario.limits, clock=lambda: next(ticks))
    with pytest.raises(BoundReached) as caught:
        simulation.run()
    assert str(caught.value).startswith(
        "spec.steps[1] (wait): did not converge: the wall-time bound "
        "(spec.limits.wallTime: 30s) passed at t="
    )
    assert caught.value.exit_code == 3


# --- progress ------------------------------------------------------------------------


def test_progress_is_reported_to_the_end_of_the_run():
    seen: list[Progress] = []
    result = Simulation(load_scenario(to_text(BASE_SCENARIO)), progress=seen.append).run()
    last = seen[-1]
    assert last.virtual_seconds == result.final.time
    assert last.virtual_bound == 11 * 60  # settle 10m + advance 1m
    assert (last.pending_pods, last.where) == (0, "spec.steps[3]")
    assert last.steps > 0
    assert [p.steps for p in seen] == sorted(p.steps for p in seen)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_shows_virtual_time_steps_pending_pods_and_wall_time():
    terminal = _Terminal()
    with ProgressBar(terminal) as bar:
        bar(Progress(100.0, 600.0, 1234, 5, 2.4, "spec.steps[1] (scale {up})"))
        shown = terminal.getvalue().split("\r")[-1]
    assert shown.startswith("t=0:01:40/0:10:00 |")
    assert shown.rstrip().endswith("| 1,234 steps, 5 pending, 2s wall, spec.steps[1] (scale {up})")


@pytest.mark.parametrize(("output", "tty", "bar"), [("table", True, True), ("json", True, False)])
def test_a_bar_only_on_a_terminal_and_not_for_json(
    monkeypatch: pytest.MonkeyPatch, output: str, tty: bool, bar: bool
):
    monkeypatch.setattr("sys.stderr", _Terminal() if tty else io.StringIO())
    with simulate._progress_bar(output) as shown:
        assert isinstance(shown, ProgressBar) == bar


def test_no_bar_when_standard_error_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    with simulate._progress_bar("table") as shown:
        assert shown is None


# --- the event log ------------------------------------------------------------------


def _event(uid: str, reason: str, message: str, count: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "name": f"e-{uid}", "namespace": "default"},
        "involvedObject": {"kind": "NodeClaim", "name": "default-abc"},
        "reason": reason,
        "message": message,
        "count": count,
    }


def test_repeats_fold_into_one_record_with_a_count():
    simulation = Simulation(load_scenario(to_text(BASE_SCENARIO)))
    observer = simulation.observer
    observer.on_event("ADDED", _event("1", "DisruptionBlocked", "budget 0"))
    simulation.clock.advance(130)
    observer.on_event("MODIFIED", _event("1", "DisruptionBlocked", "budget 0", count=4))
    observer.on_event("MODIFIED", _event("1", "DisruptionBlocked", "budget 0", count=4))
    simulation.clock.advance(600)
    observer.on_event("ADDED", _event("2", "DisruptionBlocked", "budget 0"))  # after dedup
    observer.on_event("ADDED", _event("3", "DisruptionBlocked", "budget 1"))
    observer.on_event("DELETED", _event("1", "DisruptionBlocked", "budget 0", count=4))
    observer.on_event("ADDED", _event("4", "Evicted", "Evicted pod"))
    records = [(e.time, e.reason, e.message, e.count, e.last_time) for e in observer.events]
    assert records == [
        (0.0, "DisruptionBlocked", "budget 0", 5, 730.0),
        (730.0, "DisruptionBlocked", "budget 1", 1, None),
        (730.0, "Evicted", "Evicted pod", 1, None),
    ]
    assert observer.totals.evictions == 1
    simulation.close()


def test_events_expire_from_the_api_server_after_an_hour():
    doc = copy.deepcopy(BASE_SCENARIO)
    doc["spec"]["steps"] = [*doc["spec"]["steps"], {"advance": "2h"}]
    simulation = Simulation(load_scenario(to_text(doc)))
    result = simulation.run()
    stored = simulation.kube.list("Event").items
    hour_ago = to_rfc3339(simulation.clock.now() - 3600)
    assert stored and all(e["firstTimestamp"] >= hour_ago for e in stored)
    assert "Nominated" not in {e["reason"] for e in stored}  # in the first minute: gone
    nominated = [e for e in result.events if e.reason == "Nominated"]
    # but the run's log keeps them: each of the 5 pods to its NodeClaim, then to its Node
    assert len({e.name for e in nominated}) == 5 and max(e.time for e in nominated) < 60
    assert sorted(e.message.split(": ")[1].split("/")[0] for e in nominated) == [
        *["node"] * 5,
        *["nodeclaim"] * 5,
    ]
