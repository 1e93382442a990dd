"""``joiner simulate --report DIR``: an HTML page with plots of the run.

DIR gets ``index.html`` and three PNG plots it embeds: instances by type over time
(stacked), pending pods over time and cost per hour over time; below them the steps,
the NodeClaims, the events and (when there are any) the CapacityBuffers' chunks wanted
and held as tables. Managed instances and cost come from the NodeClaim records (exact
launch and delete times); static nodes, pending pods and buffers from the snapshots
taken after each step.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from joiner.sim.result import (
    BufferView,
    NodeClaimRecord,
    NodeView,
    SimulationResult,
    Snapshot,
    cost_per_hour,
)
from joiner.sim.table import format_price, format_time

NODES_PLOT = "nodes.png"
PENDING_PLOT = "pending.png"
COST_PLOT = "cost.png"
INDEX = "index.html"
STATIC_SUFFIX = " (static)"


class ReportError(Exception):
    """The report cannot be written (no plotting library, unwritable directory)."""


@dataclass
class TimeSeries:
    times: list[float]  # seconds since the start, ascending
    values: dict[str, list[float]]  # one value per time for each series


def write_report(result: SimulationResult, directory: str | Path) -> Path:
    """Write the report into ``directory`` (created when missing); returns index.html."""
    pyplot = _pyplot()
    out = Path(directory)
    axis = TimeAxis.for_run(result)
    try:
        out.mkdir(parents=True, exist_ok=True)
        _plot_nodes(pyplot, instances_by_type(result), axis, out / NODES_PLOT)
        pending = pending_pods(result)
        _plot_line(pyplot, pending, axis, ("pending pods", "pods", True), out / PENDING_PLOT)
        cost = cost_over_time(result)
        _plot_line(pyplot, cost, axis, ("cost per hour", "USD per hour", False), out / COST_PLOT)
        index = out / INDEX
        index.write_text(render_html(result), encoding="utf-8")
    except OSError as error:
        raise ReportError(f"--report {directory}: cannot write: {error.strerror}") from None
    return index


@dataclass
class TimeAxis:
    """Minutes for short runs, hours for long ones; marks where each step ended."""

    unit: float  # seconds per axis unit
    label: str
    marks: dict[float, str]  # step end time (seconds) -> step indices, e.g. "1,2"
    end: float  # seconds: every plot spans [0, end] so that they line up

    @classmethod
    def for_run(cls, result: SimulationResult) -> TimeAxis:
        marks: dict[float, list[str]] = {}
        for step in result.steps:
            marks.setdefault(step.time, []).append(str(step.index))
        unit, name = (3600.0, "hours") if result.final.time >= 3 * 3600 else (60.0, "minutes")
        return cls(
            unit,
            f"virtual time ({name}); dotted lines: end of step #",
            {time: ",".join(indices) for time, indices in marks.items()},
            result.final.time,
        )

    def scale(self, times: Sequence[float]) -> list[float]:
        return [t / self.unit for t in times]


# --- series ----------------------------------------------------------------------


def instances_by_type(result: SimulationResult) -> TimeSeries:
    """Instances of each type at every time the count can change. Managed instances
    count from launch to deletion; static nodes are labelled ``TYPE (static)``."""
    times = _breakpoints(result)
    per_time = [_type_counts(result, t) for t in times]
    # Static nodes first, so they form the base of the stacked plot.
    names = sorted(
        {name for counts in per_time for name in counts},
        key=lambda name: (not name.endswith(STATIC_SUFFIX), name),
    )
    return TimeSeries(times, {name: [c.get(name, 0) for c in per_time] for name in names})


def cost_over_time(result: SimulationResult) -> TimeSeries:
    times = _breakpoints(result)
    costs = []
    for t in times:
        managed = sum(c.price for c in result.nodeclaims if c.price is not None and _running(c, t))
        costs.append(managed + cost_per_hour(_static_nodes_at(result, t)))
    return TimeSeries(times, {"cost per hour": costs})


def pending_pods(result: SimulationResult) -> TimeSeries:
    """Pending pods after each step; of several snapshots at one time, the last counts."""
    counts = {s.time: len(s.pending_pods) for s in _snapshots(result)}
    return TimeSeries(list(counts), {"pending pods": list(counts.values())})


def _breakpoints(result: SimulationResult) -> list[float]:
    end = result.final.time
    times = {0.0, end, *(s.time for s in _snapshots(result))}
    for claim in result.nodeclaims:
        times.update(t for t in (claim.launched_at, claim.deleted_at) if t is not None)
    return sorted(t for t in times if 0.0 <= t <= end)


def _type_counts(result: SimulationResult, t: float) -> dict[str, int]:
    counts: dict[str, int] = {}
    for claim in result.nodeclaims:
        if claim.instance_type and _running(claim, t):
            counts[claim.instance_type] = counts.get(claim.instance_type, 0) + 1
    for node in _static_nodes_at(result, t):
        name = f"{node.instance_type or 'unknown'}{STATIC_SUFFIX}"
        counts[name] = counts.get(name, 0) + 1
    return counts


def _running(claim: NodeClaimRecord, t: float) -> bool:
    launched = claim.launched_at is not None and claim.launched_at <= t
    return launched and (claim.deleted_at is None or claim.deleted_at > t)


def _snapshots(result: SimulationResult) -> list[Snapshot]:
    return sorted([*(s.snapshot for s in result.steps), result.final], key=lambda s: s.time)


def _static_nodes_at(result: SimulationResult, t: float) -> list[NodeView]:
    """Unmanaged nodes of the latest snapshot at or before t (the first one before it)."""
    snapshots = _snapshots(result)
    current = snapshots[0]
    for snapshot in snapshots:
        if snapshot.time <= t:
            current = snapshot
    return [n for n in current.nodes if not n.managed]


# --- plots -----------------------------------------------------------------------


def _pyplot() -> ModuleType:
    # Imported here, not at module level: matplotlib is needed only for --report and
    # is not a dependency of the controller image.
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise ReportError("--report needs matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def _plot_nodes(pyplot: ModuleType, series: TimeSeries, axis: TimeAxis, path: Path) -> None:
    figure, axes = pyplot.subplots(figsize=(10, 3.8))
    x = axis.scale(series.times)
    if series.values:
        names = list(series.values)
        axes.stackplot(x, *(series.values[n] for n in names), labels=names, step="post")
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        axes.text(0.5, 0.5, "no nodes", ha="center", va="center", transform=axes.transAxes)
    _finish(pyplot, figure, axes, axis, ("instances by type", "instances", True))
    figure.savefig(path, format="png", dpi=100)
    pyplot.close(figure)


def _plot_line(
    pyplot: ModuleType,
    series: TimeSeries,
    axis: TimeAxis,
    labels: tuple[str, str, bool],
    path: Path,
) -> None:
    figure, axes = pyplot.subplots(figsize=(10, 2.8))
    x = axis.scale(series.times)
    for values in series.values.values():
        (line,) = axes.step(x, values, where="post")
        axes.plot(x, values, "o", markersize=3, color=line.get_color())
    _finish(pyplot, figure, axes, axis, labels)
    figure.savefig(path, format="png", dpi=100)
    pyplot.close(figure)


def _finish(
    pyplot: ModuleType, figure: Any, axes: Any, axis: TimeAxis, labels: tuple[str, str, bool]
) -> None:
    """Titles, the step marks, and whole-number ticks for counts."""
    title, ylabel, integer = labels
    for time, indices in axis.marks.items():
        at = time / axis.unit
        axes.axvline(at, linestyle=":", color="grey", alpha=0.6, linewidth=0.8)
        axes.annotate(
            indices,
            (at, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize="x-small",
            color="grey",
            ha="center",
            va="bottom",
        )
    axes.set_title(title, pad=14)
    axes.set_ylabel(ylabel)
    axes.set_xlabel(axis.label)
    axes.set_ylim(bottom=0)
    if axis.end > 0:
        axes.set_xlim(0, axis.end / axis.unit)
    if integer:
        axes.yaxis.set_major_locator(pyplot.MaxNLocator(integer=True))
    axes.grid(alpha=0.3)
    figure.tight_layout()


# --- page ------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: 0.2em; }
.summary span { display: inline-block; margin-right: 1.5em; }
img { max-width: 100%; display: block; margin: 1em 0; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; margin-bottom: 2em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; }
th { background: #f4f4f4; }
.failed { color: #b00020; }
.ok { color: #1b7f3b; }
"""


