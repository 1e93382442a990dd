"""The crash-anywhere property suite's parts: generated workloads, the fault points of
a run, the invariants, and the scenario YAML that replays a failure with
`joiner simulate`. (A plain module, imported by test_sim_properties.py.)

A workload is a scenario on the fake cloud: one or two Deployments scaling up and
down, one NodePool with a disruption budget, maybe a CPU limit, a PDB, a drift. It runs
once without faults (the baseline), then once per fault point with one fault or
restart injected from the start: a restart right after the controller's k-th
reconcile, or its k-th API call or cloud call failing, so that every point of its work
can be hit in turn.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import yaml
from hypothesis import strategies as st
from joiner import testing
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import resources as res
from joiner.api.conditions import get_condition
from joiner.controllers.disruption.controller import PASS_INTERVAL, VALIDATION_DELAY
from joiner.controllers.garbagecollection import INTERVAL, ORPHAN_GRACE
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import scenario_from_document

# An instance no NodeClaim names goes within this (see GarbageCollection).
ORPHAN_WINDOW = INTERVAL + ORPHAN_GRACE
# A controller with nothing it can do (every offering without capacity) must not spin:
# its API calls per virtual minute stay under this.
MAX_CALLS_PER_MINUTE = 60
VOLUNTARY = ("Empty", "Underutilized", "Drifted")
LIVENESS = ("LaunchFailed", "LaunchTimeout", "RegistrationTimeout", "ReadyTimeout")
CPUS = {"small": 2, "large": 8}
FINAL_SETTLE = "30m"
SPOT_SHARE = 4  # about one workload in this many has a spot interruption
# The first spot node (by name) gets the two-minute warning, then EC2 reclaims it.
SPOT_INTERRUPTION = {
    "nodeSelector": {"karpenter.sh/capacity-type": "spot"},
    "count": 1,
    "kind": "spot-interruption",
}

CATALOGUE = [
    testing.scenario_instance_type(
        "small",
        "2",
        "4Gi",
        {"zone-a/spot": 0.03, "zone-a/on-demand": 0.08, "zone-b/on-demand": 0.08},
    ),
    testing.scenario_instance_type(
        "large", "8", "16Gi", {"zone-a/spot": 0.1, "zone-a/on-demand": 0.3, "zone-b/on-demand": 0.3}
    ),
]


# --- workloads ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    document: dict[str, Any]  # the scenario, without a fault
    cpu_limit: int | None
    budget: int

    def with_fault(self, fault: dict[str, Any] | None) -> dict[str, Any]:
        document = copy.deepcopy(self.document)
        if fault is not None:
            document["spec"]["steps"].insert(0, fault)
        return document

    def started_later(self, seconds: int) -> Workload:
        """The same workload, its first step ``seconds`` after the controller starts."""
        return replace(self, document=self.with_fault({"advance": f"{seconds}s"}))


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    apps = draw(st.integers(1, 2))
    cpus = [draw(st.sampled_from(["250m", "500m", "1", "1500m"])) for _ in range(apps)]
    stages = draw(
        st.lists(st.lists(st.integers(0, 10), min_size=apps, max_size=apps), min_size=1, max_size=3)
    )
    budget = draw(st.integers(1, 2))
    cpu_limit = draw(st.sampled_from([None, 8, 16]))
    disruption = {
        "consolidateAfter": draw(st.sampled_from(["0s", "30s", "Never"])),
        "budgets": [{"nodes": str(budget)}],
    }
    limits = {"cpu": str(cpu_limit)} if cpu_limit else None
    objects: list[dict[str, Any]] = [
        testing.ec2nodeclass(),
        testing.nodepool(disruption=disruption, limits=limits),
    ]
    for i, cpu in enumerate(cpus):
        objects.append(testing.deployment(f"app{i}", 0, cpu, "256Mi"))
    if draw(st.booleans()):
        objects.append(testing.pod_disruption_budget("app0", max_unavailable=1))
    steps: list[dict[str, Any]] = []
    # A spot interruption after one of the stages, in a share of the workloads (each
    # run of them pays for the embedded EventBridge and SQS).
    spot = draw(st.integers(1, SPOT_SHARE)) == 1
    interrupted = draw(st.integers(0, len(stages) - 1)) if spot else None
    for number, stage in enumerate(stages):
        for i, replicas in enumerate(stage):
            steps.append({"scale": {"kind": "Deployment", "name": f"app{i}", "replicas": replicas}})
        steps.append({"advance": draw(st.sampled_from(["20s", "45s", "90s", "3m"]))})
        if number == interrupted:
            steps += [{"interrupt": SPOT_INTERRUPTION}, {"advance": "1m"}]
    if draw(st.booleans()):  # drift: the pool's template changes, its nodes are replaced
        drifted = testing.nodepool(disruption=disruption, limits=limits, labels={"rev": "2"})
        steps += [{"apply": [drifted]}, {"advance": "2m"}]
    steps += [{"settle": FINAL_SETTLE}, {"advance": "3m"}, {"settle": FINAL_SETTLE}]
    document = testing.scenario("crash", CATALOGUE, objects, steps, zones=("zone-a", "zone-b"))
    return Workload(document, cpu_limit, budget)


# --- fault points ---------------------------------------------------------------------------

KUBE_ERRORS = ("409", "429", "500", "timeout")
LEADER_LOSSES = ("crash", "pause")


def fault_points(reconciles: int, kube_calls: int, cloud_calls: int, count: int) -> list[dict]:
    """``count`` fault steps spread over the baseline's work (fewer only when the run
    has fewer points than that): each kubelet and watch fault once, then restarts after
    the k-th reconcile (a quarter), the leader of two replicas crashing or pausing after
    the k-th reconcile (an eighth), the k-th cloud call failing (an eighth), and the
    k-th API call failing (the rest, each error in turn), k stepping evenly over the
    run."""
    points: list[dict] = [
        {"fault": {"kubelet": {"neverRegister": 1}}},
        {"fault": {"kubelet": {"neverReady": 1}}},
        {"fault": {"watch": {"kind": "Pod", "error": "410"}}},
        {"fault": {"watch": {"kind": "NodeClaim", "error": "drop"}}},
    ]
    points += [{"restart": {"afterReconciles": k}} for k in _spread(1, reconciles, count // 4)]
    points += [  # two replicas: the leader crashes or pauses, in turn
        {"leader": {"loss": LEADER_LOSSES[i % 2], "afterReconciles": k}}
        for i, k in enumerate(_spread(1, reconciles, count // 8))
    ]
    cloud_errors = ("throttled", "failed")
    points += [
        {"fault": {"cloud": {"error": cloud_errors[i % 2], "after": k}}}
        for i, k in enumerate(_spread(0, cloud_calls - 1, count // 8))
    ]
    points += [
        {"fault": {"kube": {"error": KUBE_ERRORS[i % len(KUBE_ERRORS)], "after": k}}}
        for i, k in enumerate(_spread(0, kube_calls - 1, count - len(points)))
    ]
    return points


def _spread(first: int, last: int, count: int) -> list[int]:
    """``count`` distinct integers from first to last, evenly apart (all when fewer)."""
    if last < first or count < 1:
        return []
    if count >= last - first + 1:
        return list(range(first, last + 1))
    step = (last - first) / max(1, count - 1)
    return sorted({first + round(i * step) for i in range(count)})


# --- running and checking ---------------------------------------------------------------------


@dataclass(frozen=True)
class ForgottenNomination:
    """A node nominated for pending pods when the controller restarted: the fresh one
    does not know it, as a restarted Karpenter does not (a StateNode's ``nominatedUntil``
    is in memory only). Times in seconds since the start of the run."""

    node: str
    restart: float
    until: float  # when the nomination would have run out


@dataclass
class Outcome:
    result: SimulationResult
    violations: list[str] = field(default_factory=list)
    reconciles: int = 0
    kube_calls: int = 0
    cloud_calls: int = 0
    forgotten: list[ForgottenNomination] = field(default_factory=list)


def run(
    workload: Workload, fault: dict[str, Any] | None, remember_nominations: bool = False
) -> Outcome:
    """``remember_nominations``: a restarted controller is handed the nominations of the
    one it replaces (a real one cannot be), to tell what forgetting them changed."""
    sim = Simulation(scenario_from_document(workload.with_fault(fault)))
    checker = Invariants(sim, workload)
    sim.after_instant = checker.at_instant
    cloud_calls = _count_cloud_calls(sim)
    forgotten = _list_forgotten_nominations(sim, remember_nominations)
    with _no_log_records():
        result = sim.run()
    checker.at_end()
    outcome = Outcome(
        result,
        checker.violations,
        sim.replicas.reconciles(),
        sim.faults.kube.calls,
        cloud_calls(),
        forgotten,
    )
    return outcome


@contextlib.contextmanager
def _no_log_records() -> Iterator[None]:
    """No log record is made while a run goes. The controller logs the faults injected
    into it, with their tracebacks, and pytest keeps every record of a test call until
    it ends; the property test is one call for all the runs of a leg (thousands), and the
    tracebacks kept their simulations alive: the process grew by gigabytes."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(before)


