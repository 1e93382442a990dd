"""Interruption handling (issue 9): a burst of spot warnings, and message parsing.

Burst: examples/spot-interruption.yaml, 100 spot nodes warned at once, every warning
the real EventBridge event through the embedded rule and SQS queue. Reported: the wall
time the interruption controller spends receiving, handling and deleting the 100
messages; virtual seconds from the warning until all 100 replacements are launched and
until every pod runs again; where the replacements went.

Parsing: 10,000 envelopes of the five handled kinds through ``parse``.

Targets (full run): the 100 messages handled in under 2 s of wall time, every
replacement launched within 1 virtual second of the warning (they are launched as soon
as the pods are evicted, not when the instance dies), every pod running again within
60 virtual seconds (launch 30 s + ready 10 s + the batch window), no replacement on the
interrupted offering, parsing under 50 us per message. Quick mode runs the same burst
and checks, parses 1,000 envelopes, and does not judge wall-time targets.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from joiner.controllers.interruption.messages import parse
from joiner.controllers.runtime import Result
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

from benchmarks import quick_mode

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "spot-interruption.yaml"
INTERRUPTED_ZONE = "us-east-1a"
MAX_HANDLING_SECONDS = 2.0
MAX_LAUNCH_DELAY = 1.0
MAX_RECOVERY = 60.0
MAX_PARSE_MICROSECONDS = 50.0

ENVELOPES = [
    ("aws.ec2", "EC2 Spot Instance Interruption Warning", {"instance-action": "terminate"}),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation", {}),
    ("aws.ec2", "EC2 Instance State-change Notification", {"state": "stopping"}),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", {}),
]


def burst() -> tuple[list[str], dict[str, float]]:
    """Run the example, timing the interruption controller's reconciles."""
    simulation = Simulation(load_scenario(EXAMPLE))
    controller = simulation.operator.interruption
    assert controller is not None
    spent = [0.0]
    reconcile = controller.reconcile

    def timed(key: str) -> Result:
        start = time.perf_counter()
        try:
            return reconcile(key)
        finally:
            spent[0] += time.perf_counter() - start

    controller.reconcile = timed  # type: ignore[method-assign]
    result = simulation.run()
    failures = [f for step in result.steps for f in step.failures]
    warned = next(s.time for s in result.steps if s.action == "interrupt")
    interrupted = [c for c in result.nodeclaims if c.disruption_reason == "Interrupted"]
    replacements = [c for c in result.nodeclaims if warned <= c.created_at < warned + 120]
    settle = next(s for s in result.steps if s.index > 2 and s.action == "settle")
    figures = {
        "handling_seconds": spent[0],
        "messages": float(controller.handled),
        "interrupted": float(len(interrupted)),
        "replacements": float(len(replacements)),
        "launch_delay": max((c.created_at - warned for c in replacements), default=-1.0),
        "recovery": settle.time - warned,
        "on_interrupted_offering": float(
            sum(1 for c in replacements if c.zone == INTERRUPTED_ZONE)
        ),
    }
    return failures, figures


def parse_cost(count: int) -> float:
    """Microseconds per parse over ``count`` envelopes of the handled kinds."""
    bodies = []
    for index in range(count):
        source, detail_type, extra = ENVELOPES[index % len(ENVELOPES)]
        detail = {"instance-id": f"i-{index:017x}", **extra}
        bodies.append(json.dumps({"source": source, "detail-type": detail_type, "detail": detail}))
    start = time.perf_counter()
    for body in bodies:
        parse(body)
    return (time.perf_counter() - start) / count * 1e6


def main() -> int:
    quick = quick_mode()
    failures, figures = burst()
    per_message = parse_cost(1_000 if quick else 10_000)
    handled, seconds = figures["messages"], figures["handling_seconds"]
    print(f"burst: {handled:.0f} messages handled in {seconds:.3f} s")
    print(
        f"  {figures['interrupted']:.0f} NodeClaims interrupted, {figures['replacements']:.0f} "
        f"replacements, last launched {figures['launch_delay']:.1f} s after the warning, "
        f"all pods running after {figures['recovery']:.1f} s (virtual)"
    )
    print(f"  replacements on the interrupted offering: {figures['on_interrupted_offering']:.0f}")
    print(f"parse: {per_message:.1f} us per message")
    problems = [f"expectation: {f}" for f in failures]
    if figures["messages"] != 100 or figures["interrupted"] != 100:
        problems.append("not every warning was handled")
    if figures["replacements"] != 100 or figures["on_interrupted_offering"] != 0:
        problems.append("replacements missing or on the interrupted offering")
    if not 0 <= figures["launch_delay"] <= MAX_LAUNCH_DELAY:
        problems.append(f"replacements launched later than {MAX_LAUNCH_DELAY} s")
    if figures["recovery"] > MAX_RECOVERY:
        problems.append(f"pods running again later than {MAX_RECOVERY} s")
    if not quick and figures["handling_seconds"] > MAX_HANDLING_SECONDS:
        problems.append(f"handling took more than {MAX_HANDLING_SECONDS} s")
    if not quick and per_message > MAX_PARSE_MICROSECONDS:
        problems.append(f"parsing slower than {MAX_PARSE_MICROSECONDS} us")
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
