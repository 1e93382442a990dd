"""``--output table``: the timeline a person reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from joiner.sim.result import EventRecord, PendingPod, Snapshot, StepRecord
from joiner.sim.table import format_time, render_table
from sim_builders import node

# The whole rendering of conftest's sample run (wider than a source line, so in a file).
EXPECTED = (Path(__file__).parent / "sample_table.txt").read_text(encoding="utf-8")


def test_sample_run_renders_as_timeline(sample_result):
    assert render_table(sample_result) == EXPECTED


def test_events_after_the_last_step_and_a_changed_final_state(sample_result):
    sample_result.steps[2].failures = []
    sample_result.events.append(
        EventRecord(80.0, "NodeClaim", "default-x7k2p", "Disrupted", "expired")
    )
    sample_result.final = Snapshot(time=90.0, cost_per_hour=0.0)

    text = render_table(sample_result)

    assert text.endswith(
        "Step 2: expect, done at 0:01:05\n"
        "  No change.\n"
        "  Expectations held.\n"
        "\n"
        "After the last step, until 0:01:30\n"
        "  Events:\n"
        "    0:01:20  NodeClaim/default-x7k2p  Disrupted  expired\n"
        "\n"
        "Final state at 0:01:30\n"
        "  0 nodes (0 managed, 0 ready), 0 pods running, 0 pending, cost $0.0000/h\n"
        "\n"
        "NodeClaims\n"
        "  NAME           POOL     TYPE       ZONE        CAPACITY  PRICE      CREATED  LAUNCHED   "
        "READY      DELETED  DISRUPTION\n"
        "  default-x7k2p  default  c5.xlarge  us-east-1a  spot      $0.0680/h  0:00:01  0:00:01.5  "
        "0:00:41.5  -        -\n"
        "\n"
        "Expectations: all 1 expect steps held.\n"
    )


def test_pending_pods_grouped_by_reason_most_common_first(sample_result):
    pending = [PendingPod(f"default/web-{i}", "topology spread: zone skew") for i in range(2)]
    pending.append(PendingPod("default/gpu", "no instance type has nvidia.com/gpu"))
    snapshot = Snapshot(time=5.0, cost_per_hour=0.068, nodes=[node("n")], pending_pods=pending)
    sample_result.steps = [StepRecord(0, "apply", 5.0, snapshot)]
    sample_result.nodeclaims = []
    sample_result.events = []

    lines = render_table(sample_result).splitlines()

    start = lines.index("  Pending pods, by reason:")
    assert lines[start + 1 : start + 3] == [
        "    2 pods: topology spread: zone skew (default/web-0, default/web-1)",
        "    1 pod: no instance type has nvidia.com/gpu (default/gpu)",
    ]
    assert lines[lines.index("NodeClaims") + 1] == "  (none)"


def test_events_that_differ_only_in_the_object_share_a_row(sample_result):
    nominated = "Pod should schedule on: nodeclaim/default-x7k2p"
    sample_result.events[1:1] = [
        EventRecord(1.5, "Pod", f"app-{i}", "Nominated", nominated) for i in range(1, 5)
    ]
    sample_result.events.append(EventRecord(41.5, "Pod", "app-9", "Nominated", nominated))

    lines = render_table(sample_result).splitlines()

    start = lines.index("  Events:")
    assert lines[start + 1 : start + 5] == [
        f"    0:00:01    Pod/app-1         Nominated  {nominated}",
        f"    0:00:01.5  4 Pods            Nominated  {nominated}",
        "    0:00:41.5  Node/ip-10-0-1-1  Ready      node is ready",
        f"    0:00:41.5  Pod/app-9         Nominated  {nominated}",
    ]


def test_format_time():
    assert [format_time(t) for t in (0, 59.96, 61.25, 3600 * 27 + 5)] == [
        "0:00:00",
        "0:01:00",
        "0:01:01.2",
        "27:00:05",
    ]


def test_a_settle_step_that_did_not_settle_is_flagged_and_summed_up(sample_result):
    message = "spec.steps[1] (wait): settle: did not settle within 1m5s: pending pods: 4"
    sample_result.steps[1].unsettled = message

    lines = render_table(sample_result).splitlines()

    step_2 = lines.index("Step 2: expect, done at 0:01:05")
    assert lines[step_2 - 3 : step_2] == ["  NOT SETTLED:", f"    {message}", ""]
    assert lines[-2:] == ["Settle: 1 step did not settle:", f"  {message}"]


def test_a_nodeclaim_launched_after_the_last_step_is_in_the_timeline(sample_result):
    late = replace(sample_result.nodeclaims[0], name="default-late", created_at=70.0)
    late.launched_at, late.registered_at, late.initialized_at = 71.0, 100.0, None
    sample_result.nodeclaims.append(late)
    sample_result.final = replace(sample_result.final, time=120.0)

    lines = render_table(sample_result).splitlines()

    start = lines.index("After the last step, until 0:02:00")
    assert lines[start + 1 : start + 4] == [
        "  NodeClaims:",
        "    0:01:11  default-late  Launched    c5.xlarge spot us-east-1a",
        "    0:01:40  default-late  Registered",
    ]
    assert lines[start + 4] == ""  # not initialized: no line, and no events after the step