def _list_forgotten_nominations(sim: Simulation, remember: bool) -> list[ForgottenNomination]:
    """The nominations each restart of ``sim`` drops (filled as it runs); with
    ``remember``, the fresh controller gets them back, until they would have run out."""
    forgotten: list[ForgottenNomination] = []
    restart = sim.restart_operator

    def restarting() -> None:
        state, now, elapsed = sim.operator.state, sim.clock.now(), sim.observer.elapsed()
        held = {name: state.nominated_until(name) for name in {*state.nodeclaims, *state.nodes}}
        held = {name: until for name, until in held.items() if until > now}
        forgotten.extend(
            ForgottenNomination(name, elapsed, elapsed + until - now)
            for name, until in sorted(held.items())
        )
        restart()
        if remember:  # the state has no setter for this: no real controller restores it
            sim.operator.state._node_nominated_until.update(held)

    sim.restart_operator = restarting  # type: ignore[method-assign]
    return forgotten


def _count_cloud_calls(sim: Simulation):
    calls = [0]
    take = sim.faults.cloud.faults.take

    def counting(call: str, kind: str | None = None) -> str | None:
        calls[0] += 1
        return take(call, kind)

    sim.faults.cloud.faults.take = counting  # type: ignore[method-assign]
    return lambda: calls[0]


