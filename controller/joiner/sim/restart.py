"""When the simulated operator is restarted (the scenario's ``restart`` step).

A restart drops the operator with everything it holds in memory (cluster state,
work queues, caches, the provisioning batch, disruption commands, the cloud
provider's insufficient-capacity memory) and starts a fresh one against the same
Kubernetes objects and the same cloud, as a crashed and rescheduled controller pod
would. It always happens between two reconciles: the engine asks ``proceed`` before
each of the operator's reconciles and restarts when ``due``.
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.sim.scenario import RestartStep

# (key, delay, action): run ``action`` after ``delay`` virtual seconds.
Schedule = Callable[[str, float, Callable[[], None]], None]


class Restarts:
    """Which restarts are asked for, and how many reconciles operators ran so far."""

    def __init__(self) -> None:
        self.due = False
        self.count = 0
        self._reconciles_of_dropped = 0  # by the operators already restarted
        self._at_reconcile: int | None = None  # restart once this many have run in all

    def plan(self, step: RestartStep, schedule: Schedule, reconciles: int) -> None:
        """Arm the step's restart; ``reconciles``: the running operator's count so far."""
        key = f"restart/{step.index}"
        if step.after_reconciles is not None:
            self._at_reconcile = self.total(reconciles) + step.after_reconciles
        elif step.at is not None:
            schedule(key, step.at, self.request)
        elif step.every is not None:
            self._every(key, step.every, schedule)
        else:
            self.request()

    def _every(self, key: str, period: float, schedule: Schedule) -> None:
        def fire() -> None:
            self.request()
            schedule(key, period, fire)

        schedule(key, period, fire)

    def request(self) -> None:
        self.due = True

    def total(self, reconciles: int) -> int:
        """Reconciles of every operator of the run, given the running one's count."""
        return self._reconciles_of_dropped + reconciles

    def proceed(self, reconciles: int) -> bool:
        """May the running operator (``reconciles`` done so far) run one more?"""
        if self._at_reconcile is not None and self.total(reconciles) >= self._at_reconcile:
            self._at_reconcile = None
            self.due = True
        return not self.due

    def restarted(self, reconciles: int) -> None:
        """The operator that ran ``reconciles`` was dropped and a fresh one started."""
        self._reconciles_of_dropped += reconciles
        self.count += 1
        self.due = False