REBALANCED = "Rebalanced"  # the rebalancer's event on the NodePool of each move


def render_html(result: SimulationResult) -> str:
    title = f"Simulation: {result.scenario}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        _summary(result),
        _failures(result),
        "<h2>Over time</h2>",
        f'<img src="{NODES_PLOT}" alt="instances by type over time">',
        f'<img src="{PENDING_PLOT}" alt="pending pods over time">',
        f'<img src="{COST_PLOT}" alt="cost per hour over time">',
        "<h2>Steps</h2>",
        _steps_table(result),
        "<h2>NodeClaims</h2>",
        _nodeclaims_table(result),
        "<h2>Events</h2>",
        _events_table(result),
        *_buffers_section(result),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _summary(result: SimulationResult) -> str:
    totals = result.totals
    items = [
        f"virtual time {format_time(result.final.time)}",
        f"total cost ${totals.cost:.4f}",
        f"NodeClaims created {totals.nodeclaims_created}, deleted {totals.nodeclaims_deleted}",
        f"evictions {totals.evictions}",
        f"pod pending time {totals.pod_pending_seconds:.0f}s",
    ]
    if totals.restarts:
        items.append(f"controller restarts {totals.restarts}")
    moves = [e for e in result.events if e.reason == REBALANCED and e.kind == "NodePool"]
    if moves:
        items.append(f"rebalance moves {len(moves)} (see the Rebalanced events)")
    return '<p class="summary">' + "".join(f"<span>{_e(i)}</span>" for i in items) + "</p>"