class Invariants:
    """The invariants checked at every virtual instant of a run."""

    def __init__(self, sim: Simulation, workload: Workload) -> None:
        self.sim, self.workload = sim, workload
        self.violations: list[str] = []
        self._unclaimed_since: dict[str, float] = {}

    def _fail(self, what: str) -> None:
        if len(self.violations) < 5:
            self.violations.append(f"t={self.sim.observer.elapsed():.1f}s: {what}")

    def at_instant(self) -> None:
        now = self.sim.clock.now()
        claims = self.sim.kube.list("NodeClaim").items
        self._orphans(now, claims)
        self._limits(claims)
        self._budgets(claims)
        pod_deletes = self.sim.faults.kube.counts[("delete", "Pod")]
        if pod_deletes:
            self._fail(f"the controller deleted {pod_deletes} pods (not by eviction)")

    def at_end(self) -> None:
        """No disruption left half done: a node not being deleted carries no disruption
        taint (a command a restart or a leader change interrupted was resumed or undone)."""
        tainted = [
            node["metadata"]["name"]
            for node in self.sim.kube.list("Node").items
            if not node["metadata"].get("deletionTimestamp")
            and any(
                t.get("key") == wk.DISRUPTED_TAINT_KEY
                for t in (node.get("spec") or {}).get("taints") or ()
            )
        ]
        if tainted:
            self._fail(f"nodes left with the disruption taint: {tainted}")

    def _orphans(self, now: float, claims: list[dict[str, Any]]) -> None:
        claimed = {(c.get("status") or {}).get("providerID") for c in claims}
        unclaimed = [p for p in self.sim.cloud.provider.instances if p not in claimed]
        self._unclaimed_since = {p: self._unclaimed_since.get(p, now) for p in unclaimed}
        for provider_id, since in self._unclaimed_since.items():
            if now - since > ORPHAN_WINDOW:
                self._fail(f"instance {provider_id} without a NodeClaim for {now - since:.0f}s")

    def _limits(self, claims: list[dict[str, Any]]) -> None:
        limit = self.workload.cpu_limit
        if limit is None:
            return
        cpu = sum(
            res.parse_resource_list((c.get("status") or {}).get("capacity")).get(res.CPU, 0)
            for c in claims
        )
        if cpu > limit * 1000:
            self._fail(f"NodePool over its CPU limit: {cpu / 1000:g} > {limit}")

    def _budgets(self, claims: list[dict[str, Any]]) -> None:
        disrupting = [
            c["metadata"]["name"]
            for c in claims
            if (
                reason := get_condition(
                    (c.get("status") or {}).get("conditions"), nc.DISRUPTION_REASON
                )
            )
            and reason.get("reason") in VOLUNTARY
        ]
        if len(disrupting) > self.workload.budget:
            self._fail(
                f"{len(disrupting)} nodes disrupted at once, budget "
                f"{self.workload.budget}: {disrupting}"
            )


