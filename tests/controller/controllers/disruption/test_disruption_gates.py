"""Spot-to-spot consolidation [DISR-7] and PDB-blocked candidates [DISR-3], end to end."""

from __future__ import annotations

from disruption_world import (
    deployment,
    instance_type,
    live_types,
    nodepool,
    simulate,
    types_pool,
)
from joiner import testing

SPOT_BIG = instance_type("sbig", "8", "16Gi", {"zone-a/spot": 0.50})


def cheap_spot_types(count: int) -> list[dict]:
    return [
        instance_type(f"s{i:02d}", "2", "4Gi", {"zone-a/spot": round(0.10 + 0.01 * i, 2)})
        for i in range(count)
    ]


def spot_pool(types: list[str] | None) -> dict:
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    if types is not None:
        requirements.append(
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
        )
    return nodepool(requirements=requirements)


def run_spot(types: list[dict], gate: bool):
    return simulate(
        [SPOT_BIG, *types],
        [spot_pool(["sbig"]), deployment("app", 1, "500m")],
        [{"settle": "5m"}, {"apply": [spot_pool(None)]}, {"advance": "10m"}],
        settings={"FEATURE_GATES": f"SpotToSpotConsolidation={str(gate).lower()}"},
    )


def blocked_messages(result) -> set[str]:
    return {e.message for e in result.events if e.reason == "DisruptionBlocked"}


def test_spot_node_is_not_replaced_by_spot_without_the_gate():
    result = run_spot(cheap_spot_types(16), gate=False)
    assert live_types(result) == ["sbig"]
    assert blocked_messages(result) == {
        "spot-to-spot consolidation is disabled (SpotToSpotConsolidation)"
    }


def test_spot_to_spot_with_the_gate_keeps_the_15_cheapest_options():
    result = run_spot(cheap_spot_types(16), gate=True)
    assert live_types(result) == ["s00"]
    replacement = next(c for c in result.nodeclaims if c.instance_type == "s00")
    assert replacement.instance_types == [f"s{i:02d}" for i in range(15)]


def test_spot_to_spot_needs_fifteen_cheaper_types():
    result = run_spot(cheap_spot_types(14), gate=True)
    assert live_types(result) == ["sbig"]
    assert blocked_messages(result) == {"spot-to-spot needs 15 cheaper types, found 14"}


def test_a_pdb_that_allows_no_disruption_keeps_the_node_and_says_so():
    big = instance_type("big", "8", "16Gi", {"zone-a/on-demand": 1.0})
    small = instance_type("small", "2", "4Gi", {"zone-a/on-demand": 0.1})
    only_big = types_pool("big")
    both = types_pool("big", "small")
    pdb = testing.pod_disruption_budget("app")
    result = simulate(
        [big, small],
        [only_big, pdb, deployment("app", 1, "500m")],
        [{"settle": "5m"}, {"apply": [both]}, {"advance": "10m"}],
    )
    assert live_types(result) == ["big"]
    assert blocked_messages(result) == {"pdb default/app allows no disruption"}
