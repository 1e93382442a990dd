"""Disruption passes over a cluster where nothing changes: a pass is not worked out again
while the state and the candidates' time-bound facts stay the same, so these check that
what turns with time alone (a budget's schedule, a do-not-disrupt duration) is acted on
at the first pass after it turns. expireAfter is Never throughout: a finite one makes
every pass work everything out again (a candidate's cost moves with its age)."""

from __future__ import annotations

from typing import Any

from disruption_world import (
    deployment,
    disruptions,
    instance_type,
    live_types,
    nodepool,
    od,
    scale,
    simulate,
    types_pool,
)

SMALL = instance_type("small", "2", "4Gi", od(0.10))
PASS_AND_VALIDATION = 25  # a pass every 10 s, a consolidation validated 15 s later


def test_a_budget_window_ending_on_a_quiet_cluster_frees_the_next_pass():
    """[DISR-4] budget 0 from midnight for 1h (the simulation starts at midnight UTC); the
    empty node has waited since 5 minutes in, with nothing else happening."""
    pool = nodepool(
        disruption={
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "30s",
            "budgets": [
                {"nodes": "0", "schedule": "0 0 * * *", "duration": "1h"},
                {"nodes": "100%"},
            ],
        },
        expire_after="Never",
    )
    result = simulate(
        [SMALL],
        [pool, deployment("app", 1, "500m")],
        [{"settle": "5m"}, scale("app", 0), {"advance": "70m"}],
    )
    ((when, message),) = disruptions(result)
    assert message.startswith("Empty: delete ")
    assert 3600 <= when <= 3600 + PASS_AND_VALIDATION


def never_expiring(pool: dict[str, Any]) -> dict[str, Any]:
    pool["spec"]["template"]["spec"]["expireAfter"] = "Never"
    return pool


def test_a_do_not_disrupt_duration_ending_on_a_quiet_cluster_frees_the_next_pass():
    """[API-2, DISR-3] the pod's 5 minutes count from its start; nothing else happens
    once the pool allows the cheaper type."""
    big = instance_type("big", "8", "16Gi", od(1.0))
    app = deployment("app", 1, "500m", annotations={"karpenter.sh/do-not-disrupt": "5m"})
    result = simulate(
        [big, SMALL],
        [never_expiring(types_pool("big")), app],
        [
            {"settle": "2m"},
            {"apply": [never_expiring(types_pool("big", "small"))]},
            {"advance": "20m"},
        ],
    )
    assert live_types(result) == ["small"]
    pod_started = next(c.initialized_at for c in result.nodeclaims if c.instance_type == "big")
    ((when, message),) = disruptions(result)
    assert message.startswith("Underutilized: replace ")
    assert pod_started + 300 <= when <= pod_started + 300 + PASS_AND_VALIDATION