def compare(baseline: Outcome, faulted: Outcome) -> list[str]:
    """What the faulted run must share with the baseline at the end."""
    problems = list(faulted.violations)
    base, got = baseline.result, faulted.result
    if got.unsettled and not base.unsettled:  # a pool limit can keep pods pending in both
        problems += [f"not settled: {u}" for u in got.unsettled]
    # Every pod that could run runs: when a pool limit keeps pods pending, which of them
    # run depends on the order they came in, so only the limit may keep them pending.
    stuck = [
        p for p in got.final.pending_pods if not (base.final.pending_pods and "limit" in p.reason)
    ]
    if stuck:
        problems.append(
            f"pods pending at the end: {len(got.final.pending_pods)}, without the fault "
            f"{len(base.final.pending_pods)}: {[(p.name, p.reason) for p in stuck][:2]}"
        )
    given_up = _given_up(faulted)
    if _too_many_nodeclaims(baseline, faulted):
        problems.append(
            f"{got.totals.nodeclaims_created} NodeClaims created, without the fault "
            f"{base.totals.nodeclaims_created} (+{given_up} that failed to start)"
        )
    return problems


def _given_up(outcome: Outcome) -> int:
    """NodeClaims the run gave up on (they never started): each may be launched again."""
    return sum(1 for e in outcome.result.events if e.kind == "NodeClaim" and e.reason in LIVENESS)


def _allowed_nodeclaims(baseline: Outcome, faulted: Outcome) -> int:
    return baseline.result.totals.nodeclaims_created + _given_up(faulted)


def _too_many_nodeclaims(baseline: Outcome, faulted: Outcome) -> bool:
    return faulted.result.totals.nodeclaims_created > _allowed_nodeclaims(baseline, faulted)


def same_count_later(workload: Workload, created: int) -> int | None:
    """The first whole-second delay of the workload with which a run without a fault
    creates ``created`` NodeClaims or more (None if none does). A restart re-phases the
    controller's periodic passes (the disruption pass comes every 10 s); such a delay
    does the same without a restart. It tells where an extra NodeClaim comes from, not
    whether it is right: a phase can expose a bug (drift-during-a-drain.yaml) as well as
    a valid outcome (docs/operations.md, findings 2037-15 and 2038-28)."""
    for seconds in range(1, int(PASS_INTERVAL)):
        if run(workload.started_later(seconds), None).result.totals.nodeclaims_created >= created:
            return seconds
    return None


