"""The simulator: the real operator, an emulated cluster around it, virtual time.

Everything happens in one thread. At each virtual instant the loop pumps watch
events and runs every reconcile that is due (controller and emulators alike)
until nothing more happens; then it jumps the clock to the next instant anything
is due. Cost and pending time are integrated over each jump.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from joiner import identity
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.conditions import TRUE, set_condition
from joiner.api.duration import format_duration
from joiner.api.validation import validate_object
from joiner.clock import FakeClock
from joiner.controllers.interruption import controller as interruption
from joiner.controllers.runtime import DONE, Manager, Result
from joiner.kube.api import ApiError, Invalid, NotFound
from joiner.kube.memory import MemoryKube
from joiner.leader import LeaderFence
from joiner.operator import Operator, OperatorOptions
from joiner.settings import Settings, SettingsError
from joiner.sim import kubescheduler
from joiner.sim.bounds import BoundReached, Budget
from joiner.sim.cloud import SimCloud, build_cloud
from joiner.sim.faults import Faults
from joiner.sim.heap import full_collections_spaced
from joiner.sim.interruption import Interruptions
from joiner.sim.kubelet import Kubelet
from joiner.sim.kubescheduler import KubeScheduler
from joiner.sim.observe import Observer
from joiner.sim.podindex import PodIndex
from joiner.sim.progress import REPORT_INTERVAL, Progress, Reporter
from joiner.sim.replicas import Replica, Replicas
from joiner.sim.restart import Restarts
from joiner.sim.result import SimulationResult, StepRecord
from joiner.sim.scenario import (
    AdvanceStep,
    ApplyStep,
    CapacityStep,
    DeleteStep,
    ExpectStep,
    FaultStep,
    InterruptStep,
    LeaderStep,
    RestartStep,
    ScaleStep,
    Scenario,
    ScenarioError,
    SettleStep,
    Step,
    UnhealthyStep,
    evaluate_expect,
)
from joiner.sim.targets import target_nodes
from joiner.sim.workloads import Workloads, is_active
from joiner.state.feed import DrainFeed

SIM_START = 1_767_225_600.0  # 2026-01-01T00:00:00Z: budgets' cron schedules read it
EVENT_TTL = 3600.0  # kube-apiserver's --event-ttl default: the store holds an hour of Events
WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "Job", "DaemonSet")
WORLD_KINDS = (*WORKLOAD_KINDS, "Pod", "Node", "NodeClaim", "Event")


class World:
    """The emulated cluster: workload controllers, kube-scheduler, kubelet, timers."""

    def __init__(
        self,
        kube: MemoryKube,
        clock: FakeClock,
        cloud: SimCloud,
        scenario: Scenario,
        observer: Observer,
    ) -> None:
        self.kube, self.cloud, self.observer = kube, cloud, observer
        self.manager = Manager(clock, pump=self.pump)
        # Reconcilers the engine runs only once everything else at the instant is done.
        self.after_quiet = Manager(clock, pump=self.pump)
        self.pods = observer.pods  # fed below, before anything that reads it runs
        self.workloads = Workloads(kube, self.pods)
        self.scheduler = KubeScheduler(kube, clock, self.pods, observer.nodes)
        self.kubelet = Kubelet(
            kube,
            clock,
            cloud.instance_exists,
            scenario.cloud.launch_delay,
            scenario.cloud.ready_delay,
            scenario.cluster.region,
            enqueue=lambda key, delay: self.manager.enqueue(Kubelet.name, key, delay),
        )
        self.timers = Timers()
        for reconciler in (self.kubelet, self.timers):
            self.manager.register(reconciler)
        # A workload controller counts its pods, the kube-scheduler tries every pending
        # pod: once per instant, after the burst of changes (pods deleted one by one by
        # the kubelet, nodes joining together) rather than once per change in it.
        for reconciler in (self.workloads, self.scheduler):
            self.after_quiet.register(reconciler)
        self.feed = DrainFeed(kube, WORLD_KINDS, self.handle, lambda kind: None)

    def pump(self) -> int:
        return self.feed.pump()

    def handle(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        getattr(self, f"_on_{kind.lower()}", self._on_workload)(event_type, obj)

    def _on_workload(self, event_type: str, obj: dict[str, Any]) -> None:
        if event_type != "DELETED":
            self.after_quiet.enqueue(Workloads.name, _workload_key(obj))

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        self.pods.apply(event_type, pod)
        # Workload controllers count active pods; an update that leaves a pod active (it
        # cannot become active again) changes nothing they decide on.
        owners = pod["metadata"].get("ownerReferences") or ()
        for owner in owners if event_type != "MODIFIED" or not is_active(pod) else ():
            if owner.get("kind") in WORKLOAD_KINDS:
                key = f"{owner['kind']}/{pod['metadata']['namespace']}/{owner['name']}"
                self.after_quiet.enqueue(Workloads.name, key)
        if self.scheduler.on_pod(event_type, pod):
            self._wake_scheduler()
        for key, delay in self.kubelet.keys_for_pod(event_type, pod):
            self.manager.enqueue(Kubelet.name, key, delay)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        self.observer.on_node(event_type, node)
        if self.scheduler.on_node(event_type, node):
            self._wake_scheduler()
        if event_type == "DELETED":
            return  # its pods: the pod garbage collector's (the store's), as on a cluster
        if not node["metadata"].get("deletionTimestamp"):  # taints change as nodes start
            for ds in self.kube.list("DaemonSet").items:
                self.after_quiet.enqueue(Workloads.name, _workload_key(ds))

    def _wake_scheduler(self) -> None:
        self.after_quiet.enqueue(KubeScheduler.name, kubescheduler.KEY)

    def next_due(self) -> float | None:
        times = [t for t in (self.manager.next_due(), self.after_quiet.next_due()) if t is not None]
        return min(times, default=None)

    def _on_nodeclaim(self, event_type: str, claim: dict[str, Any]) -> None:
        self.observer.on_nodeclaim(event_type, claim)
        if event_type != "DELETED":
            for key, delay in self.kubelet.keys_for_nodeclaim(claim):
                self.manager.enqueue(Kubelet.name, key, delay)

    def _on_event(self, event_type: str, event: dict[str, Any]) -> None:
        self.observer.on_event(event_type, event)
        if event_type == "ADDED":  # the API server keeps Events for EVENT_TTL
            meta = event["metadata"]
            self.timers.schedule(
                self.manager,
                f"event-ttl/{meta['namespace']}/{meta['name']}",
                EVENT_TTL,
                lambda: self._expire_event(meta["name"], meta["namespace"]),
            )

    def _expire_event(self, name: str, namespace: str) -> None:
        with contextlib.suppress(NotFound):
            self.kube.delete("Event", name, namespace)


class Timers:
    """One-off actions at a virtual time (e.g. capacity coming back)."""

    name = "sim.timers"

    def __init__(self) -> None:
        self._actions: dict[str, Callable[[], None]] = {}

    def schedule(
        self, manager: Manager, key: str, delay: float, action: Callable[[], None]
    ) -> None:
        self._actions[key] = action
        manager.enqueue(self.name, key, delay)

    def reconcile(self, key: str) -> Result:
        action = self._actions.pop(key, None)
        if action is not None:
            action()
        return DONE


def _workload_key(obj: dict[str, Any]) -> str:
    return (
        f"{obj['kind']}/{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"
    )


def operator_options(scenario: Scenario) -> OperatorOptions:
    try:
        settings = Settings.from_env(
            {"CLUSTER_NAME": scenario.cluster.name, **scenario.settings},
            strict=True,
        )
    except SettingsError as err:
        raise ScenarioError(f"spec.settings: {err}") from None
    return OperatorOptions.from_settings(settings)


class Simulation:
    def __init__(self, scenario: Scenario, seed: int = 0, progress: Reporter | None = None) -> None:
        """``progress`` is called every so often while the run goes on (see
        ``joiner.sim.progress``)."""
        self.scenario = scenario
        self.clock = FakeClock(SIM_START)
        self.budget = Budget(scenario.limits)
        self.progress = progress
        self._where = "spec.objects"  # the part of the scenario being run
        self._reported = -REPORT_INTERVAL
        # The operator's state and the emulated cluster only read what their watches
        # deliver: one thawed object serves both.
        self.kube = MemoryKube(self.clock, seed=seed, share_watched_objects=True)
        self.cloud = build_cloud(scenario, self.clock)
        self.faults = Faults(self.kube, self.cloud, seed)
        self.interruptions: Interruptions | None = None
        self.restarts = Restarts()
        # Called after every virtual instant (tests check invariants at every step).
        self.after_instant: Callable[[], None] | None = None
        try:
            self._wire(scenario)
        except BaseException:
            self.close()
            raise

    def _wire(self, scenario: Scenario) -> None:
        self.interruptions = Interruptions.for_scenario(
            scenario, self.kube, self.clock, self.cloud.reclaim
        )
        # The elector writes its Lease directly: faults and call counts are the
        # reconcilers'.
        self.replicas = Replicas(self._start_operator, self.kube, self.clock)
        self.cloud.bind_nodeclasses(lambda name: self.operator.state.nodeclasses.get(name))
        self.observer = Observer(
            self.kube, self.clock, self.cloud, self.operator, SIM_START, PodIndex()
        )
        self.world = World(self.kube, self.clock, self.cloud, scenario, self.observer)
        self.world.manager.register(self.replicas)
        self.replicas.enqueue_tick = lambda key, delay: self.world.manager.enqueue(
            Replicas.name, key, delay
        )
        self.replicas.on_new_leader = self._new_leader
        self.end = SIM_START + scenario.max_virtual_seconds

    @property
    def operator(self) -> Operator:
        """The controller: the replica that leads (or led last)."""
        return self.replicas.current.operator

    def _start_operator(self, leads: Callable[[], bool]) -> Operator:
        """A fresh operator, knowing nothing but what it lists from the API server."""
        operator = Operator(
            LeaderFence(self.faults.kube, leads),
            self.faults.cloud,
            self.clock,
            self.cloud.resolve_nodeclass,
            operator_options(self.scenario),
            validate=validate_object,
            interruption_feed=self.interruptions.feed if self.interruptions else None,
        )
        operator.attach(DrainFeed)
        return operator

    def restart_operator(self) -> None:
        """Drop the controller (the leader, with replicas) and everything it holds in
        memory (the cloud provider's included) and start a fresh one against the same
        objects and cloud."""
        self.replicas.replace(next(self.replicas.acting(), self.replicas.current))
        self.cloud.restart_provider()
        self.observer.operator_restarted(self.operator)

    def _new_leader(self, replica: Replica) -> None:
        """Another replica took the Lease: what the provider remembered was the old
        leader's."""
        self.cloud.restart_provider()
        self.observer.leader_elected(replica.operator, replica.identity)

    def _lose(self, step: RestartStep | LeaderStep) -> None:
        if isinstance(step, LeaderStep):
            self.replicas.lose_leader(step)
            self.observer.leader_lost(step.loss)
        else:
            self.restart_operator()

    # --- running -----------------------------------------------------------------------

    def run(self, before_close: Callable[[], None] | None = None) -> SimulationResult:
        """Run every step; ``before_close`` reads the simulation at the end, while its
        cloud is still there (``joiner explain`` takes its snapshot there)."""
        try:
            with full_collections_spaced():
                result = self._run()
            if before_close is not None:
                before_close()
            return result
        finally:
            self.close()

    def close(self) -> None:
        """Release the embedded AWS pieces (moto), whatever happened, and what the
        process's caches hold of this run (``identity.forget_all``)."""
        if self.interruptions is not None:
            self.interruptions.close()
        self.cloud.close()
        identity.forget_all()

    def _run(self) -> SimulationResult:
        self._plan_reservation_ends()
        self._create_static_nodes()
        self._apply(self.scenario.objects, "spec.objects")
        self._run_instant()
        records = [self._step(step) for step in self.scenario.steps]
        self._run_instant()
        self._report_progress(force=True)
        return SimulationResult(
            scenario=self.scenario.name,
            steps=records,
            final=self.observer.snapshot(),
            nodeclaims=sorted(self.observer.nodeclaims.values(), key=lambda r: r.created_at),
            events=self.observer.events,
            totals=self.observer.totals,
        )

    def _step(self, step: Step) -> StepRecord:
        self._where = step.location
        failures: list[str] = []
        unsettled: str | None = None
        if isinstance(step, ApplyStep):
            self._apply(step.manifests, f"spec.steps[{step.index}].apply")
        elif isinstance(step, DeleteStep):
            for target in step.targets:
                with contextlib.suppress(NotFound):
                    self.kube.delete(target.kind, target.name, target.namespace)
        elif isinstance(step, ScaleStep):
            self._scale(step)
        elif isinstance(step, AdvanceStep):
            self.run_until(self.clock.now() + step.seconds)
        elif isinstance(step, SettleStep):
            self.run_until(self.clock.now() + step.max_seconds, stop=self.settled)
            unsettled = self._unsettled(step)
        elif isinstance(step, CapacityStep):
            self._capacity(step)
        elif isinstance(step, FaultStep):
            self.faults.inject(step, self.world.kubelet)
        elif isinstance(step, RestartStep):
            self.restarts.plan(step, self._schedule, self.replicas.reconciles())
        elif isinstance(step, LeaderStep):
            self.replicas.go_elected()
            self.restarts.plan(step, self._schedule, self.replicas.reconciles())
        elif isinstance(step, InterruptStep) and self.interruptions is not None:
            self.interruptions.deliver(step, self._schedule, self._wake_interruption)
        elif isinstance(step, UnhealthyStep):
            self._unhealthy(step)
        elif isinstance(step, ExpectStep):
            failures = evaluate_expect(
                step,
                self.observer.snapshot(),
                list(self.observer.nodeclaims.values()),
                lambda: len(self.observer.unclaimed_instances()),
            )
        self._run_instant()
        return StepRecord(
            step.index,
            step.action,
            self.observer.elapsed(),
            self.observer.snapshot(),
            name=step.name,
            failures=failures,
            unsettled=unsettled,
        )

    def run_until(self, end: float, stop: Callable[[], bool] | None = None) -> None:
        end = min(end, self.end)
        while True:
            self._run_instant()
            if stop is not None and stop():
                return
            upcoming = [
                t
                for t in (
                    self.replicas.next_due(),
                    self.world.next_due(),
                    self.kube.next_due(),  # kube-controller-manager's work
                )
                if t is not None
            ]
            target = min(upcoming, default=end)
            if target > end:
                target = end
            self._advance_to(target)
            if target >= end:
                self._run_instant()
                return

    def _advance_to(self, target: float) -> None:
        now = self.clock.now()
        if target > now:
            self.observer.account(target - now)
            self.clock.set(target)

    def _run_instant(self) -> None:
        self.budget.new_instant()
        while True:
            for loss in self.restarts.take():
                self._lose(loss)  # type: ignore[arg-type]
            ran = (
                self.replicas.pump()
                + self.world.pump()
                + self._run_controller()
                + self.world.manager.run_due()
                + self.kube.run_controllers()
            )
            if not ran:  # quiet: now what waits for the rest (the kube-scheduler)
                ran = self.world.after_quiet.run_due(limit=1)
            if not ran and not self.restarts.due:
                if self.after_instant is not None:
                    self.after_instant()
                return
            self._charge(ran)

    def _charge(self, steps: int) -> None:
        """Count steps against the budget; stop the run when a bound is reached."""
        exceeded = self.budget.charge(
            steps, self.observer.pods.count(), len(self.operator.state.nodeclaims)
        )
        if exceeded is not None:
            in_flight = ", ".join(self._in_flight()) or "nothing in flight"
            raise BoundReached(
                f"{self._where}: did not converge: {exceeded} at "
                f"t={format_duration(self.observer.elapsed())} of virtual time, after "
                f"{self.budget.steps:,} steps and {self.budget.wall_seconds():.0f}s ({in_flight})"
            )
        self._report_progress()

    def _report_progress(self, force: bool = False) -> None:
        """Tell the progress reporter where the run is, at most every REPORT_INTERVAL."""
        wall = self.budget.wall_seconds()
        if self.progress is None or (not force and wall - self._reported < REPORT_INTERVAL):
            return
        self._reported = wall
        self.progress(
            Progress(
                virtual_seconds=self.observer.elapsed(),
                virtual_bound=self.scenario.max_virtual_seconds,
                steps=self.budget.steps,
                pending_pods=self.observer.pods.pending_count(),
                wall_seconds=wall,
                where=self._where,
            )
        )

    def _run_controller(self) -> int:
        with self.faults.controller_running():
            return self.replicas.run_due(proceed=self._operator_may_proceed)

    def _operator_may_proceed(self) -> bool:
        return self.restarts.proceed(self.replicas.reconciles())

    def settled(self) -> bool:
        """No pending pods, no CapacityBuffer chunk waiting for room, nothing launching, no
        disruption in progress, nothing being drained or deleted, no pod of a deleted node
        waiting for the pod garbage collector."""
        return next(self._in_flight(), None) is None

    def _in_flight(self) -> Iterator[str]:
        """What keeps the run from settling, cheapest check first (``settled`` stops at
        the first)."""
        if self.replicas.leaderless():
            yield "no controller replica leads"
        if self.operator.disruption.busy:
            yield "disruption in progress"
        pending = self.observer.pods.pending_count()
        if pending:
            yield f"pending pods: {pending}"
        waiting = self.operator.buffers.waiting()
        if waiting:
            yield f"CapacityBuffer chunks waiting for room: {waiting}"
        launching = deleting = 0
        for claim in self.operator.state.nodeclaims.values():
            if claim.metadata.get("deletionTimestamp"):
                deleting += 1
            elif not claim.condition_true("Initialized"):
                launching += 1
        if launching:
            yield f"NodeClaims not yet initialized: {launching}"
        if deleting:
            yield f"NodeClaims being deleted: {deleting}"
        orphaned = [
            n for n in self.observer.pods.nodes_with_pods() if not self.observer.has_node(n)
        ]
        if orphaned:
            yield f"pods of deleted nodes awaiting garbage collection: {len(orphaned)} nodes"

    def _unsettled(self, step: SettleStep) -> str | None:
        """The failure of a settle step that reached its bound, or None if it settled."""
        in_flight = list(self._in_flight())
        if not in_flight:
            return None
        return (
            f"{step.location}: settle: did not settle within "
            f"{format_duration(step.max_seconds)}: {', '.join(in_flight)}"
        )

    # --- step actions ----------------------------------------------------------------------

    def _apply(self, manifests: tuple[dict[str, Any], ...] | Any, where: str) -> None:
        for index, manifest in enumerate(manifests):
            try:
                self._create_or_replace(dict(manifest))
            except ApiError as err:
                raise ScenarioError(f"{where}[{index}]: {err}") from None

    def _create_or_replace(self, manifest: dict[str, Any]) -> None:
        meta = manifest.setdefault("metadata", {})
        try:
            current = self.kube.get(manifest["kind"], meta["name"], meta.get("namespace"))
        except NotFound:
            self.kube.create(manifest)
            return
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.kube.update(manifest)

    def _scale(self, step: ScaleStep) -> None:
        target = step.target
        try:
            obj = self.kube.get(target.kind, target.name, target.namespace)
        except NotFound:
            raise ScenarioError(
                f"spec.steps[{step.index}].scale: {target.kind} {target.namespace}/{target.name} "
                "does not exist"
            ) from None
        obj.setdefault("spec", {})["replicas"] = step.replicas
        try:
            self.kube.update(obj)
        except Invalid as err:  # a dynamic NodePool: replicas may not be added
            raise ScenarioError(f"spec.steps[{step.index}].scale: {err}") from None

    def _capacity(self, step: CapacityStep) -> None:
        self.cloud.set_available(step.unavailable, False)
        if step.duration is not None:
            self.world.timers.schedule(
                self.world.manager,
                f"capacity/{step.index}",
                step.duration,
                lambda: self.cloud.set_available(step.unavailable, True),
            )

    def _unhealthy(self, step: UnhealthyStep) -> None:
        """The chosen nodes report the condition now and, after ``for``, the healthy
        status again (those still there)."""
        names = [node["metadata"]["name"] for node in target_nodes(self.kube, step)]
        for name in names:
            self._report(name, step.condition, step.status, step.reason)
        if step.duration is not None:
            healthy = "False" if step.status == TRUE else TRUE
            self.world.timers.schedule(
                self.world.manager,
                f"healthy/{step.index}",
                step.duration,
                lambda: [self._report(n, step.condition, healthy, "Recovered") for n in names],
            )

    def _report(self, node_name: str, condition: str, status: str, reason: str) -> None:
        """A node agent (the kubelet, the EKS node monitoring agent) reports a condition."""
        try:
            node = self.kube.get("Node", node_name)
        except NotFound:
            return
        conditions = node.setdefault("status", {}).setdefault("conditions", [])
        set_condition(conditions, condition, status, self.clock.now(), reason=reason)
        self.kube.update_status(node)

    def _schedule(self, key: str, delay: float, action: Callable[[], None]) -> None:
        self.world.timers.schedule(self.world.manager, key, delay, action)

    def _plan_reservation_ends(self) -> None:
        """EC2's doings at the end of the reservations that have one (aws only)."""
        ending = [(i, r) for i, r in self.cloud.reservations if r.ends_after is not None]
        if not ending:
            return
        from joiner.sim.capacityblocks import ReservationEnds  # loads moto: aws runs only

        ends = ReservationEnds(
            self.scenario.cluster.region,
            self.interruptions,
            lambda name, reason, message: self.observer.record_event(
                "CapacityReservation", name, reason, message
            ),
        )
        ends.plan(ending, self._schedule, self._wake_interruption)

    def _wake_interruption(self) -> None:
        assert self.operator.interruption is not None  # wired when the scenario interrupts
        self.operator.manager.enqueue(self.operator.interruption.name, interruption.KEY)

    def _create_static_nodes(self) -> None:
        for spec in self.scenario.nodes:
            facts = self.cloud.static_node(spec)
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": spec.name,
                    "labels": {
                        **facts.labels,
                        wk.HOSTNAME: spec.name,
                        wk.REGION: self.scenario.cluster.region,
                        **dict(spec.labels),
                    },
                },
                "spec": {"taints": [dict(t) for t in spec.taints]},
                "status": {
                    "capacity": res.format_resource_list(facts.capacity),
                    "allocatable": res.format_resource_list(facts.allocatable),
                    "conditions": [],
                },
            }
            set_condition(node["status"]["conditions"], "Ready", TRUE, self.clock.now())
            self.kube.create(node)
            self.observer.static_prices[spec.name] = facts.price
