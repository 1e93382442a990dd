"""A live cluster's objects (plain dicts, as the API server sends them) as ``NodeLine``s.

A Node's pool, type, zone and capacity type come from its well-known labels; its
NodeClaim is the one whose ``status.nodeName`` names it. A NodeClaim no Node answers
to yet is a launching line. A Node or NodeClaim with a deletionTimestamp is deleting.
Requests are those of the bound pods that have not finished, counted as the
scheduler counts them (``pod_requests``: init containers, sidecars, overhead).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.scheduling.pods import pod_requests
from joiner.state.cluster import is_terminal
from joiner.top.view import (
    DELETING,
    LAUNCHING,
    NOT_READY,
    READY,
    STATIC_POOL,
    NodeLine,
    Usage,
)

Object = dict[str, Any]
# The price in USD per hour of an offering, from a node's (or NodeClaim's) labels.
PriceOf = Callable[[Mapping[str, str]], float | None]


@dataclass
class ClusterObjects:
    """What ``joiner top`` reads: every Node, NodeClaim, Pod and NodePool."""

    nodes: list[Object] = field(default_factory=list)
    nodeclaims: list[Object] = field(default_factory=list)
    pods: list[Object] = field(default_factory=list)
    nodepools: list[Object] = field(default_factory=list)

    @classmethod
    def from_items(cls, items: Iterable[Object]) -> ClusterObjects:
        """Sort a mixed list (e.g. a recorded ``kind: List``) by kind; others are ignored."""
        objects = cls()
        by_kind = {
            "Node": objects.nodes,
            "NodeClaim": objects.nodeclaims,
            "Pod": objects.pods,
            "NodePool": objects.nodepools,
        }
        for item in items:
            if item.get("kind") in by_kind:
                by_kind[item["kind"]].append(item)
        return objects

    def pool_names(self) -> list[str]:
        return sorted(_meta(pool).get("name", "") for pool in self.nodepools)


def node_lines(objects: ClusterObjects, price_of: PriceOf) -> list[NodeLine]:
    """One line per Node, then per NodeClaim without a Node, each sorted by name."""
    claims_by_node = {
        claim["status"]["nodeName"]: claim
        for claim in objects.nodeclaims
        if (claim.get("status") or {}).get("nodeName")
    }
    node_names = {_meta(node).get("name") for node in objects.nodes}
    pods_by_node: dict[str, list[Object]] = {}
    for pod in objects.pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and not is_terminal(pod):
            pods_by_node.setdefault(node_name, []).append(pod)
    lines = [
        _node_line(node, claims_by_node.get(name), pods_by_node.get(name, []), price_of)
        for node in objects.nodes
        for name in [_meta(node).get("name", "")]
    ]
    lines += [
        _launching_line(claim, price_of)
        for claim in objects.nodeclaims
        if (claim.get("status") or {}).get("nodeName") not in node_names
    ]
    return sorted(lines, key=lambda line: (line.status == LAUNCHING, line.name))


def _node_line(
    node: Object, claim: Object | None, pods: list[Object], price_of: PriceOf
) -> NodeLine:
    allocatable = res.parse_resource_list((node.get("status") or {}).get("allocatable"))
    requested = res.sum_lists(pod_requests(pod, {}) for pod in pods)
    deleting = _deleting(node) or (claim is not None and _deleting(claim))
    status = DELETING if deleting else READY if _ready(node) else NOT_READY
    return _line(
        node,
        price_of,
        status,
        len(pods),
        _usage(res.CPU, requested, allocatable),
        _usage(res.MEMORY, requested, allocatable),
    )


def _launching_line(claim: Object, price_of: PriceOf) -> NodeLine:
    """A NodeClaim's labels name its offering once it launched (none before)."""
    status = DELETING if _deleting(claim) else LAUNCHING
    return _line(claim, price_of, status, 0, Usage(), Usage())


def _line(
    obj: Object, price_of: PriceOf, status: str, pods: int, cpu: Usage, memory: Usage
) -> NodeLine:
    """A Node's or NodeClaim's line: its pool and offering from its well-known labels."""
    labels = _meta(obj).get("labels") or {}
    return NodeLine(
        name=_meta(obj).get("name", ""),
        pool=labels.get(wk.NODEPOOL) or STATIC_POOL,
        instance_type=labels.get(wk.INSTANCE_TYPE),
        zone=labels.get(wk.ZONE),
        capacity_type=labels.get(wk.CAPACITY_TYPE),
        price=price_of(labels),
        status=status,
        pods=pods,
        cpu=cpu,
        memory=memory,
    )


def _usage(name: str, requested: Mapping[str, int], allocatable: Mapping[str, int]) -> Usage:
    return Usage(
        res.to_float(name, requested.get(name, 0)), res.to_float(name, allocatable.get(name, 0))
    )


def _ready(node: Object) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _deleting(obj: Object) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _meta(obj: Object) -> dict[str, Any]:
    return obj.get("metadata") or {}