def explained_by_phase(
    workload: Workload, baseline: Outcome, faulted: Outcome, problems: list[str]
) -> int | None:
    """When the NodeClaim count is the only problem: the delay (s) with which a run
    without any fault creates as many (see ``same_count_later``), else None. Such a pair
    is held: a double launch after a restart makes more NodeClaims than the controller
    makes without a fault at any phase of its passes; the pair is still listed, for its
    decisions to be read (docs/operations.md)."""
    if len(problems) != 1 or not _too_many_nodeclaims(baseline, faulted):
        return None
    return same_count_later(workload, faulted.result.totals.nodeclaims_created)


def explained_by_forgotten_nomination(
    workload: Workload,
    fault: dict[str, Any],
    baseline: Outcome,
    faulted: Outcome,
    problems: list[str],
) -> str | None:
    """Finding 2040's class, a valid Karpenter outcome (docs/operations.md): a restart
    forgot a node's nomination, and the fresh controller disrupted that node while the
    nomination would still have kept it: what it says happened, else None. Held only when
    all of it is so: the fault is a restart; the NodeClaim count is the only problem and
    one over; the run's own events show the disruption of a node nominated at the
    restart, decided before the nomination would have run out; and the same run, the
    fresh controller handed those nominations, passes every check (so forgetting them
    made the extra NodeClaim, nothing else the restart did)."""
    one_over = _allowed_nodeclaims(baseline, faulted) + 1
    if "restart" not in fault or len(problems) != 1:
        return None
    if faulted.result.totals.nodeclaims_created != one_over:
        return None
    disrupted = _disrupted_while_nominated(faulted)
    if not disrupted:
        return None
    if compare(baseline, run(workload, fault, remember_nominations=True)):
        return None
    return "; ".join(disrupted)


def _disrupted_while_nominated(outcome: Outcome) -> list[str]:
    """The disruptions of nodes whose nomination a restart forgot, decided (their
    command validated ``VALIDATION_DELAY`` before it is carried out, at most) after the
    restart and before the nomination would have run out."""
    return [
        f"{event.name}, nominated until {forgotten.until:.0f}s, forgotten by the restart "
        f"at {forgotten.restart:.0f}s: {event.message} at {event.time:.0f}s"
        for forgotten in outcome.forgotten
        for event in outcome.result.events
        if event.kind == "NodeClaim"
        and event.reason == "DisruptionTerminating"
        and event.name == forgotten.node
        and forgotten.restart <= event.time < forgotten.until + VALIDATION_DELAY
    ]


def phase_note(workload: Workload, faulted: Outcome, baseline: Outcome) -> str:
    """For a failure on the NodeClaim count: whether a run without the fault at another
    phase creates as many (see ``same_count_later``)."""
    if not _too_many_nodeclaims(baseline, faulted):
        return ""
    seconds = same_count_later(workload, faulted.result.totals.nodeclaims_created)
    if seconds is None:
        return "\n\nNo run without the fault, started 1-9 s later, creates as many NodeClaims."
    return (
        f"\n\nA run without the fault, the workload {seconds} s later, creates as many "
        "NodeClaims: the restart's phase, not a lost write, gives them; judge its decisions "
        "(docs/operations.md, findings 2037-15 and 2038-28)."
    )


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # every object written out in full: the file is read by people


def repro(workload: Workload, fault: dict[str, Any] | None) -> str:
    return yaml.dump(workload.with_fault(fault), Dumper=_PlainDumper, sort_keys=False)


def iter_points(baseline: Outcome, count: int) -> Iterator[dict[str, Any]]:
    yield from fault_points(baseline.reconciles, baseline.kube_calls, baseline.cloud_calls, count)
