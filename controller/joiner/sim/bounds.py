"""How far one simulation may go, so that none runs out of memory or runs for ever.

Virtual time is capped when the scenario is read (``scenario.MAX_VIRTUAL_SECONDS``), and
so are the pods its workloads ask for (``MAX_PODS``): more is a field error, exit 2.
While it runs, a ``Budget`` bounds the wall time and the steps (watch events delivered
plus reconciles run) of the whole run, the steps of one virtual instant (a loop that
never settles), and the NodeClaims alive at once. Reaching a bound raises
``BoundReached`` (exit 3, "did not converge") naming the scenario step it happened in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from joiner.api.duration import format_duration

# Pods the workloads of a scenario may ask for at any step (replicas, Job parallelism,
# bare pods): about 70 MB of memory per 1,000 pods with their nodes and events.
MAX_PODS = 50_000
# NodeClaims alive at once: more means pods that each want a node of their own beyond
# any cluster the simulator is meant for, or a loop creating NodeClaims.
MAX_NODECLAIMS = 10_000
DEFAULT_WALL_SECONDS = 600.0
MAX_WALL_SECONDS = 24 * 3600.0
DEFAULT_STEPS = 10_000_000
MAX_STEPS = 1_000_000_000
# The steps of one instant: a burst of n pods takes about 6n (created, seen, bound,
# started, each watched twice); far more means controllers undoing each other.
INSTANT_STEPS_BASE = 200_000
INSTANT_STEPS_PER_POD = 20

EXIT_CODE = 3


def too_many_pods(count: int) -> str:
    """The field error for a pod count beyond ``MAX_PODS``."""
    return f"must be at most {MAX_PODS:,} (the simulator's limit on pods), got {count:,}"


class BoundReached(RuntimeError):
    """The run reached one of its bounds before the scenario ended (it did not converge
    within them); the message names the step and the bound."""

    exit_code = EXIT_CODE


@dataclass(frozen=True)
class Limits:
    """The bounds a scenario may set (``spec.limits``)."""

    wall_seconds: float = DEFAULT_WALL_SECONDS
    steps: int = DEFAULT_STEPS


class Budget:
    """What a run has spent against its limits; ``charge`` raises when one is exceeded."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self.started = clock()
        self.steps = 0
        self._instant_steps = 0

    def wall_seconds(self) -> float:
        return self._clock() - self.started

    def new_instant(self) -> None:
        self._instant_steps = 0

    def charge(self, steps: int, pods: int, nodeclaims: int) -> str | None:
        """Count ``steps`` more; the bound they exceed, given the pods and NodeClaims
        that exist now (None while all hold)."""
        self.steps += steps
        self._instant_steps += steps
        if self.steps > self.limits.steps:
            return f"the step budget (spec.limits.steps: {self.limits.steps:,}) ran out"
        instant_cap = INSTANT_STEPS_BASE + INSTANT_STEPS_PER_POD * pods
        if self._instant_steps > instant_cap:
            return (
                f"{self._instant_steps:,} steps without virtual time moving (at most "
                f"{instant_cap:,} with {pods:,} pods): controllers keep undoing each other"
            )
        if nodeclaims > MAX_NODECLAIMS:
            return f"{nodeclaims:,} NodeClaims exist at once, more than the {MAX_NODECLAIMS:,} cap"
        if self.wall_seconds() > self.limits.wall_seconds:
            bound = format_duration(self.limits.wall_seconds)
            return f"the wall-time bound (spec.limits.wallTime: {bound}) passed"
        return None
