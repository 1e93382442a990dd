"""The packing MILP: which current nodes to keep and which nodes to launch so that every
movable and pending pod has room, at the least cost (HiGHS through
``scipy.optimize.milp``).

Pods are grouped by shape (their request vector) and nodes by the room they offer, so
the model counts pods rather than placing each one. Per shape ``s``, current node ``j``
and launchable option ``o`` (a pool and one of its instance types):

- ``keep[j]`` (binary): node j stays; a node not eligible for disruption is fixed at 1;
- ``launch[o]`` (integer): how many nodes of option o the target adds;
- ``onto[s, j]``, ``into[s, o]`` (continuous): pods of shape s moved into node j's free
  room, or onto the launched nodes of option o.

Every pod of shape s on a node that is not kept, and every pending one, goes somewhere;
what moves into a node or an option fits in its room (kept nodes: their free room
now; launched nodes: allocatable less daemonsets, times how many). It minimises the
target's $/hour, with a tie-break per evicted pod. The room is checked in aggregate
over an option's nodes, so the answer is a proposal only: the scheduler
(``joiner.scheduling.solve``) decides whether the pods really fit, with every
constraint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

# $/hour charged per evicted pod: between targets of equal cost the one that moves
# fewer pods wins, and no saving is ever given up for it.
EVICTION_TIE_BREAK = 1e-6
# Stop when the best answer found is proven within 1% of the optimum: closing the last
# percent costs the optimizer most of its time, and the scheduler's placement decides
# the final cost anyway.
RELATIVE_GAP = 0.01


@dataclass(frozen=True)
class Holder:
    """A current node: its $/hour, free room now (over the shapes' dimensions), how
    many pods of each shape it holds that may move, and whether it must stay."""

    name: str
    price: float
    room: np.ndarray
    movable: np.ndarray
    fixed: bool


@dataclass(frozen=True)
class Option:
    """A node the target may launch: pool, instance type, room for pods, $/hour."""

    pool: str
    instance_type: str
    room: np.ndarray
    price: float


@dataclass(frozen=True)
class Proposal:
    """The optimizer's target: the current nodes it keeps, how many nodes of each
    (pool, instance type) it launches, and what that costs per hour."""

    keep: frozenset[str]
    launch: dict[tuple[str, str], int]
    cost: float


class _Columns:
    """The model's variables: one column each, with its cost, bounds and integrality."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[int] = []

    def add(self, cost: float, lower: float, upper: float, integer: bool) -> int:
        self.cost.append(cost)
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(int(integer))
        return len(self.cost) - 1


class _Rows:
    """The model's constraints as sparse triplets with their bounds."""

    def __init__(self) -> None:
        self.data: list[float] = []
        self.row: list[int] = []
        self.column: list[int] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, terms: Sequence[tuple[int, float]], lower: float, upper: float) -> None:
        index = len(self.lower)
        for column, coefficient in terms:
            self.row.append(index)
            self.column.append(column)
            self.data.append(coefficient)
        self.lower.append(lower)
        self.upper.append(upper)

    def matrix(self, columns: int) -> sparse.csr_array:
        shape = (len(self.lower), columns)
        return sparse.csr_array((self.data, (self.row, self.column)), shape=shape)


def propose(
    shapes: np.ndarray,
    pending: np.ndarray,
    holders: Sequence[Holder],
    options: Sequence[Option],
    time_limit: float,
) -> tuple[Proposal | None, str]:
    """The cheapest target for pods of ``shapes`` (rows: request vectors) with
    ``pending`` of each waiting, or None and why (no answer proven within
    ``time_limit`` seconds, or none exists)."""
    scale = _scale(shapes, holders, options)
    shapes = shapes / scale
    columns, rows = _Columns(), _Rows()
    total_pods = float(pending.sum() + sum(h.movable.sum() for h in holders))
    keep = [
        columns.add(
            h.price - EVICTION_TIE_BREAK * float(h.movable.sum()), float(h.fixed), 1.0, True
        )
        for h in holders
    ]
    launch = [columns.add(o.price, 0.0, total_pods, True) for o in options]
    supply: list[list[tuple[int, float]]] = [[] for _ in range(len(shapes))]
    rooms = [(keep[j], h.room / scale) for j, h in enumerate(holders)]
    rooms += [(launch[o], option.room / scale) for o, option in enumerate(options)]
    for owner, room in rooms:
        _room_rows(columns, rows, supply, shapes, owner, room, total_pods)
    for s, terms in enumerate(supply):
        moving = [(keep[j], float(h.movable[s])) for j, h in enumerate(holders) if h.movable[s]]
        need = float(pending[s] + sum(count for _, count in moving))
        rows.add(terms + moving, need, need)
    return _solve(columns, rows, holders, options, keep, launch, time_limit)


def _scale(shapes: np.ndarray, holders: Sequence[Holder], options: Sequence[Option]) -> np.ndarray:
    """Per dimension, the largest room anywhere: rows in comparable units keep HiGHS's
    tolerances meaningful (memory in milli-bytes is ~1e13)."""
    rooms = [h.room for h in holders] + [o.room for o in options] + list(shapes)
    largest = np.max(np.abs(np.array(rooms, dtype=float)), axis=0, initial=1.0)
    return np.maximum(largest, 1.0)


def _room_rows(
    columns: _Columns,
    rows: _Rows,
    supply: list[list[tuple[int, float]]],
    shapes: np.ndarray,
    owner: int,
    room: np.ndarray,
    total_pods: float,
) -> None:
    """The pods moved into one room (a kept node's, or an option's per node launched)
    fit in it, dimension by dimension; only shapes that fit one node get a column."""
    fits = np.nonzero((shapes <= room + 1e-12).all(axis=1))[0]
    if not len(fits):
        return
    moved = [columns.add(0.0, 0.0, total_pods, False) for _ in fits]
    for s, column in zip(fits.tolist(), moved, strict=True):
        supply[s].append((column, 1.0))
    for d in range(shapes.shape[1]):
        terms = [(c, float(shapes[s, d])) for s, c in zip(fits, moved, strict=True) if shapes[s, d]]
        if terms:
            rows.add([*terms, (owner, -float(max(room[d], 0.0)))], -np.inf, 0.0)


def _solve(
    columns: _Columns,
    rows: _Rows,
    holders: Sequence[Holder],
    options: Sequence[Option],
    keep: list[int],
    launch: list[int],
    time_limit: float,
) -> tuple[Proposal | None, str]:
    result = milp(
        np.array(columns.cost),
        integrality=np.array(columns.integer),
        bounds=Bounds(np.array(columns.lower), np.array(columns.upper)),
        constraints=LinearConstraint(
            rows.matrix(len(columns.cost)), np.array(rows.lower), np.array(rows.upper)
        ),
        options={"time_limit": time_limit, "mip_rel_gap": RELATIVE_GAP, "disp": False},
    )
    if result.status == 1:
        return None, f"the optimizer reached its time limit ({time_limit:g} s)"
    if result.status != 0:
        return None, f"the optimizer found no target: {result.message}"
    kept = frozenset(h.name for h, k in zip(holders, keep, strict=True) if result.x[k] > 0.5)
    counts = {
        (o.pool, o.instance_type): round(result.x[n])
        for o, n in zip(options, launch, strict=True)
        if round(result.x[n]) > 0
    }
    cost = sum(h.price for h in holders if h.name in kept)
    by_key = {(o.pool, o.instance_type): o.price for o in options}
    cost += sum(by_key[key] * count for key, count in counts.items())
    return Proposal(kept, counts, cost), ""
