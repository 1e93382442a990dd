"""When the simulated controller is lost: restarted (the scenario's ``restart`` step),
or, running as two replicas, its leader crashed or paused (the ``leader`` step).

A restart drops the operator with everything it holds in memory (cluster state,
work queues, caches, the provisioning batch, disruption commands, the cloud
provider's insufficient-capacity memory) and starts a fresh one against the same
Kubernetes objects and the same cloud, as a crashed and rescheduled controller pod
would. A loss always happens between two reconciles: the engine asks ``proceed``
before each of the controller's reconciles and carries out the ``due`` losses.
"""

from __future__ import annotations

from collections.abc import Callable

from joiner.sim.scenario import ControllerLossStep, RestartStep

# (key, delay, action): run ``action`` after ``delay`` virtual seconds.
Schedule = Callable[[str, float, Callable[[], None]], None]

# A restart asked for outside the steps (tests interrupt the controller where they like).
RESTART_NOW = RestartStep(index=-1, name="requested")


class Restarts:
    """Which losses are asked for, against the reconciles of every replica and process
    of the run so far (``reconciles``, which the engine counts)."""

    def __init__(self) -> None:
        self.due: list[ControllerLossStep] = []
        self.count = 0  # restarts carried out
        self._at_reconcile: list[tuple[int, ControllerLossStep]] = []

    def plan(self, step: ControllerLossStep, schedule: Schedule, reconciles: int) -> None:
        """Arm the step's loss; ``reconciles``: the run's count so far."""
        key = f"{step.action}/{step.index}"
        if step.after_reconciles is not None:
            self._at_reconcile.append((reconciles + step.after_reconciles, step))
        elif step.at is not None:
            schedule(key, step.at, lambda: self.due.append(step))
        elif step.every is not None:
            self._every(key, step, step.every, schedule)
        else:
            self.due.append(step)

    def _every(self, key: str, step: ControllerLossStep, period: float, schedule: Schedule) -> None:
        def fire() -> None:
            self.due.append(step)
            schedule(key, period, fire)

        schedule(key, period, fire)

    def request(self) -> None:
        """A restart now, before the controller's next reconcile."""
        self.due.append(RESTART_NOW)

    def proceed(self, reconciles: int) -> bool:
        """May the controller (the run's ``reconciles`` done so far) run one more?"""
        reached = [(n, s) for n, s in self._at_reconcile if reconciles >= n]
        for entry in reached:
            self._at_reconcile.remove(entry)
            self.due.append(entry[1])
        return not self.due

    def take(self) -> list[ControllerLossStep]:
        """The losses due now, to carry out (once each)."""
        due, self.due = self.due, []
        self.count += sum(1 for step in due if isinstance(step, RestartStep))
        return due
