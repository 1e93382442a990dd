"""The controller's processes in a simulation: one, or, from the first ``leader`` step
on, two replicas with leader election (the scenario's ``leader`` step).

Each replica is a whole operator with its own watches and memory; its writes go
through a ``LeaderFence``, and its ``LeaderElector`` (the production lease logic, on
the virtual clock, with client-go's timings) ticks every ``retry_period`` as a
reconciler of the emulated world. Only a replica that leads runs reconciles; the
other keeps its view warm, as in production (``joiner.serve``).

Losing the leader: a ``crash`` drops its process without releasing the Lease (its
memory is gone) and a fresh replica starts in its place, as the Deployment would;
the other replica takes over once the Lease has not changed for its duration. A
``pause`` freezes the process (no reconcile, no renewal, no watch drained) for a
while; when it resumes its leadership has lapsed, so it acts no more unless it wins
the Lease again. Both happen between two reconciles (a pause inside one is what the
fence guards against, tested in tests/controller/test_leader.py).

The cloud provider's memory (insufficient capacity) is the leader's: a new leader's
starts empty. The sim has one provider, so a change of leader empties it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from joiner.clock import Clock
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import KubeAPI
from joiner.leader import LeaderElector
from joiner.operator import Operator
from joiner.sim.scenario import LeaderStep

LEASE_NAMESPACE = "kube-system"
IDENTITY = "joiner-{}"  # each process has its own identity, as controller-runtime's

# Builds an operator whose writes are fenced by ``leads`` and attaches its feed.
StartOperator = Callable[[Callable[[], bool]], Operator]


@dataclass
class Replica:
    identity: str
    operator: Operator = field(init=False)
    elector: LeaderElector | None = None  # None while the controller runs alone
    paused_until: float | None = None

    def leads(self) -> bool:
        return self.elector is None or self.elector.leading

    def running(self, now: float) -> bool:
        return self.paused_until is None or now >= self.paused_until


class Replicas:
    """The live replicas, which one acts, and the reconciles of the run so far. Also
    the world's reconciler that ticks their electors (key: the replica's identity)."""

    name = "sim.leader-election"

    def __init__(self, start: StartOperator, lease_kube: KubeAPI, clock: Clock) -> None:
        self._start, self._lease_kube, self.clock = start, lease_kube, clock
        self._started = 0
        self._reconciles_of_dropped = 0
        self.live: list[Replica] = [self._new()]
        self.current = self.live[0]  # leads, or led last: what the observer reads
        # Wired by the engine: a tick of a replica's elector after a delay; a new leader.
        self.enqueue_tick: Callable[[str, float], None] = lambda identity, delay: None
        self.on_new_leader: Callable[[Replica], None] = lambda replica: None

    @property
    def elected(self) -> bool:
        """Whether the controller runs as replicas with leader election."""
        return self.current.elector is not None

    def _new(self) -> Replica:
        self._started += 1
        replica = Replica(IDENTITY.format(self._started))
        replica.operator = self._start(replica.leads)
        return replica

    def _elect(self, replica: Replica) -> None:
        replica.elector = LeaderElector(
            self._lease_kube, self.clock, replica.identity, LEASE_NAMESPACE
        )
        self.enqueue_tick(replica.identity, 0.0)

    # --- what the engine runs ------------------------------------------------------------

    def running(self) -> Iterator[Replica]:
        now = self.clock.now()
        return (r for r in self.live if r.running(now))

    def acting(self) -> Iterator[Replica]:
        return (r for r in self.running() if r.leads())

    def pump(self) -> int:
        return sum(r.operator.pump() for r in self.running())

    def run_due(self, proceed: Callable[[], bool]) -> int:
        ran = 0
        for replica in list(self.acting()):
            ran += replica.operator.manager.run_due(
                proceed=lambda r=replica: proceed() and r.leads()
            )
        return ran

    def next_due(self) -> float | None:
        times = [t for r in self.acting() if (t := r.operator.manager.next_due()) is not None]
        return min(times, default=None)

    def reconciles(self) -> int:
        """Reconciles of every process of the run."""
        live = sum(r.operator.manager.reconcile_count for r in self.live)
        return self._reconciles_of_dropped + live

    def leaderless(self) -> bool:
        return self.elected and next(self.acting(), None) is None

    # --- losses ---------------------------------------------------------------------------

    def go_elected(self) -> None:
        """Two replicas with leader election from now on: the running process takes
        the Lease at once, a second one starts and follows."""
        if self.elected:
            return
        self._elect(self.current)
        assert self.current.elector is not None
        self.current.elector.tick()
        second = self._new()
        self.live.append(second)
        self._elect(second)

    def replace(self, replica: Replica) -> Replica:
        """Drop ``replica``'s process (its memory with it; a Lease it holds stays until
        it expires) and start a fresh one in its place."""
        self._reconciles_of_dropped += replica.operator.manager.reconcile_count
        replica.operator.feed.stop()
        fresh = self._new()
        self.live[self.live.index(replica)] = fresh
        if replica.elector is not None:
            self._elect(fresh)
        if replica is self.current:
            self.current = fresh
        return fresh

    def lose_leader(self, step: LeaderStep) -> None:
        leader = next(self.acting(), self.current)
        if step.loss == "crash":
            self.replace(leader)
        else:
            leader.paused_until = self.clock.now() + step.pause_for

    # --- the electors' ticks ----------------------------------------------------------

    def reconcile(self, identity: str) -> Result:
        replica = next((r for r in self.live if r.identity == identity), None)
        if replica is None or replica.elector is None:
            return DONE  # its process is gone
        now = self.clock.now()
        if not replica.running(now):
            return Result(requeue_after=replica.paused_until - now)  # type: ignore[operator]
        replica.paused_until = None
        if replica.elector.tick() and replica is not self.current:
            self.current = replica
            self.on_new_leader(replica)
        return Result(requeue_after=replica.elector.retry_period)