def _failures(result: SimulationResult) -> str:
    failures = result.failures
    if not failures:
        parts = ['<p class="ok">All expectations held.</p>']
    else:
        items = "".join(f"<li>{_e(f)}</li>" for f in failures)
        parts = [
            f'<div class="failed"><p>{len(failures)} expectations failed:</p><ul>{items}</ul></div>'
        ]
    if result.unsettled:
        items = "".join(f"<li>{_e(u)}</li>" for u in result.unsettled)
        parts.append(
            f'<div class="failed"><p>Settle steps that did not settle:</p><ul>{items}</ul></div>'
        )
    return "\n".join(parts)


def _steps_table(result: SimulationResult) -> str:
    rows = []
    for step in result.steps:
        snapshot = step.snapshot
        outcome = ""
        if step.action == "expect":
            outcome = "failed" if step.failures else "held"
        elif step.action == "settle":
            outcome = "did not settle" if step.unsettled else "settled"
        rows.append(
            [
                str(step.index),
                step.name or "",
                step.action,
                format_time(step.time),
                str(len(snapshot.nodes)),
                str(len(snapshot.managed_nodes)),
                str(snapshot.pods_running),
                str(len(snapshot.pending_pods)),
                format_price(snapshot.cost_per_hour),
                outcome,
            ]
        )
    header = ["#", "name", "action", "done at", "nodes", "managed", "running", "pending"]
    return _table([*header, "cost", "outcome"], rows)


def _nodeclaims_table(result: SimulationResult) -> str:
    rows = [
        [
            c.name,
            c.nodepool,
            c.instance_type or "",
            c.zone or "",
            c.capacity_type or "",
            format_price(c.price),
            format_time(c.created_at),
            "" if c.initialized_at is None else format_time(c.initialized_at),
            "" if c.deleted_at is None else format_time(c.deleted_at),
            c.disruption_reason or "",
        ]
        for c in sorted(result.nodeclaims, key=lambda c: (c.created_at, c.name))
    ]
    header = ["name", "pool", "type", "zone", "capacity", "price", "created", "ready"]
    return _table([*header, "deleted", "disruption"], rows)


def _events_table(result: SimulationResult) -> str:
    rows = [
        [format_time(e.time), e.kind, e.name, e.reason, e.message]
        for e in sorted(result.events, key=lambda e: e.time)
    ]
    return _table(["time", "kind", "name", "reason", "message"], rows)


def _buffers_section(result: SimulationResult) -> list[str]:
    """Each CapacityBuffer's chunks wanted and held after every step where they changed
    (and at the end), with why not all are held; nothing for a run without buffers."""
    rows: list[list[str]] = []
    shown: dict[str, BufferView] = {}
    marked = [(str(step.index), step.snapshot) for step in result.steps]
    for index, snapshot in [*marked, ("end", result.final)]:
        for buffer in snapshot.buffers:
            if shown.get(buffer.name) == buffer:
                continue
            shown[buffer.name] = buffer
            wanted = "" if buffer.wanted is None else str(buffer.wanted)
            row = [index, format_time(snapshot.time), buffer.name, wanted, str(buffer.held)]
            rows.append([*row, buffer.reason, buffer.why])
    if not rows:
        return []
    header = ["step", "at", "buffer", "chunks wanted", "held", "reason", "why not all held"]
    return ["<h2>CapacityBuffers</h2>", _table(header, rows)]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
