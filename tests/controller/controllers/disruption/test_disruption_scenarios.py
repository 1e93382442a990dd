"""End-to-end disruption behaviour [DISR-1..9], each on the simulator with exact outcomes."""

from __future__ import annotations

import itertools
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
from joiner import testing

SMALL = instance_type("small", "2", "4Gi", od(0.10))
MEDIUM = instance_type("medium", "6", "12Gi", od(0.15))


def test_emptiness_respects_a_30_percent_budget_per_pass():
    """[DISR-4, DISR-5] 10 empty nodes, budget 30% of the pool's current nodes (rounded
    up): 3 of 10, 3 of 7, 2 of 4, 1 of 2, 1 of 1, one pass each."""
    pool = nodepool(
        disruption={
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "30s",
            "budgets": [{"nodes": "30%"}],
        }
    )
    result = simulate(
        [SMALL],
        [pool, deployment("one-per-node", 10, "500m", anti_affinity=True)],
        [
            {"settle": "5m"},
            {"expect": {"nodes": {"managed": 10}}},
            scale("one-per-node", 0),
            {"advance": "10m"},
            {"expect": {"nodes": {"managed": 0}}},
        ],
    )
    assert result.failures == []
    passes: dict[float, set[str]] = {}
    for when, message in disruptions(result):
        assert message.startswith("Empty: delete ")
        passes.setdefault(when, set()).add(message)
    assert [len(messages) for messages in passes.values()] == [1, 1, 1, 1, 1]
    sizes = [next(iter(m)).count(",") + 1 for m in passes.values()]
    assert sizes == [3, 3, 2, 1, 1]
    times = list(passes)
    assert all(later - earlier >= 10 for earlier, later in itertools.pairwise(times))


def test_three_single_pod_nodes_merge_into_one_cheaper_replacement():
    """[DISR-7] multi-node: 3 x small ($0.30) -> 1 x medium ($0.15), in one command."""
    never = nodepool(disruption={"consolidateAfter": "Never"})
    after = nodepool(disruption={"consolidateAfter": "30s", "budgets": [{"nodes": "100%"}]})
    result = simulate(
        [SMALL, MEDIUM],
        [never, deployment("app", 1, "1500m")],
        [
            {"settle": "5m"},
            scale("app", 2),
            {"settle": "5m"},
            scale("app", 3),
            {"settle": "5m"},
            {"advance": "1m"},
            {"expect": {"nodesByInstanceType": {"small": 3}}},
            {"apply": [after]},
            {"advance": "10m"},
        ],
    )
    assert result.failures == []
    assert live_types(result) == ["medium"]
    (node,) = [n for n in result.final.nodes if n.managed]
    assert len(node.pods) == 3
    messages = {message for _, message in disruptions(result)}
    assert len(messages) == 1
    assert next(iter(messages)).endswith("with 1 node(s) (medium)")
    deleted = [c for c in result.nodeclaims if c.deleted_at is not None]
    assert (
        sorted((c.instance_type, c.disruption_reason) for c in deleted)
        == [("small", "Underutilized")] * 3
    )
    (medium,) = [c for c in result.nodeclaims if c.instance_type == "medium"]
    assert all(c.deleted_at > medium.initialized_at for c in deleted)


def test_of_nodes_with_two_and_one_pods_the_one_pod_node_goes_without_replacement():
    """[DISR-7] A (1 pod, 1.5 CPU) and B (2 pods, 2.4 CPU) of one 4-CPU type: A's pod fits
    on B, so A is deleted; replacing both with one node of the same type is not savings."""
    m = instance_type("m", "4", "8Gi", od(0.20))
    never = nodepool(disruption={"consolidateAfter": "Never"})
    after = nodepool(disruption={"consolidateAfter": "30s", "budgets": [{"nodes": "100%"}]})
    result = simulate(
        [m],
        [never, deployment("a", 2, "1500m")],
        [
            {"settle": "5m"},
            {"apply": [deployment("b", 2, "1200m")]},
            {"settle": "5m"},
            {"expect": {"nodes": {"managed": 2}}},
            scale("a", 1),
            {"advance": "1m"},
            {"apply": [after]},
            {"advance": "10m"},
        ],
    )
    assert result.failures == []
    assert live_types(result) == ["m"]
    (node,) = [n for n in result.final.nodes if n.managed]
    assert len(node.pods) == 3
    ((_, message),) = disruptions(result)
    assert message.startswith("Underutilized: delete ")
    assert len(result.nodeclaims) == 2


def on_demand_node_offered_spot(zone_b_spot_price: float):
    """A 1.00 on-demand node of the one OD type; then the pool also allows spot, and a
    small type is offered as spot at 0.30 in zone-a and ``zone_b_spot_price`` in zone-b."""
    big = instance_type("big", "8", "16Gi", od(1.0))
    spot = instance_type(
        "small", "2", "4Gi", {"zone-a/spot": 0.30, "zone-b/spot": zone_b_spot_price}
    )
    both = nodepool(requirements=[testing.capacity_types("spot", "on-demand")])
    return simulate(
        [big, spot],
        [nodepool(), deployment("app", 1, "500m")],
        [{"settle": "5m"}, {"apply": [both]}, {"advance": "10m"}],
    )


def test_on_demand_node_is_kept_when_spot_replacements_worst_price_is_higher():
    """[DISR-7] OD -> spot only when the worst spot launch price is below the OD price."""
    result = on_demand_node_offered_spot(zone_b_spot_price=1.50)
    assert live_types(result) == ["big"]
    assert disruptions(result) == []


