"""From a target to moves: the nodes launched and drained, grouped so that each move
launches exactly the nodes its evicted pods go to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from joiner.rebalance.model import Move
from joiner.scheduling.model import NodeClaimPlan


def ordered_moves(
    drained: Sequence[str],
    launched: Sequence[NodeClaimPlan],
    evicted: Mapping[str, Sequence[str]],
    prices: Mapping[str, float],
) -> list[Move]:
    """The moves from here to the target: those that launch nodes for pending pods first
    (they wait already), then the largest saving first. ``evicted`` maps each
    drained node to the pods it must evict. Two nodes are in one move when pods of one
    land on a node launched for the other (a component of the graph between drained and
    launched nodes): launching a move's nodes before draining its own keeps room for every
    pod it evicts, in any order of moves, since kept nodes only ever gain pods."""
    origin = {pod: node for node in drained for pod in evicted.get(node, ())}
    parent: dict[str, str] = {}

    def root(item: str) -> str:
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    for node in drained:
        root(f"node/{node}")
    for index, claim in enumerate(launched):
        for pod in claim.pods:
            if pod in origin:
                parent[root(f"node/{origin[pod]}")] = root(f"claim/{index}")
    groups: dict[str, tuple[list[NodeClaimPlan], list[str]]] = {}
    for index, claim in enumerate(launched):
        groups.setdefault(root(f"claim/{index}"), ([], []))[0].append(claim)
    for node in drained:
        groups.setdefault(root(f"node/{node}"), ([], []))[1].append(node)
    moves = [_move(claims, nodes, evicted, prices) for claims, nodes in groups.values()]
    return sorted(
        moves,
        key=lambda move: (
            not _places_pending(move, origin),
            -move.saving,
            move.drain,
            _hostnames(move),
        ),
    )


def _move(
    claims: list[NodeClaimPlan],
    nodes: list[str],
    evicted: Mapping[str, Sequence[str]],
    prices: Mapping[str, float],
) -> Move:
    nodes = sorted(nodes)
    saving = sum(prices[node] for node in nodes) - sum(claim.price for claim in claims)
    evicts = sorted(pod for node in nodes for pod in evicted.get(node, ()))
    return Move(launch=claims, drain=nodes, evicts=evicts, saving=saving)


def _hostnames(move: Move) -> list[str]:
    return [claim.hostname for claim in move.launch]


def _places_pending(move: Move, origin: Mapping[str, str]) -> bool:
    """Whether a node the move launches takes a pod that no drained node evicts: a
    pending one (pods of kept nodes stay where they are)."""
    return any(pod not in origin for claim in move.launch for pod in claim.pods)
