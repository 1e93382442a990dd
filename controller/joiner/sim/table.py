"""``joiner simulate --output table``: the run as a timeline a person reads top to bottom.

For every step: what happened during it (the NodeClaims launched, registered and
initialized, from their conditions; the events: nominations, disruptions, evictions),
then where things stand when it completes (each node with its type, zone, capacity type,
price, pods and how full it is, in the table ``joiner top`` draws; the cost per hour; each
pending pod and why it cannot be placed; each CapacityBuffer's chunks wanted and held,
and why not all are held; whether expectations held and settle steps settled). Then the
NodeClaims' lives, failed expectations and settle steps that did not settle.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from joiner.sim.result import (
    BufferView,
    EventRecord,
    NodeClaimRecord,
    NodeView,
    PendingPod,
    SimulationResult,
    Snapshot,
)
from joiner.top.render import format_price, node_table, to_text
from joiner.top.view import NOT_READY, READY, STATIC_POOL, NodeLine, Usage


def render_table(result: SimulationResult) -> str:
    lines = _header(result)
    events = sorted(result.events, key=lambda e: e.time)
    times = [e.time for e in events]
    stages = _stages(result.nodeclaims)
    stage_times = [stage[0] for stage in stages]
    previous_time = float("-inf")
    previous: Snapshot | None = None
    for step in result.steps:
        # the events after the last step's time, up to this one's (a slice, not a scan
        # of every event for every step)
        during = events[bisect_right(times, previous_time) : bisect_right(times, step.time)]
        title = f"Step {step.index}: {step.action}" + (f" ({step.name})" if step.name else "")
        lines += ["", f"{title}, done at {format_time(step.time)}"]
        lines += _stage_lines(
            stages[bisect_right(stage_times, previous_time) : bisect_right(stage_times, step.time)]
        )
        lines += _events(during)
        lines += _snapshot(step.snapshot, previous)
        if step.action == "expect":
            lines += _expect_outcome(step.failures)
        if step.action == "settle":
            lines += _settle_outcome(step.unsettled)
        previous_time, previous = step.time, step.snapshot
    after = events[bisect_right(times, previous_time) :]
    stages_after = stages[bisect_right(stage_times, previous_time) :]
    if after or stages_after:
        lines += ["", f"After the last step, until {format_time(result.final.time)}"]
        lines += _stage_lines(stages_after) + _events(after)
    final_title = f"Final state at {format_time(result.final.time)}"
    if previous is not None and _same_state(result.final, previous):
        lines += ["", f"{final_title}: as after step {result.steps[-1].index}."]
    else:
        lines += ["", final_title, *_snapshot(result.final, None)]
    lines += ["", "NodeClaims"]
    lines += _nodeclaims(result.nodeclaims)
    lines += ["", *_expectations(result), *_unsettled(result)]
    return "\n".join(lines) + "\n"


def format_time(seconds: float) -> str:
    """Virtual time since the start as h:mm:ss, with tenths when there are any."""
    whole, tenths = divmod(round(seconds * 10), 10)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" + (f".{tenths}" if tenths else "")


def _header(result: SimulationResult) -> list[str]:
    totals = result.totals
    return [
        f"Scenario {result.scenario}: {len(result.steps)} steps, "
        f"{format_time(result.final.time)} of virtual time",
        f"Cost ${totals.cost:.4f}; NodeClaims created {totals.nodeclaims_created}, "
        f"deleted {totals.nodeclaims_deleted}; evictions {totals.evictions}; "
        f"pod pending time {totals.pod_pending_seconds:.0f}s"
        + (f"; controller restarts {totals.restarts}" if totals.restarts else ""),
    ]


# A NodeClaim's stages as its conditions record them (the controller writes no Event for
# them): (time, name, stage, what it launched), in time order.
_Stage = tuple[float, str, str, str]


def _stages(records: Sequence[NodeClaimRecord]) -> list[_Stage]:
    stages: list[_Stage] = []
    for r in records:
        launched = " ".join(x for x in (r.instance_type, r.capacity_type, r.zone) if x)
        for time, stage, detail in (
            (r.launched_at, "Launched", launched),
            (r.registered_at, "Registered", ""),
            (r.initialized_at, "Initialized", ""),
        ):
            if time is not None:
                stages.append((time, r.name, stage, detail))
    return sorted(stages, key=lambda stage: stage[0])  # stable: a NodeClaim's in order


def _stage_lines(stages: Sequence[_Stage]) -> list[str]:
    if not stages:
        return []
    rows = [[format_time(time), name, stage, detail] for time, name, stage, detail in stages]
    return ["  NodeClaims:", *(line.rstrip() for line in _columns(rows, indent=4))]


def _events(events: Sequence[EventRecord]) -> list[str]:
    """One row per event; events that differ only in the object (e.g. ten pods nominated
    to the same NodeClaim at once) share a row that says how many objects."""
    if not events:
        return []
    groups: dict[tuple[float, str, str, str], list[str]] = {}
    for e in events:
        groups.setdefault((e.time, e.kind, e.reason, e.message), []).append(e.name)
    rows = [
        [format_time(time), _objects(kind, names), reason, message]
        for (time, kind, reason, message), names in groups.items()
    ]
    return ["  Events:", *_columns(rows, indent=4)]


def _objects(kind: str, names: Sequence[str]) -> str:
    return f"{kind}/{names[0]}" if len(names) == 1 else f"{len(names)} {kind}s"


def _snapshot(snapshot: Snapshot, previous: Snapshot | None) -> list[str]:
    if previous is not None and _same_state(snapshot, previous):
        return ["  No change."]
    managed = len(snapshot.managed_nodes)
    ready = sum(1 for n in snapshot.nodes if n.ready)
    lines = [
        f"  {_plural(len(snapshot.nodes), 'node')} ({managed} managed, {ready} ready), "
        f"{_plural(snapshot.pods_running, 'pod')} running, {len(snapshot.pending_pods)} pending, "
        f"cost {format_price(snapshot.cost_per_hour)}"
    ]
    if snapshot.nodes:  # the table `joiner top` draws
        nodes = [_node_line(n) for n in sorted(snapshot.nodes, key=lambda n: n.name)]
        lines += [f"    {line}" for line in to_text(node_table(nodes)).splitlines()]
    if snapshot.pending_pods:
        lines += ["  Pending pods, by reason:", *_pending(snapshot.pending_pods)]
    if snapshot.buffers:
        lines += ["  CapacityBuffers (chunks wanted / held):", *_buffers(snapshot.buffers)]
    return lines


def _same_state(a: Snapshot, b: Snapshot) -> bool:
    return (a.nodes, a.pending_pods, a.cost_per_hour, a.buffers) == (
        b.nodes,
        b.pending_pods,
        b.cost_per_hour,
        b.buffers,
    )


def _buffers(buffers: Sequence[BufferView]) -> list[str]:
    """One row per buffer: wanted / held, its Provisioning reason and, when short, why."""
    rows = [
        [
            buffer.name,
            buffer_counts(buffer),
            buffer.reason + (f": {buffer.why}" if buffer.why else ""),
        ]
        for buffer in buffers
    ]
    return _columns(rows, indent=4)


def buffer_counts(buffer: BufferView) -> str:
    """``wanted / held``; ``-`` wanted for a buffer that does not resolve."""
    wanted = "-" if buffer.wanted is None else str(buffer.wanted)
    return f"{wanted} / {buffer.held}"


def _pending(pods: Sequence[PendingPod], shown: int = 3) -> list[str]:
    """One line per distinct reason: how many pods, why, and the first few names."""
    by_reason: dict[str, list[str]] = {}
    for pod in sorted(pods, key=lambda p: p.name):
        by_reason.setdefault(pod.reason, []).append(pod.name)
    lines = []
    for reason, names in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])):
        listed = ", ".join(names[:shown])
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        lines.append(f"    {_plural(len(names), 'pod')}: {reason} ({listed}{more})")
    return lines


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _node_line(node: NodeView) -> NodeLine:
    return NodeLine(
        name=node.name,
        pool=(node.nodepool or "-") if node.managed else STATIC_POOL,
        instance_type=node.instance_type,
        zone=node.zone,
        capacity_type=node.capacity_type,
        price=node.price,
        status=READY if node.ready else NOT_READY,
        pods=len(node.pods),
        cpu=_usage(node, "cpu"),
        memory=_usage(node, "memory"),
    )


def _usage(node: NodeView, resource: str) -> Usage:
    return Usage(node.requested.get(resource, 0), node.allocatable.get(resource, 0))


def _expect_outcome(failures: Sequence[str]) -> list[str]:
    if not failures:
        return ["  Expectations held."]
    return ["  Expectations FAILED:", *(f"    {failure}" for failure in failures)]


def _settle_outcome(unsettled: str | None) -> list[str]:
    if unsettled is None:
        return ["  Settled."]
    return ["  NOT SETTLED:", f"    {unsettled}"]


def _nodeclaims(records: Sequence[NodeClaimRecord]) -> list[str]:
    if not records:
        return ["  (none)"]
    header = ["NAME", "POOL", "TYPE", "ZONE", "CAPACITY", "PRICE", "CREATED", "LAUNCHED"]
    rows = [[*header, "READY", "DELETED", "DISRUPTION"]]
    for record in sorted(records, key=lambda r: (r.created_at, r.name)):
        rows.append(
            [
                record.name,
                record.nodepool,
                record.instance_type or "-",
                record.zone or "-",
                record.capacity_type or "-",
                format_price(record.price),
                format_time(record.created_at),
                _optional_time(record.launched_at),
                _optional_time(record.initialized_at),
                _optional_time(record.deleted_at),
                record.disruption_reason or "-",
            ]
        )
    return _columns(rows, indent=2)


def _expectations(result: SimulationResult) -> list[str]:
    checked = sum(1 for step in result.steps if step.action == "expect")
    failures = result.failures
    if not failures:
        return [f"Expectations: all {checked} expect steps held."]
    return [f"Expectations: {len(failures)} failed:", *(f"  {f}" for f in failures)]


def _unsettled(result: SimulationResult) -> list[str]:
    unsettled = result.unsettled
    if not unsettled:
        return []
    return [
        f"Settle: {_plural(len(unsettled), 'step')} did not settle:",
        *(f"  {u}" for u in unsettled),
    ]


def _optional_time(seconds: float | None) -> str:
    return "-" if seconds is None else format_time(seconds)


def _columns(rows: Sequence[Sequence[str]], indent: int) -> list[str]:
    """Left-aligned columns two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    pad = " " * indent
    return [
        pad + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  " + row[-1]
        for row in rows
    ]
