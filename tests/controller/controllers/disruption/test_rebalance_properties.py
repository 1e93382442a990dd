"""Properties of the rebalancer's moves on the simulator (issue 23), over generated
clusters: no move evicts a pod that do-not-disrupt or a PDB protects, exceeds the pool's
disruption budget or its pods per move, breaks a pod's node selector, or leaves a pod
pending. Seeded and few examples: each is a simulated half hour."""

from __future__ import annotations

import re

from disruption_world import instance_type, od, scale, simulate
from hypothesis import given, seed, settings
from hypothesis import strategies as st
from joiner import testing
from joiner.api import labels as wk
from test_rebalance_method import BIG, _pool

# SMALL in zone-b too: pods pinned to zone-a must stay there.
SMALL_TWO_ZONES = instance_type("small", "4", "8Gi", {**od(0.25), **od(0.25, "zone-b")})
MOVE = re.compile(r"rebalance: (\d+) nodes? -> (\d+), saves \$[0-9.]+/h, evicts (\d+) pods?")


@st.composite
def clusters(draw: st.DrawFn) -> dict:
    return {
        "narrow": draw(st.integers(4, 14)),
        "protected": draw(st.sampled_from(["none", "do-not-disrupt", "pdb"])),
        "pinned": draw(st.integers(0, 4)),
        "budget": draw(st.sampled_from(["1", "100%"])),
        "pods_per_move": draw(st.integers(4, 20)),
    }


def _run(case: dict):
    annotations = {wk.DO_NOT_DISRUPT: "true"} if case["protected"] == "do-not-disrupt" else None
    objects = [
        _pool({wk.REBALANCE: "true", wk.REBALANCE_PODS_PER_MOVE: str(case["pods_per_move"])}),
        testing.deployment("wide", 2, "4500m", "128Mi"),
        testing.deployment("narrow", case["narrow"], "500m", "128Mi", annotations=annotations),
        testing.deployment(
            "pinned", case["pinned"], "250m", "128Mi", nodeSelector={wk.ZONE: "zone-a"}
        ),
    ]
    objects[0]["spec"]["disruption"]["budgets"] = [{"nodes": case["budget"]}]
    if case["protected"] == "pdb":
        objects.append(testing.pod_disruption_budget("narrow", 0))
    return simulate(
        [BIG, SMALL_TWO_ZONES],
        objects,
        [{"settle": "5m"}, scale("wide", 0), {"advance": "20m"}],
    )


@seed(23)
@settings(max_examples=10, deadline=None)
@given(clusters())
def test_no_move_breaks_a_protection_a_budget_or_a_pod_constraint(case: dict) -> None:
    result = _run(case)
    assert result.failures == []
    moves = [
        MOVE.fullmatch(e.message)
        for e in result.events
        if e.reason == "Rebalanced" and e.kind == "NodePool"
    ]
    assert all(moves)
    for move in moves:
        nodes, evicted = int(move[1]), int(move[3])
        assert nodes <= (1 if case["budget"] == "1" else nodes)
        assert evicted <= case["pods_per_move"]
    evicted_pods = [e.name for e in result.events if e.reason == "Evicted"]
    if case["protected"] != "none":
        assert not [name for name in evicted_pods if name.startswith("narrow-")]
    assert result.final.pending_pods == []
    after_move = [r.snapshot for r in result.steps[2:]]
    assert all(s.pending_pods == [] for s in after_move)
    zones = {n.name: n.zone for n in result.final.nodes}
    pinned = [
        (pod, node.name)
        for node in result.final.nodes
        for pod in node.pods
        if pod.startswith("default/pinned-") or pod.startswith("pinned-")
    ]
    assert len(pinned) == case["pinned"]
    assert all(zones[node] == "zone-a" for _, node in pinned)


def test_the_generated_clusters_do_see_moves() -> None:
    """The property is not vacuous: an unprotected cluster is rebalanced."""
    case = {"narrow": 10, "protected": "none", "pinned": 0, "budget": "100%", "pods_per_move": 20}
    result = _run(case)
    assert [
        e.message for e in result.events if e.reason == "Rebalanced" and e.kind == "NodePool"
    ] == ["rebalance: 1 node -> 2, saves $0.50/h, evicts 10 pods"]
