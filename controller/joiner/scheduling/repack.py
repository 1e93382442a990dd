"""Cost repacking of unconstrained pods on new NodeClaims.

Packing pods in CPU-descending order fills the first NodeClaims with CPU-heavy
pods and the last ones with memory-heavy pods, so both end up on types whose
CPU:memory shape does not match what they hold. For NodeClaims that hold only
*free* pods (no topology, node requirements, host ports or volumes, and not
counted by any topology constraint), this pass packs the same pods again: it
opens NodeClaims on the types of the cheapest fractional cover of their total
CPU and memory, and fills each with the pod shape that keeps its CPU and memory
use most even. The result replaces the original NodeClaims only when cheaper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from joiner.api import resources as res
from joiner.scheduling.catalog import PoolCatalog
from joiner.scheduling.nodeclaims import Draft


def fractional_cover(
    price: np.ndarray, cpu: np.ndarray, memory: np.ndarray, want_cpu: float, want_memory: float
) -> tuple[float, dict[int, float]]:
    """The cheapest mix of types, fractions allowed, whose CPU and memory cover the wants:
    (cost, {type index: amount}). A linear program with two constraints, so the optimum
    uses one type or a pair of the types no other type beats on both CPU and memory per
    dollar; every such vertex is evaluated at once. Among equal mixes the one with
    fewer, larger nodes wins."""
    front = _efficient_types(price, cpu, memory)
    price, cpu, memory = price[front], cpu[front], memory[front]
    per_node = 1e-6 * float(np.mean(price))  # tie-breaker only
    with np.errstate(divide="ignore", invalid="ignore"):
        single = np.maximum(want_cpu / cpu, want_memory / memory)
        single_cost = np.where(np.isfinite(single), price * single, np.inf)
        det = cpu[:, None] * memory[None, :] - cpu[None, :] * memory[:, None]
        xi = (want_cpu * memory[None, :] - cpu[None, :] * want_memory) / det
        xj = (cpu[:, None] * want_memory - want_cpu * memory[:, None]) / det
        pair_cost = price[:, None] * xi + price[None, :] * xj
        valid = np.isfinite(pair_cost) & (xi >= 0) & (xj >= 0)
        pair_score = np.where(valid, pair_cost + per_node * (xi + xj), np.inf)
    s = int(np.argmin(single_cost + per_node * single))
    i, j = np.unravel_index(int(np.argmin(pair_score)), pair_score.shape)
    if pair_score[i, j] < single_cost[s] + per_node * single[s]:
        mix = {int(front[i]): float(xi[i, j]), int(front[j]): float(xj[i, j])}
        return float(pair_cost[i, j]), mix
    return float(single_cost[s]), {int(front[s]): float(single[s])}


def _efficient_types(price: np.ndarray, cpu: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """Indexes of the Pareto front of (CPU per dollar, memory per dollar); among types of
    equal efficiency the largest is kept."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu_rate = np.where(price > 0, cpu / price, np.inf)
        memory_rate = np.where(price > 0, memory / price, np.inf)
    order = np.lexsort((-cpu, -memory_rate, -cpu_rate))
    kept, best_memory = [], -np.inf
    for index in order.tolist():
        if memory_rate[index] > best_memory * (1 + 1e-9):
            kept.append(index)
            best_memory = memory_rate[index]
    return np.array(kept, dtype=np.int64)


class _Shapes:
    """The free pods by request vector."""

    def __init__(self, pods: Sequence[tuple[np.ndarray, str]]) -> None:
        by_shape: dict[tuple[int, ...], list[str]] = {}
        for vector, key in pods:
            by_shape.setdefault(tuple(vector.tolist()), []).append(key)
        ordered = sorted(by_shape.items(), key=lambda item: item[0], reverse=True)
        self.vectors = np.array([shape for shape, _ in ordered], dtype=np.int64)
        self.keys = [keys for _, keys in ordered]
        self.counts = np.array([len(keys) for keys in self.keys], dtype=np.int64)

    def take(self, shape: int) -> str:
        self.counts[shape] -= 1
        return self.keys[shape].pop()


def repack(
    pool: PoolCatalog,
    candidates: np.ndarray,
    pods: Sequence[tuple[np.ndarray, str]],
    new_hostname: Callable[[], str],
) -> list[Draft]:
    """New NodeClaims holding ``pods`` (request vector, key), each on ``candidates`` types."""
    shapes = _Shapes(pods)
    room = pool.free[candidates]
    prices = pool.offering_prices(pool.requirements)[candidates].min(axis=(1, 2))
    cpu, memory = pool.dims.index[res.CPU], pool.dims.index[res.MEMORY]
    total = shapes.vectors.T @ shapes.counts
    _, mix = fractional_cover(
        prices,
        room[:, cpu].astype(float),
        room[:, memory].astype(float),
        float(total[cpu]),
        float(total[memory]),
    )
    largest = int(np.argmax(prices))
    drafts = []
    while shapes.counts.sum():
        chosen = max(mix, key=lambda t: (mix[t], -t))
        mix[chosen] -= 1
        members = _fill(shapes, room[chosen], cpu, memory) or _fill(
            shapes, room[largest], cpu, memory
        )
        if not members:
            return []  # some pod fits no type: keep the original packing
        drafts.append(_draft(pool, candidates, new_hostname(), members))
    return drafts


def _fill(shapes: _Shapes, room: np.ndarray, cpu: int, memory: int) -> list[tuple[np.ndarray, str]]:
    """Fill one node: each step adds the shape that keeps CPU and memory use most even."""
    used = np.zeros_like(room)
    taken: list[tuple[np.ndarray, str]] = []
    scale = np.maximum(room[[cpu, memory]], 1).astype(float)
    while True:
        fits = (shapes.counts > 0) & (shapes.vectors <= room - used).all(axis=1)
        if not fits.any():
            return taken
        after = (used[[cpu, memory]] + shapes.vectors[:, [cpu, memory]]) / scale
        score = np.abs(after[:, 0] - after[:, 1]) - 1e-3 * after.max(axis=1)
        shape = int(np.argmin(np.where(fits, score, np.inf)))
        used += shapes.vectors[shape]
        taken.append((shapes.vectors[shape], shapes.take(shape)))


def _draft(
    pool: PoolCatalog, candidates: np.ndarray, hostname: str, members: list[tuple[np.ndarray, str]]
) -> Draft:
    content = np.sum([vector for vector, _ in members], axis=0)
    fitting = candidates[(pool.free[candidates] >= content).all(axis=1)]
    signature = repr(pool.requirements.to_dicts())
    draft = Draft(pool, hostname, pool.requirements, signature, fitting, pool.free)
    by_vector: dict[tuple[int, ...], list[str]] = {}
    vectors: dict[tuple[int, ...], np.ndarray] = {}
    for vector, key in members:
        shape = tuple(vector.tolist())
        by_vector.setdefault(shape, []).append(key)
        vectors[shape] = vector
    for shape, keys in by_vector.items():
        draft.add(pool.requirements, signature, fitting, vectors[shape], keys)
    return draft
