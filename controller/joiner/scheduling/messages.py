"""Why a pod cannot be placed, in Karpenter's words [SPEC 3].

Where Joiner finds the same cause as Karpenter's scheduler, its message starts with
Karpenter's text for it, so runbooks, log searches and alerts written for Karpenter keep
matching; Joiner's own detail follows after a comma. Per NodePool reasons are joined
with "; " in the order the pools were tried, as Karpenter joins them, each followed by
``nodepool=<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from joiner.scheduling.taints import describe

NO_ROOM = "no instance type has enough resources"
NO_INSTANCE_TYPE = "no instance type met all requirements"
NO_OFFERING = "no instance type has the required offering"
POOL_FILTERED = "nodepool requirements filtered out all available instance types"
INCOMPATIBLE = "incompatible requirements"


def untolerated_taint(taint: Mapping[str, Any]) -> str:
    return f"did not tolerate taint (taint={describe(taint)})"


def incompatible(why: str) -> str:
    return f"{INCOMPATIBLE}, {why}"


def exceeds_limits(nodepool: str) -> str:
    return f"all available instance types exceed limits for nodepool (NodePool={nodepool})"


def min_values_not_met(keys: Sequence[str]) -> str:
    return f"minValues requirement is not met for label(s) (label(s)=[{' '.join(keys)}])"


def unsatisfiable_topology(constraint: str, key: str) -> str:
    """``constraint`` is "topology spread", "pod affinity" or "pod anti-affinity"."""
    return f"unsatisfiable topology constraint for {constraint}, key={key}"


def detailed(reason: str, detail: str) -> str:
    """Karpenter's ``reason`` followed by Joiner's ``detail``."""
    return f"{reason}, {detail}" if detail else reason


def per_nodepool(reasons: Sequence[tuple[str, str]]) -> str:
    """(nodepool, message) pairs as one message, in the order the pools were tried."""
    return "; ".join(f"{message}, nodepool={name}" for name, message in reasons)