def test_on_demand_node_moves_to_spot_when_every_spot_offering_is_cheaper():
    result = on_demand_node_offered_spot(zone_b_spot_price=0.40)
    assert live_types(result) == ["small"]
    (node,) = [n for n in result.final.nodes if n.managed]
    assert (node.capacity_type, node.zone, node.price) == ("spot", "zone-a", 0.30)


def midnight_window_pool(expire_after: str = "720h") -> dict[str, Any]:
    """WhenEmpty with budget 0 from midnight for 1h (the simulation starts at midnight
    UTC), any number of nodes after."""
    return nodepool(
        disruption={
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "30s",
            "budgets": [
                {"nodes": "0", "schedule": "0 0 * * *", "duration": "1h"},
                {"nodes": "100%"},
            ],
        },
        expire_after=expire_after,
    )


def test_a_zero_budget_during_a_cron_window_blocks_until_the_window_ends():
    """[DISR-4] budget 0 from midnight for 1h."""
    result = simulate(
        [SMALL],
        [midnight_window_pool(), deployment("app", 1, "500m")],
        [
            {"settle": "5m"},
            scale("app", 0),
            {"advance": "50m"},
            {"expect": {"nodes": {"managed": 1}}},
            {"advance": "20m"},
            {"expect": {"nodes": {"managed": 0}}},
        ],
    )
    assert result.failures == []
    ((when, message),) = disruptions(result)
    assert message.startswith("Empty: delete ")
    assert 3600 <= when <= 3600 + 25


def test_do_not_disrupt_for_5m_blocks_for_five_minutes_then_allows():
    """[API-2, DISR-3] the pod's duration counts from its start."""
    big = instance_type("big", "8", "16Gi", od(1.0))
    only_big = types_pool("big")
    both = types_pool("big", "small")
    app = deployment("app", 1, "500m", annotations={"karpenter.sh/do-not-disrupt": "5m"})
    result = simulate(
        [big, SMALL],
        [only_big, app],
        [{"settle": "5m"}, {"apply": [both]}, {"advance": "20m"}],
    )
    assert live_types(result) == ["small"]
    pod_started = next(c.initialized_at for c in result.nodeclaims if c.instance_type == "big")
    ((when, message),) = disruptions(result)
    assert message.startswith("Underutilized: replace ")
    assert pod_started + 300 <= when <= pod_started + 300 + 25
    control = simulate(
        [big, SMALL],
        [only_big, deployment("app", 1, "500m")],
        [{"settle": "5m"}, {"apply": [both]}, {"advance": "20m"}],
    )
    assert disruptions(control)[0][0] < pod_started + 300


def test_drifted_node_gets_three_replacements_before_it_goes():
    """[DISR-6] 3 x 2-CPU pods, only 3-CPU types allowed now: one replacement per pod,
    all initialized before the drifted node is deleted."""
    big = instance_type("big8", "8", "16Gi", od(0.50))
    c3 = instance_type("c3", "3", "6Gi", od(0.12))
    before = types_pool("big8", disruption={"consolidateAfter": "Never"})
    after = types_pool("c3", disruption={"consolidateAfter": "Never"})
    result = simulate(
        [big, c3],
        [before, deployment("app", 3, "2")],
        [
            {"settle": "5m"},
            {"expect": {"nodesByInstanceType": {"big8": 1}}},
            {"apply": [after]},
            {"advance": "10m"},
        ],
    )
    assert result.failures == []
    assert live_types(result) == ["c3", "c3", "c3"]
    (old,) = [c for c in result.nodeclaims if c.instance_type == "big8"]
    replacements = [c for c in result.nodeclaims if c.instance_type == "c3"]
    assert old.disruption_reason == "Drifted"
    assert len(replacements) == 3
    assert len({c.created_at for c in replacements}) == 1
    assert old.deleted_at > max(c.initialized_at for c in replacements)
    assert result.final.pending_pods == []


def test_expiration_is_forceful_and_pods_find_new_capacity():
    """[DISR-1] expireAfter 10m deletes the node even with a zero budget."""
    pool = nodepool(
        expire_after="10m", disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "0"}]}
    )
    result = simulate(
        [SMALL],
        [pool, deployment("app", 1, "500m")],
        [{"settle": "5m"}, {"advance": "10m"}, {"settle": "5m"}],
    )
    first, second = result.nodeclaims[:2]
    assert first.disruption_reason == "Expired"
    assert 600 <= first.deleted_at <= 610
    assert second.created_at >= 600
    assert [n.instance_type for n in result.final.nodes if n.managed] == ["small"]
    assert result.final.pending_pods == []


# --- passes over a cluster where nothing changes ---------------------------------------
# A pass is not worked out again while the state and the candidates' time-bound facts
# stay the same, so these check that what turns with time alone (a budget's schedule, a
# do-not-disrupt duration) is acted on at the first pass after it turns. expireAfter is
# Never: a finite one makes every pass work everything out again (a candidate's cost
# moves with its age).

PASS_AND_VALIDATION = 25  # a pass every 10 s, a consolidation validated 15 s later


def test_a_budget_window_ending_on_a_quiet_cluster_frees_the_next_pass():
    """[DISR-4] budget 0 from midnight for 1h (the simulation starts at midnight UTC); the
    empty node has waited since 5 minutes in, with nothing else happening."""
    result = simulate(
        [SMALL],
        [midnight_window_pool(expire_after="Never"), deployment("app", 1, "500m")],
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
