"""Taints and tolerations with Kubernetes semantics [SPEC 3.4, 3.7]."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from joiner.api import labels as wk

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"

# Taints a node carries only while it starts; ignored on a node that is not initialized.
EPHEMERAL_TAINT_KEYS = frozenset(
    {
        wk.UNREGISTERED_TAINT_KEY,
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(
    tolerations: Iterable[Mapping[str, Any]],
    taints: Iterable[Mapping[str, Any]],
    honor_prefer_no_schedule: bool,
) -> Mapping[str, Any] | None:
    """The first taint the tolerations do not cover (PreferNoSchedule only counts while
    it is honoured, i.e. before the last relaxation step), else None."""
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") == PREFER_NO_SCHEDULE and not honor_prefer_no_schedule:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def describe(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + value if value else ''}:{taint.get('effect')}"


def same_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")
