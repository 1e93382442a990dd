"""The emulated ReplicaSet controller picks the pods to remove on scale-down as the real
one ranks them (``ActivePodsWithRanks``), pod-deletion-cost included [PDC]."""

from __future__ import annotations

from typing import Any

from joiner.api.labels import POD_DELETION_COST
from joiner.sim.workloads import removal_order


def _pod(
    name: str,
    node: str = "",
    phase: str = "Running",
    ready: bool = True,
    cost: str | None = None,
    restarts: int = 0,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    annotations = {POD_DELETION_COST: cost} if cost is not None else {}
    return {
        "metadata": {"name": name, "annotations": annotations, "creationTimestamp": created},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def _order(*pods: dict[str, Any]) -> list[str]:
    return [p["metadata"]["name"] for p in removal_order(list(pods))]


def test_unscheduled_then_pending_then_not_ready_go_first() -> None:
    assert _order(
        _pod("running", "n1"),
        _pod("not-ready", "n2", ready=False),
        _pod("pending", "n3", phase="Pending", ready=False),
        _pod("unscheduled", phase="Pending", ready=False),
    ) == ["unscheduled", "pending", "not-ready", "running"]


def test_lower_deletion_cost_goes_first_before_colocation_and_age() -> None:
    assert _order(
        _pod("doubled-a", "n1", created="2026-01-01T00:05:00Z"),
        _pod("doubled-b", "n1", created="2026-01-01T00:05:00Z"),
        _pod("cheap", "n2", cost="-3"),
        _pod("dear", "n3", cost="100"),
    ) == ["cheap", "doubled-b", "doubled-a", "dear"]


def test_a_malformed_or_out_of_range_cost_counts_as_zero() -> None:
    assert (
        _order(
            _pod("a", "n1", cost="soon"),
            _pod("b", "n2", cost=str(2**31)),
            _pod("c", "n3", cost="-1"),
        )[0]
        == "c"
    )


def test_pods_doubled_up_on_a_node_then_more_restarts_then_the_newest_go_first() -> None:
    assert _order(
        _pod("alone-old", "n1", created="2026-01-01T00:00:00Z"),
        _pod("alone-new", "n2", created="2026-01-01T01:00:00Z"),
        _pod("alone-restarted", "n3", restarts=4),
        _pod("pair-1", "n4"),
        _pod("pair-2", "n4"),
    ) == ["pair-2", "pair-1", "alone-restarted", "alone-new", "alone-old"]
