"""Draw a cluster view with rich: a title line, one row per node (CPU and memory
requests against allocatable as bars), then the totals per pool and for the cluster.

On a terminal the frame has colour and fits the terminal's width: on a narrow one the
node table leaves out the zone, then the capacity type, then the instance type, then
the bars (their figures stay), and only then cuts the names short. As text (``--once``
into a pipe, the simulator's table) it has no colour and each table its natural width,
whatever the terminal: a capture is stable. The same cells serve both.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from joiner.top.view import (
    DELETING,
    LAUNCHING,
    NOT_READY,
    NodeLine,
    PoolTotal,
    Usage,
    pool_totals,
    total,
)

GIB = 2**30
BAR_WIDTH = 6
FULL, EMPTY = "█", "░"
TEXT_WIDTH = 1000  # wider than any table: text output is never wrapped
CLUSTER = "(cluster)"
NODE_HEADER = ("NAME", "POOL", "TYPE", "ZONE", "CAPACITY", "PRICE", "STATUS", "PODS")
BARS = "bars"
# Left out, in this order, of a node table wider than the terminal: where a node runs
# matters less than its name, price and load; the bars go last (their figures stay).
NARROWER = ("ZONE", "CAPACITY", "TYPE", BARS)
NAME_MIN_WIDTH = 10  # a name cut shorter than this no longer tells nodes apart
Cell = Text | str
STATUS_STYLE = {LAUNCHING: "cyan", DELETING: "red", NOT_READY: "yellow"}


def frame(
    lines: Sequence[NodeLine],
    pools: Iterable[str] = (),
    title: str = "",
    notice: str = "",
    width: int | None = None,
) -> Group:
    """The whole view: title and counts, the notice if any (a watch failing), the nodes,
    the pools' and cluster's totals. ``width``: the terminal's (None: natural width)."""
    cluster = total(CLUSTER, lines)
    return Group(
        Text(_summary(title, lines, cluster)),
        *([Text(notice, style="bold red")] if notice else []),
        fitted_node_table(lines, width),
        Text(""),
        pool_table([*pool_totals(lines, pools), cluster]),
    )


def fitted_node_table(lines: Sequence[NodeLine], width: int | None) -> Table:
    """The node table with as much of ``NARROWER`` as ``width`` leaves room for."""
    for dropped in range(len(NARROWER) + 1):
        table = node_table(lines, hidden=NARROWER[:dropped])
        if width is None or _natural_width(table) <= width:
            break
    return table


def node_table(lines: Sequence[NodeLine], hidden: Sequence[str] = ()) -> Table:
    """One row per node; ``hidden``: headers of ``NARROWER`` to leave out."""
    headers = [*NODE_HEADER, "CPU", "MEMORY"]
    shown = [i for i, header in enumerate(headers) if header not in hidden]
    rows = [
        [
            line.name,
            line.pool,
            line.instance_type or "-",
            line.zone or "-",
            line.capacity_type or "-",
            format_price(line.price),
            Text(line.status, style=STATUS_STYLE.get(line.status, "")),
            str(line.pods),
            *_usage_cells(line, bars=BARS not in hidden),
        ]
        for line in lines
    ]
    return _table([headers[i] for i in shown], [[row[i] for i in shown] for row in rows], 2)


def pool_table(totals: Sequence[PoolTotal]) -> Table:
    rows = [
        [
            Text(row.pool, style="bold" if row.pool == CLUSTER else ""),
            str(row.nodes),
            str(row.pods),
            format_price(row.price),
            usage_cell(row.cpu, 1, ""),
            usage_cell(row.memory, GIB, "Gi"),
        ]
        for row in totals
    ]
    return _table(["POOL", "NODES", "PODS", "PRICE", "CPU", "MEMORY"], rows, shrinkable=1)


def to_text(renderable: RenderableType) -> str:
    """Plain text at natural width: no colour, no trailing spaces."""
    out = io.StringIO()
    console = Console(file=out, width=TEXT_WIDTH, color_system=None, force_terminal=False)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _natural_width(table: Table) -> int:
    return Console(width=TEXT_WIDTH).measure(table).maximum


def format_price(price: float | None) -> str:
    return "-" if price is None else f"${price:.4f}/h"


def usage_cell(usage: Usage, unit: float, suffix: str, bar: bool = True) -> Text:
    """``████░░░░ 2.00/3.92``: the bar fills with the share requested, coloured by it;
    without the bar the figures take its colour."""
    share = usage.share
    numbers = f"{usage.requested / unit:.2f}/{usage.allocatable / unit:.2f}{suffix}"
    if not bar:
        return Text(numbers, style=_share_style(share))
    filled = 0 if share is None else min(BAR_WIDTH, round(share * BAR_WIDTH))
    return Text.assemble(
        (FULL * filled, _share_style(share)),
        (EMPTY * (BAR_WIDTH - filled), "dim"),
        " " + numbers,
    )


def _usage_cells(line: NodeLine, bars: bool) -> tuple[Cell, Cell]:
    if line.status == LAUNCHING:  # no node: nothing allocatable yet
        return "-", "-"
    return usage_cell(line.cpu, 1, "", bars), usage_cell(line.memory, GIB, "Gi", bars)


def _share_style(share: float | None) -> str:
    if share is None or share < 0.5:
        return "green"
    return "yellow" if share < 0.8 else "red"


def _summary(title: str, lines: Sequence[NodeLine], cluster: PoolTotal) -> str:
    counts = [f"{cluster.nodes} nodes"]
    for status, word in ((LAUNCHING, "launching"), (DELETING, "deleting")):
        count = sum(1 for line in lines if line.status == status)
        if count:
            counts.append(f"{count} {word}")
    prefix = f"{title}: " if title else ""
    return f"{prefix}{', '.join(counts)}; {cluster.pods} pods; {format_price(cluster.price)}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], shrinkable: int) -> Table:
    """Columns two spaces apart, no borders: reads like ``kubectl get``. On a terminal
    narrower than the table the first ``shrinkable`` columns (the names) are cut short
    first, with an ellipsis, down to ``NAME_MIN_WIDTH`` (rich narrows only wrappable
    columns before all of them; a name has no space to wrap at), so the figures keep
    their width."""
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for i, header in enumerate(headers):
        names = i < shrinkable
        longest = max(cell_len(str(cell)) for cell in [header, *(row[i] for row in rows)])
        table.add_column(
            header,
            no_wrap=not names,
            overflow="ellipsis",
            min_width=min(NAME_MIN_WIDTH, longest) if names else None,
        )
    for row in rows:
        table.add_row(*row)
    return table
