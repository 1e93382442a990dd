"""The disruption pass [DISR-2]: every 10 seconds, the first method that finds
something to do wins: emptiness, drift, multi-node then single-node consolidation.
Emptiness and consolidation decisions are validated again 15 seconds later before
the orchestrator carries them out.

The CapacityBuffers' chunks count as pods of the nodes that hold them
(``joiner.buffers.holding``): a node holding chunks is not empty, and goes only where
the simulation finds their room elsewhere (or in its replacement)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import resources as res
from joiner.api.nodepool import BALANCED, NodePool
from joiner.api.rebalance import RebalanceSettings, rebalance_settings
from joiner.buffers.holding import Buffers
from joiner.clock import Clock
from joiner.cloudprovider.types import CloudProvider, InstanceType
from joiner.controllers.disruption import balanced, methods
from joiner.controllers.disruption import rebalance as rebalancing
from joiner.controllers.disruption.budgets import (
    UNDERUTILIZED,
    allowed_disruptions,
    budget_active,
)
from joiner.controllers.disruption.candidates import (
    Candidate,
    build_candidates,
    candidates_until,
)
from joiner.controllers.disruption.methods import Command, ConsolidationOptions
from joiner.controllers.disruption.orchestration import KEY as ORCHESTRATION_KEY
from joiner.controllers.disruption.orchestration import Orchestrator, Recovery
from joiner.controllers.disruption.staticdrift import static_drift
from joiner.controllers.provisioning import Provisioner
from joiner.controllers.runtime import Result
from joiner.controllers.static import active_claims, node_room, pool_claims, template_plan
from joiner.events import NORMAL, REPEAT_WRITE_INTERVAL, WARNING, EventRecorder
from joiner.identity import IdentityCache
from joiner.metrics import Metrics
from joiner.rebalance import Cluster, plan
from joiner.rebalance.planner import offered
from joiner.scheduling.model import Plan, Unplaceable, VolumeCatalog, pod_key
from joiner.scheduling.occupancy import occupancy
from joiner.scheduling.pods import pod_requests
from joiner.scheduling.solver import solve
from joiner.state.cluster import ClusterState
from joiner.state.node import StateNode

log = logging.getLogger(__name__)

KEY = "disruption"
PASS_INTERVAL = 10.0
VALIDATION_DELAY = 15.0
AFTER_RELEASE = 1.0  # a pass waits this long for the watch to show the taints it removed
WHEN_EMPTY = "WhenEmpty"
REBALANCE = "rebalance"  # the method's name
OFFERINGS_READ_KEPT = 16  # instance type lists whose offerings are remembered
PODS_LISTS_KEPT = 10_000  # nodes' pod lists whose requests are remembered
STARTING_NODE = "starting node"  # the constraint of pods that would go to one
# The rebalancer plans at most once in each window of this many seconds (a plan of a
# cluster of thousands of pods takes seconds), and looks again in the next window even
# when nothing changed: its budget (evictions in the last hour, nodes amortising) moves
# with time alone.
REBALANCE_WINDOW = 300.0


@dataclass
class Pending:
    command: Command
    method: str
    validate_at: float


class Disruption:
    name = "disruption"

    def __init__(
        self,
        state: ClusterState,
        cloud: CloudProvider,
        clock: Clock,
        provisioner: Provisioner,
        orchestrator: Orchestrator,
        enqueue_orchestration: Callable[[str], None],
        options: ConsolidationOptions,
        recorder: EventRecorder,
        metrics: Metrics,
        buffers: Buffers | None = None,
    ) -> None:
        self.state, self.cloud, self.clock = state, cloud, clock
        self.buffers = buffers
        self.metrics = metrics
        self.recorder = recorder
        self.provisioner, self.orchestrator = provisioner, orchestrator
        self.enqueue_orchestration = enqueue_orchestration
        self.options = options
        self.pending: Pending | None = None
        self.last_skipped: dict[str, str] = {}
        self._explained: tuple[dict[str, str], float] = ({}, 0.0)  # last told, and when
        self._types: dict[str, Sequence[InstanceType]] = {}
        self._allowances: dict[tuple[str, str], int] = {}  # this pass's budgets
        self._offered: tuple | None = None  # this pass's offerings, see _simulation_basis
        self._offerings_read: IdentityCache[tuple] = IdentityCache(OFFERINGS_READ_KEPT)
        self._launchable_types: list[InstanceType] | None = None  # this pass's, see _launchable
        self._priced: tuple[tuple, dict[str, float]] = ((), {})  # basis, prices
        self._requests: IdentityCache[methods.PodShapes] = IdentityCache(PODS_LISTS_KEPT)
        # Rescheduling simulations of the current cluster, by candidate names: reused while
        # nothing they read has changed (the state, the marks, the instance types on offer),
        # which is most passes once the cluster is steady.
        self._simulations: dict[tuple, Plan] = {}
        self._simulations_basis: tuple = ()
        # Free room on each node simulations may use, for the basis below.
        self._room = methods.Rooms.of({})
        self._room_basis: tuple | None = None
        # Each node's free room, by the node (rebuilt when any Node or NodeClaim changes)
        # and its pods: most state changes leave most nodes' rooms as they were.
        self._unrequested: IdentityCache[res.ResourceList] = IdentityCache(PODS_LISTS_KEPT)
        # The candidates of the state (see _candidates): key, list, skipped, valid until.
        self._built: tuple[tuple, list[Candidate], dict[str, str], float] | None = None
        # What the last pass that found nothing read (candidates, budget activity), and
        # why each node was passed over.
        self._undecided: tuple[list[Candidate], tuple, dict[str, str]] | None = None
        # What consolidation last read when it found nothing to do, and why not.
        self._consolidated: tuple[tuple, dict[str, str]] | None = None
        self._totals: dict[str, balanced.PoolTotals] = {}  # this pass's, Balanced pools
        # The Balanced scores of the moves judged, by their candidates' names.
        self._scores: dict[tuple[str, ...], list[tuple[str, balanced.Score]]] = {}
        self.churn = rebalancing.Churn()  # the rebalancer's evictions in the last hour
        # What the rebalancer last read when it found nothing to do, and why not.
        self._rebalanced: tuple[tuple, str] | None = None
        self._planned_in: float | None = None  # the window of the last plan
        self._settings_told: dict[str, str] = {}  # pool -> its bad annotations, as told

    @property
    def busy(self) -> bool:
        return self.pending is not None or self.orchestrator.busy

    def reconcile(self, key: str) -> Result:
        if not self.state.synced or self.orchestrator.busy:
            return Result(requeue_after=PASS_INTERVAL)
        recovery = self.orchestrator.recover()
        if recovery is Recovery.RESUMED:
            self.enqueue_orchestration(ORCHESTRATION_KEY)
            return Result(requeue_after=PASS_INTERVAL)
        if recovery is Recovery.RELEASED:
            # The state shows the removed taints until the watch brings the writes back: a
            # pass now would keep pods off those nodes and launch a replacement they do not
            # need. The next pass finds nothing to release once the state has caught up.
            return Result(requeue_after=AFTER_RELEASE)
        self._new_pass()
        if self.pending is not None:
            self._validate_and_act()
            return Result(requeue_after=PASS_INTERVAL)
        command, method = self._decide()
        self._explain_skips()
        if command is not None:
            if method == "drift":
                self._act(command)
            else:
                self.pending = Pending(command, method, self.clock.now() + VALIDATION_DELAY)
                return Result(requeue_after=VALIDATION_DELAY)
        return Result(requeue_after=PASS_INTERVAL)

    # --- what a pass would do, for ``joiner explain`` ---------------------------------

    def decide_now(self) -> tuple[Command | None, str, dict[str, str]]:
        """The command a pass would take now (and its method), and why each node was
        passed over, without acting on it or recording anything."""
        self._new_pass()
        command, method = self._decide()
        return command, method, dict(self.last_skipped)

    def candidates_now(self) -> tuple[list[Candidate], dict[str, str]]:
        """This pass's candidates, and why the other managed nodes are not candidates."""
        return self._candidates()

    def simulate_without(self, candidates: Sequence[Candidate]) -> Plan:
        """Where the candidates' pods would go without them: the replacement they need."""
        return self._simulate(candidates)

    def allowed(self, pool_name: str, reason: str) -> int:
        """The disruptions the pool's budgets allow now for the reason."""
        return self._allowed(pool_name, reason)

    def prices_now(self) -> dict[str, float]:
        """What each managed node costs now, as the pass prices it."""
        return self._prices()

    def _new_pass(self) -> None:
        """Forget what one pass may cache: instance types, offerings, budgets."""
        self._types, self._allowances, self._offered = {}, {}, None
        self._launchable_types = None
        self._totals, self._scores = {}, {}

    # --- deciding ----------------------------------------------------------------------

    def _decide(self) -> tuple[Command | None, str]:
        """The first method's command; a pass over the same candidates and budgets as a
        pass that found nothing finds nothing again (every method is a function of them and
        of what the candidates memo is keyed on), so it is not worked out again."""
        candidates, skipped = self._candidates()
        activity = self._budget_activity()
        prior = self._undecided
        if prior is not None and prior[0] is candidates and prior[1] == activity:
            self.last_skipped = dict(prior[2])
            return None, ""
        command, method = self._decide_on(candidates, skipped)
        found_nothing = command is None
        self._undecided = (candidates, activity, dict(self.last_skipped)) if found_nothing else None
        return command, method

    def _candidates(self) -> tuple[list[Candidate], dict[str, str]]:
        """``build_candidates``, the same list object while the state, the marks, the
        offerings and the nominations are the same and no time-bound fact has turned."""
        now = self.clock.now()
        key = (self._simulation_basis(), self.state.nominations)
        built = self._built
        if built is None or built[0] != key or now >= built[3]:
            candidates, skipped, until = candidates_until(self.state, self._prices(), now)
            built = self._built = (key, self._with_chunks(candidates), skipped, until)
        return built[1], built[2]

    def _with_chunks(self, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates with the buffer chunks each holds among its pods."""
        if self.buffers is None or not self.buffers.groups():
            return candidates
        held = self.buffers.held_on
        return [
            replace(c, pods=[*c.pods, *held(c.name)]) if held(c.name) else c for c in candidates
        ]

    def _budget_activity(self) -> tuple:
        """Which budgets are active now, pool by pool: with the nodes and marks (in the
        candidates' key), all the allowed disruptions follow from it."""
        now = self.clock.now()
        pools = tuple(
            (name, tuple(budget_active(b, now) for b in pool.disruption.budgets))
            for name, pool in sorted(self.state.nodepools.items())
        )
        rebalancing_due = now // REBALANCE_WINDOW if self._rebalance_settings() else None
        return (pools, rebalancing_due)

    def _decide_on(
        self, candidates: list[Candidate], skipped: dict[str, str]
    ) -> tuple[Command | None, str]:
        self.last_skipped = dict(skipped)
        # Static pools' nodes are never consolidated, only replaced when drifted [STATIC-3].
        static = [c for c in candidates if c.pool.is_static]
        dynamic = [c for c in candidates if not c.pool.is_static]
        for method in ("emptiness", "drift"):
            command = getattr(self, f"_{method}")(dynamic)
            if command is not None:
                return command, method
        command = self._static_drift(static)
        if command is not None:
            return command, "drift"
        command, method = self._consolidation(self._underutilized(dynamic))
        if command is not None:
            return command, method
        proposal = self._rebalance(dynamic)
        return (proposal.command, REBALANCE) if proposal is not None else (None, "")

    def _consolidation(self, candidates: list[Candidate]) -> tuple[Command | None, str]:
        """Multi-node, then single-node consolidation; skipped, as Karpenter does, while
        nothing they read changed since they last found nothing to do."""
        budgets = {(c.pool.name, self._allowed(c.pool.name, UNDERUTILIZED)) for c in candidates}
        key = (self._simulation_basis(), tuple(c.name for c in candidates), sorted(budgets))
        if self._consolidated is not None and self._consolidated[0] == key:
            self.last_skipped.update(self._consolidated[1])
            return None, ""
        before = dict(self.last_skipped)
        for method in ("multi", "single"):
            command = getattr(self, f"_{method}")(candidates)
            if command is not None:
                return command, method
        why = {name: v for name, v in self.last_skipped.items() if before.get(name) != v}
        self._consolidated = (key, why)
        return None, ""

    def _emptiness(self, candidates: list[Candidate]) -> Command | None:
        consolidatable = [c for c in candidates if _consolidatable(c)]
        verdict = methods.emptiness(consolidatable, self._allowed)
        self.last_skipped.update(verdict.skipped)
        return verdict.command

    def _drift(self, candidates: list[Candidate]) -> Command | None:
        drifted = [c for c in candidates if c.drifted]
        verdict = methods.drift(drifted, self._allowed, self._simulate)
        self.last_skipped.update(verdict.skipped)
        return verdict.command

    def _static_drift(self, candidates: list[Candidate]) -> Command | None:
        verdict = static_drift(
            [c for c in candidates if c.drifted],
            self._allowed,
            self._static_room,
            lambda pool: template_plan(pool, self._instance_types(pool.name)),
        )
        self.last_skipped.update(verdict.skipped)
        return verdict.command

    def _static_room(self, pool: NodePool) -> int:
        """NodeClaims ``limits.nodes`` still allows the pool; -1 while it has more active
        ones than ``replicas`` (the static controller is scaling it down)."""
        claims = pool_claims(self.state.nodeclaims.values(), pool.name)
        if len(active_claims(claims, self.state.marked_for_deletion)) > (pool.replicas or 0):
            return -1
        return node_room(pool, len(claims))

    def _multi(self, candidates: list[Candidate]) -> Command | None:
        return methods.multi_node(
            self._within_budget(candidates),
            self._simulate,
            self._instance_types,
            self.options,
            self._judge,
        )

    def _single(self, candidates: list[Candidate]) -> Command | None:
        verdict = methods.single_node(
            candidates,
            self._simulate,
            self._instance_types,
            self.options,
            self._hopeless,
            self._judge,
        )
        self.last_skipped.update(verdict.skipped)
        return verdict.command

    def _underutilized(self, candidates: list[Candidate]) -> list[Candidate]:
        """Consolidatable candidates with pods, of WhenEmptyOrUnderutilized pools whose
        Underutilized budget is not used up. Single-node consolidation tries them all, as
        Karpenter does: a command disrupts one node, which any allowance covers. Empty ones
        are for emptiness, under its own budget."""
        chosen: list[Candidate] = []
        for candidate in candidates:
            pool = candidate.pool
            if pool.disruption.consolidation_policy == WHEN_EMPTY or not _consolidatable(candidate):
                continue
            if not candidate.pods:
                continue
            if self._allowed(pool.name, UNDERUTILIZED) == 0:
                self.last_skipped[candidate.name] = f"budget 0 for {UNDERUTILIZED}"
                continue
            chosen.append(candidate)
        return chosen

    def _within_budget(self, candidates: list[Candidate]) -> list[Candidate]:
        """The cheapest-to-disrupt candidates of each pool, as many as its budget allows:
        multi-node consolidation binary-searches a prefix of these."""
        chosen: list[Candidate] = []
        taken: dict[str, int] = {}
        for candidate in candidates:
            pool = candidate.pool.name
            if taken.get(pool, 0) < self._allowed(pool, UNDERUTILIZED):
                taken[pool] = taken.get(pool, 0) + 1
                chosen.append(candidate)
        return chosen

    def _hopeless(self, candidate: Candidate) -> str | None:
        """Why no simulation can consolidate this single candidate (None when one might):
        no cheaper instance type could hold what its pods certainly cannot put on the other
        nodes. During busy hours most nodes are full, and this check spares a solve for
        each of them every pass. A Balanced pool's candidate whose outright delete would
        not be worth it is passed over first, with that score [DISR-10]."""
        if candidate.pool.disruption.consolidation_policy == BALANCED:
            best = balanced.best_case(
                candidate,
                self._pool_totals(candidate.pool.name),
                deletion_cost_managed=self.state.deletion_cost_managed,
            )
            if not best.approved:
                return best.describe()
        requests = self._requests_of(candidate)
        shortfall = methods.least_replacement_load(requests, self._free_room(), candidate.name)
        if not shortfall:
            return None
        return methods.no_cheaper_home(candidate, shortfall, self._launchable(), self.options)

    def _launchable(self) -> list[InstanceType]:
        """The types some ready pool's requirements allow (a provider offers every type
        of the node class), worked out once per pass."""
        if self._launchable_types is None:
            self._launchable_types = [
                it
                for pool in self.provisioner.ready_nodepools()
                for requirements in [pool.requirements()]
                for it in self._instance_types(pool.name)
                if it.requirements.is_intersecting(requirements)
            ]
        return self._launchable_types

    def _requests_of(self, candidate: Candidate) -> methods.PodShapes:
        """The candidate's pods' requests, remembered while they are the same pods."""
        pods = candidate.pods
        return self._requests.remember(
            pods,
            lambda: methods.PodShapes.of([pod_requests(p, {}) for p in pods]),
            slot=candidate.name,
        )

    def _free_room(self) -> methods.Rooms:
        """Unrequested allocatable of each node a simulation may place pods on; remembered
        while the simulations are (see _simulate)."""
        basis = self._simulation_basis()
        if self._room_basis != basis:
            room: dict[str, res.ResourceList] = {}
            for sn in self.state.state_nodes():
                if self.state.leaving(sn) or not sn.initialized:
                    continue
                pods = self.state.bound_pods(sn.name)  # the same tuple until a pod changes
                # the chunks move when any node's pods change (a placement is worked out
                # again then): remembered by the very tuple the placement holds
                chunks = self._chunks_on(sn)
                room[sn.name] = self._unrequested.remember(
                    (sn, pods, chunks),
                    lambda sn=sn, pods=pods, chunks=chunks: _unrequested(sn, (*pods, *chunks)),
                    slot=sn.name,
                )
            self._room, self._room_basis = methods.Rooms.of(room), basis
        return self._room

    def _chunks_on(self, node: StateNode) -> tuple[dict[str, Any], ...]:
        """The CapacityBuffer chunks ``node`` holds: they take its room as pods do."""
        return self.buffers.held_on(node.name) if self.buffers is not None else ()

    def _explain_skips(self) -> None:
        """An event on every NodeClaim passed over, saying why. The same reasons as the
        pass before are told again only every ``REPEAT_WRITE_INTERVAL``: the recorder would
        merely count the repeat (as Karpenter drops its duplicates for two minutes)."""
        now = self.clock.now()
        told, at = self._explained
        if self.last_skipped == told and now - at < REPEAT_WRITE_INTERVAL:
            return
        self._explained = (dict(self.last_skipped), now)
        for node_name, why in sorted(self.last_skipped.items()):
            state_node = self.state.state_node(node_name)
            if state_node is not None and state_node.nodeclaim is not None:
                claim = state_node.nodeclaim
                # The watched object names the claim as well as a rebuilt dict, for free.
                involved = self.state.objects["NodeClaim"].get(claim.name) or claim.to_dict()
                reason = (
                    "ConsolidationRejected" if balanced.is_rejection(why) else "DisruptionBlocked"
                )
                self.recorder.record(involved, NORMAL, reason, why)

    # --- validating and acting --------------------------------------------------------------

    def _validate_and_act(self) -> None:
        pending, self.pending = self.pending, None
        assert pending is not None
        names = {c.name for c in pending.command.candidates}
        candidates, _ = build_candidates(self.state, self._prices(), self.clock.now())
        current = self._with_chunks([c for c in candidates if c.name in names])
        if len(current) != len(names) or not all(_consolidatable(c) for c in current):
            log.info("disruption invalidated: candidates changed")
            return
        if pending.method == REBALANCE:
            self._validate_rebalance(pending.command, current)
            return
        if pending.method == "emptiness":
            command = methods.emptiness(current, self._allowed).command
        else:
            command, _ = methods.consolidate(
                current, self._simulate, self._instance_types, self.options, self._judge
            )
        if command is None or len(command.replacements) > len(pending.command.replacements):
            log.info("disruption invalidated: %s no longer holds", pending.command.describe())
            return
        self._act(command)

    def _act(self, command: Command) -> None:
        log.info("disrupting: %s", command.describe())
        self._announce_scores(command)
        self.orchestrator.start(command)
        self.enqueue_orchestration(ORCHESTRATION_KEY)

    # --- the rebalancer (issue 23) -----------------------------------------------------------

    def _rebalance_settings(self) -> dict[str, RebalanceSettings]:
        """The opted-in pools' settings. A pool with a bad annotation is left alone, with a
        warning event naming the field (once per change of its annotations)."""
        chosen: dict[str, RebalanceSettings] = {}
        for name, pool in self.state.nodepools.items():
            settings, errors = rebalance_settings(pool.metadata)
            told = "; ".join(str(e) for e in errors)
            if told and self._settings_told.get(name) != told:
                involved = self.state.objects["NodePool"].get(name)
                if involved is not None:
                    self.recorder.record(involved, WARNING, "RebalanceInvalid", told)
            self._settings_told[name] = told
            if settings.enabled:
                chosen[name] = settings
        return chosen

    def _rebalance(self, candidates: list[Candidate]) -> rebalancing.Proposal | None:
        """The rebalancer's move, once the cluster is settled: no pod pending, no node
        starting. Not worked out again while nothing it reads changed."""
        settings = self._rebalance_settings()
        if not settings or self.state.provisionable_pods():
            return None
        if any(not sn.initialized for sn in self.state.managed_nodes()):
            return None
        now = self.clock.now()
        eligible, skipped = rebalancing.eligible_candidates(
            candidates, settings, now, _consolidatable
        )
        self.last_skipped.update(skipped)
        budget = self._rebalance_budget(settings, now)
        key = (self._simulation_basis(), tuple(eligible), sorted(budget.evictions_left.items()))
        if not eligible or (self._rebalanced is not None and self._rebalanced[0] == key):
            return None
        if self._planned_in == now // REBALANCE_WINDOW:
            return None
        self._planned_in = now // REBALANCE_WINDOW
        target = plan(self._planner_view(eligible, now))
        proposal, why = rebalancing.choose(
            target, eligible, budget, self._simulate_launching, self._instance_types, now
        )
        if proposal is None:
            log.debug("rebalance: nothing to do: %s", why)
            self._rebalanced = (key, why)
        return proposal

    def _rebalance_budget(
        self, settings: dict[str, RebalanceSettings], now: float
    ) -> rebalancing.Budget:
        return rebalancing.Budget(
            settings=settings,
            evictions_left={
                name: max(0, s.evictions_per_hour - self.churn.used(name, now))
                for name, s in settings.items()
            },
            nodes_left={name: self._allowed(name, UNDERUTILIZED) for name in settings},
        )

    def _planner_view(self, eligible: dict[str, Candidate], now: float) -> Cluster:
        """The cluster as the planner reads it: only the eligible nodes may be drained."""
        snapshot = self.state.snapshot()
        if self.buffers is not None:
            snapshot = self.buffers.with_held(snapshot)
        pools = self.provisioner.ready_nodepools()
        prices = self._prices()
        return Cluster(
            snapshot=snapshot,
            prices={n.name: prices.get(n.name, 0.0) for n in snapshot.nodes},
            nodepools=pools,
            instance_types={pool.name: self._instance_types(pool.name) for pool in pools},
            fixed=frozenset(n.name for n in snapshot.nodes if n.name not in eligible),
            pdbs=dict(self.state.objects["PodDisruptionBudget"]),
            now=now,
        )

    def _validate_rebalance(self, decided: Command, current: list[Candidate]) -> None:
        """The move again after the batch window: still within the budget, still placed by
        the scheduler, still saving enough, with no more replacements than decided."""
        settings = self._rebalance_settings()
        now = self.clock.now()
        if any(c.pool.name not in settings for c in current):
            log.info("rebalance invalidated: a pool no longer opts in")
            return
        refused = self._rebalance_budget(settings, now).admits(current)
        launching = rebalancing.launch_types(decided.replacements)
        simulate, types = self._simulate_launching, self._instance_types
        proposal, why = (
            rebalancing.confirm(current, launching, settings, simulate, types, now)
            if refused is None
            else (None, refused)
        )
        if proposal is None or len(proposal.command.replacements) > len(decided.replacements):
            log.info("rebalance invalidated: %s", why or "it needs more replacements now")
            return
        self._announce_rebalance(proposal, now)
        self._act(proposal.command)

    def _announce_rebalance(self, proposal: rebalancing.Proposal, now: float) -> None:
        """The move's event on its NodePool(s) and each node, its metrics, its churn."""
        message = proposal.describe()
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in proposal.command.candidates:
            by_pool.setdefault(candidate.pool.name, []).append(candidate)
            node = candidate.node.node
            if node is not None:
                self.recorder.record(node, NORMAL, "Rebalanced", message)
        share = proposal.saving / len(proposal.command.candidates)
        for name, group in by_pool.items():
            involved = self.state.objects["NodePool"].get(name)
            if involved is not None:
                self.recorder.record(involved, NORMAL, "Rebalanced", message)
            evicted = sum(len(c.pods) for c in group)
            self.churn.record(name, now, evicted)
            self.metrics.rebalance_moves.labels(name).inc()
            self.metrics.rebalance_evictions.labels(name).inc(evicted)
            self.metrics.rebalance_saving.labels(name).inc(share * len(group))

    # --- Balanced consolidation [DISR-10] ----------------------------------------------------

    def _judge(self, command: Command) -> str | None:
        """Why a feasible consolidation move is not worth it: the score of the first of its
        Balanced pools whose score is below the threshold. Each pool is scored on its own
        candidates, with the replacement's price shared by their prices."""
        by_pool: dict[str, list[Candidate]] = {}
        for candidate in command.candidates:
            by_pool.setdefault(candidate.pool.name, []).append(candidate)
        total_price = sum(c.price for c in command.candidates)
        replacement = sum(r.price for r in command.replacements)
        scores = []
        for name, group in sorted(by_pool.items()):
            if group[0].pool.disruption.consolidation_policy != BALANCED:
                continue
            share = sum(c.price for c in group) / total_price if total_price > 0 else 1.0
            score = balanced.score(
                group,
                replacement * share,
                self._pool_totals(name),
                deletion_cost_managed=self.state.deletion_cost_managed,
            )
            scores.append((name, score))
            decision = "approved" if score.approved else "rejected"
            self.metrics.consolidation_score.labels(decision, name, BALANCED).observe(score.value)
        self._scores[tuple(c.name for c in command.candidates)] = scores
        rejected = next((s for _, s in scores if not s.approved), None)
        self._count_move(by_pool, rejected is None)
        return rejected.describe() if rejected is not None else None

    def _count_move(self, by_pool: dict[str, list[Candidate]], approved: bool) -> None:
        """``karpenter_consolidation_moves_total`` counts every move of every policy, as
        upstream's, with the move's decision (a policy that does not score approves)."""
        decision = "approved" if approved else "rejected"
        for name, group in by_pool.items():
            policy = group[0].pool.disruption.consolidation_policy
            self.metrics.consolidation_moves.labels(decision, name, policy).inc()

    def _pool_totals(self, pool_name: str) -> balanced.PoolTotals:
        """The pool's cost and disruption over all its managed nodes not going away."""
        if pool_name not in self._totals:
            prices = self._prices()
            nodes = [
                sn
                for sn in self.state.managed_nodes()
                if sn.nodepool == pool_name and not sn.deleting
            ]
            self._totals[pool_name] = balanced.PoolTotals(
                cost=sum(prices.get(sn.name, 0.0) for sn in nodes),
                disruption=sum(
                    balanced.node_disruption(
                        self.state.reschedulable_pods([sn.name]),
                        deletion_cost_managed=self.state.deletion_cost_managed,
                    )
                    for sn in nodes
                ),
            )
        return self._totals[pool_name]

    def _announce_scores(self, command: Command) -> None:
        """``ConsolidationApproved`` with the score: on the NodeClaim of a single-node
        move, on the NodePool of a multi-node one."""
        scores = self._scores.pop(tuple(c.name for c in command.candidates), [])
        for pool_name, score in scores:
            if len(command.candidates) == 1:
                claim = command.candidates[0].node.nodeclaim
                involved = claim.to_dict() if claim is not None else None
            else:
                involved = self.state.objects["NodePool"].get(pool_name)
            if involved is not None:
                self.recorder.record(involved, NORMAL, "ConsolidationApproved", score.describe())

    # --- simulation inputs ----------------------------------------------------------------

    def _simulate(self, candidates: Sequence[Candidate]) -> Plan:
        """Where the candidates' pods would go without them (memoised, see __init__)."""
        basis = self._simulation_basis()
        if basis != self._simulations_basis:
            self._simulations, self._simulations_basis = {}, basis
        names = tuple(c.name for c in candidates)
        plan = self._simulations.get(names)
        if plan is None:
            plan = self._simulations[names] = self._solve_without(candidates)
        return plan

    def _simulate_launching(
        self, candidates: Sequence[Candidate], launching: Mapping[str, set[str]]
    ) -> Plan:
        """``_simulate`` launching only the types ``launching`` names per pool."""
        basis = self._simulation_basis()
        if basis != self._simulations_basis:
            self._simulations, self._simulations_basis = {}, basis
        only = tuple(sorted((pool, tuple(sorted(names))) for pool, names in launching.items()))
        key = (tuple(c.name for c in candidates), only)
        plan = self._simulations.get(key)
        if plan is None:
            plan = self._simulations[key] = self._solve_without(candidates, launching)
        return plan

    def _simulation_basis(self) -> tuple:
        """Everything a simulation reads besides the candidates themselves."""
        if self._offered is None:
            self._offered = tuple(
                self._offerings_of(self._instance_types(pool.name))
                for pool in self.provisioner.ready_nodepools()
            )
        marked = frozenset(self.state.marked_for_deletion)
        return (self.state.generation, marked, self._offered, self._chunks_version())

    def _chunks_version(self) -> int:
        return self.buffers.version if self.buffers is not None else 0

    def _offerings_of(self, types: Sequence[InstanceType]) -> tuple:
        """Every offering of ``types`` as plain values. A provider that hands out the same
        list while nothing changed (AWS does) is read once, not every pass."""
        return self._offerings_read.remember(
            (types,),
            lambda: tuple(
                (
                    it.name,
                    tuple((o.zone, o.capacity_type, o.price, o.available) for o in it.offerings),
                )
                for it in types
            ),
        )

    def _solve_without(
        self, candidates: Sequence[Candidate], launching: Mapping[str, set[str]] | None = None
    ) -> Plan:
        """Where the candidates' pods would go without them, with the pods of the nodes
        going away (``ClusterState.leaving_pods``). A candidate's pod that would go to a node still
        starting makes the plan unplaceable for now, as in Karpenter: that room may be
        what the node was launched for (a replacement a restarted process no longer
        remembers, pods nominated to it), and a second node for the same pods would be a
        double launch; once the node is initialized the pass tries again. A displaced pod
        may go there: that node may well be its own replacement. ``launching``: the types
        each pool may launch (all when None)."""
        displaced = self.state.leaving_pods()
        pods = [p for c in candidates for p in c.pods] + displaced
        exclude = {c.name for c in candidates} | self.state.marked_for_deletion
        snapshot = self.state.snapshot(exclude=exclude)
        if self.buffers is not None:
            snapshot = self.buffers.with_held(snapshot)
        pools = self.provisioner.ready_nodepools()
        types = {pool.name: self._instance_types(pool.name) for pool in pools}
        if launching is not None:
            types = {
                name: offered(listed, launching.get(name, set())) for name, listed in types.items()
            }
        plan = solve(pods, pools, types, snapshot)
        starting = {n.name for n in snapshot.nodes if not n.initialized}
        moving = {pod_key(p) for p in displaced}
        for pod, node in plan.existing.items():
            if node in starting and pod not in moving:
                plan.unplaceable[pod] = Unplaceable(
                    pod, STARTING_NODE, f"would schedule on {node}, which is not initialized yet"
                )
        return plan

    def _instance_types(self, pool_name: str) -> Sequence[InstanceType]:
        if pool_name not in self._types:
            pool: NodePool = self.state.nodepools[pool_name]
            self._types[pool_name] = self.cloud.get_instance_types(pool)
        return self._types[pool_name]

    def _allowed(self, pool_name: str, reason: str) -> int:
        """Budget-allowed disruptions; nothing it reads changes during a pass."""
        key = (pool_name, reason)
        if key not in self._allowances:
            self._allowances[key] = self._compute_allowed(pool_name, reason)
        return self._allowances[key]

    def _compute_allowed(self, pool_name: str, reason: str) -> int:
        pool = self.state.nodepools[pool_name]
        nodes = [sn for sn in self.state.managed_nodes() if sn.nodepool == pool_name]
        return allowed_disruptions(
            pool, reason, nodes, self.clock.now(), frozenset(self.state.marked_for_deletion)
        )

    def _prices(self) -> dict[str, float]:
        """What each managed node costs now: its offering's price (worked out again only
        when the nodes or the offerings changed)."""
        basis = self._simulation_basis()
        if self._priced[0] != basis:
            self._priced = (basis, self._price_nodes())
        return self._priced[1]

    def _price_nodes(self) -> dict[str, float]:
        prices: dict[str, float] = {}
        types: dict[str, dict[str, InstanceType]] = {}
        for sn in self.state.managed_nodes():
            pool = self.state.nodepools.get(sn.nodepool or "")
            if pool is None:
                continue
            if pool.name not in types:
                types[pool.name] = {it.name: it for it in self._instance_types(pool.name)}
            labels = sn.labels
            it = types[pool.name].get(labels.get(wk.INSTANCE_TYPE, ""))
            if it is not None:
                prices[sn.name] = next(
                    (
                        o.price
                        for o in it.offerings
                        if o.zone == labels.get(wk.ZONE)
                        and o.capacity_type == labels.get(wk.CAPACITY_TYPE)
                    ),
                    it.cheapest_price() or 0.0,
                )
        return prices


def _unrequested(node: StateNode, pods: tuple[dict[str, Any], ...]) -> res.ResourceList:
    requested = occupancy(pods, {}, VolumeCatalog(), slot=("disruption", node.name)).requests
    return {k: max(0, v) for k, v in res.subtract(node.allocatable, requested).items()}


def _consolidatable(candidate: Candidate) -> bool:
    claim = candidate.node.nodeclaim
    return claim is not None and claim.condition_true(nc.CONSOLIDATABLE)
