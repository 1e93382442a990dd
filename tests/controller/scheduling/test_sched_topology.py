"""Topology spread and pod (anti-)affinity [SCHED-7, 8]."""

from __future__ import annotations

from collections import Counter

from joiner.api import labels as wk
from joiner.api.requirements import Requirements
from joiner.scheduling.model import (
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    TOPOLOGY_SPREAD,
    ClusterSnapshot,
    ExistingNode,
)
from joiner.scheduling.preferences import build_constraints
from joiner.scheduling.solver import solve
from joiner.scheduling.topology import Topology
from sched_builders import layout, nodepool, pod, reasons, run

GI = 2**30 * 1000
APP = {"app": "web"}
ALLOCATABLE = {"cpu": 4000, "memory": 8 * GI, "pods": 10000}


def _spread(key: str = wk.ZONE, skew: int = 1, when: str = "DoNotSchedule", **extra) -> list:
    return [
        {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": APP},
            **extra,
        }
    ]


def _term(key: str, labels: dict | None = None) -> dict:
    return {"labelSelector": {"matchLabels": labels or APP}, "topologyKey": key}


def _anti(key: str, labels: dict | None = None) -> dict:
    return {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(key, labels)]}
    }


def _affinity(key: str, labels: dict | None = None) -> dict:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(key, labels)]}}


def _zones(plan) -> Counter:
    return Counter(nc.labels.get(wk.ZONE) for nc in plan.nodeclaims for _ in nc.pods)


def _web(name: str, **spec) -> dict:
    return pod(name, labels=APP, **spec)


def test_zone_spread_of_four_pods_over_three_zones_lands_2_1_1():
    plan = run([_web(f"p{i}", topologySpreadConstraints=_spread()) for i in range(4)])
    assert layout(plan) == [("small", ["p0", "p3"]), ("small", ["p1"]), ("small", ["p2"])]
    assert [nc.labels[wk.ZONE] for nc in plan.nodeclaims] == [
        "test-zone-1",
        "test-zone-2",
        "test-zone-3",
    ]
    assert {"key": wk.ZONE, "operator": "In", "values": ["test-zone-1"]} in (
        plan.nodeclaims[0].requirements
    )


def test_zone_spread_counts_pods_already_running():
    nodes = [
        ExistingNode(
            "n1",
            {wk.ZONE: "test-zone-1"},
            {"cpu": 0, "memory": 0, "pods": 0},
            pods=[_web("old1"), _web("old2")],
        )
    ]
    plan = run(
        [_web(f"p{i}", topologySpreadConstraints=_spread()) for i in range(4)],
        snapshot=ClusterSnapshot(nodes=nodes),
    )
    assert _zones(plan) == Counter({"test-zone-2": 2, "test-zone-3": 2})


def test_zone_spread_with_a_larger_skew_packs_more():
    plan = run([_web(f"p{i}", topologySpreadConstraints=_spread(skew=3)) for i in range(4)])
    assert _zones(plan) == Counter({"test-zone-1": 3, "test-zone-2": 1})


def test_zone_spread_honours_the_pod_node_affinity_for_domains():
    # nodeAffinityPolicy Honor (default): only zones 1 and 2 count, so 2/2
    selector = {wk.ZONE: "test-zone-1"}
    pods = [
        _web(
            f"p{i}",
            topologySpreadConstraints=_spread(),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": wk.ZONE,
                                        "operator": "In",
                                        "values": ["test-zone-1", "test-zone-2"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        )
        for i in range(4)
    ]
    plan = run(pods)
    assert _zones(plan) == Counter({"test-zone-1": 2, "test-zone-2": 2})
    # nodeAffinityPolicy Ignore: zone 3 counts as an empty domain, so at most 1 per zone
    pods = [
        _web(
            f"p{i}",
            nodeSelector=selector,
            topologySpreadConstraints=_spread(nodeAffinityPolicy="Ignore"),
        )
        for i in range(2)
    ]
    plan = run(pods)
    assert _zones(plan) == Counter({"test-zone-1": 1})
    assert reasons(plan) == {"p1": TOPOLOGY_SPREAD}


def test_node_taints_policy_honor_ignores_domains_of_untolerated_pools():
    taint = {"key": "special", "effect": "NoSchedule"}
    pools = [
        nodepool(
            "main",
            requirements=[
                {"key": wk.ZONE, "operator": "In", "values": ["test-zone-1", "test-zone-2"]}
            ],
        ),
        nodepool(
            "tainted",
            taints=[taint],
            requirements=[{"key": wk.ZONE, "operator": "In", "values": ["test-zone-3"]}],
        ),
    ]
    honor = [
        _web(f"p{i}", topologySpreadConstraints=_spread(nodeTaintsPolicy="Honor")) for i in range(4)
    ]
    assert _zones(run(honor, pools=pools)) == Counter({"test-zone-1": 2, "test-zone-2": 2})
    ignore = [_web(f"p{i}", topologySpreadConstraints=_spread()) for i in range(4)]
    plan = run(ignore, pools=pools)
    assert _zones(plan) == Counter({"test-zone-1": 1, "test-zone-2": 1})
    assert set(reasons(plan).values()) == {TOPOLOGY_SPREAD}


def test_min_domains_above_the_domain_count_allows_one_pod_per_domain():
    pods = [_web(f"p{i}", topologySpreadConstraints=_spread(minDomains=5)) for i in range(4)]
    plan = run(pods)
    assert _zones(plan) == Counter({"test-zone-1": 1, "test-zone-2": 1, "test-zone-3": 1})
    assert reasons(plan) == {"p3": TOPOLOGY_SPREAD}


def test_schedule_anyway_spread_is_relaxed_when_it_cannot_be_met():
    pods = [
        _web(
            f"p{i}",
            nodeSelector={wk.ZONE: "test-zone-1"},
            topologySpreadConstraints=_spread(when="ScheduleAnyway", nodeAffinityPolicy="Ignore"),
        )
        for i in range(3)
    ]
    plan = run(pods)
    assert _zones(plan) == Counter({"test-zone-1": 3})
    assert plan.unplaceable == {}


def test_hostname_spread_puts_each_pod_on_its_own_node():
    plan = run([_web(f"p{i}", topologySpreadConstraints=_spread(wk.HOSTNAME)) for i in range(3)])
    assert layout(plan) == [("small", ["p0"]), ("small", ["p1"]), ("small", ["p2"])]


def test_capacity_type_spread():
    pods = [_web(f"p{i}", topologySpreadConstraints=_spread(wk.CAPACITY_TYPE)) for i in range(4)]
    plan = run(pods)
    per_type = Counter(nc.labels[wk.CAPACITY_TYPE] for nc in plan.nodeclaims for _ in nc.pods)
    assert per_type == Counter({"on-demand": 2, "spot": 2})


def test_spread_on_a_custom_label_uses_the_pool_values():
    pools = [nodepool(requirements=[{"key": "rack", "operator": "In", "values": ["r1", "r2"]}])]
    pods = [_web(f"p{i}", topologySpreadConstraints=_spread("rack")) for i in range(4)]
    plan = run(pods, pools=pools)
    per_rack = Counter(nc.labels["rack"] for nc in plan.nodeclaims for _ in nc.pods)
    assert per_rack == Counter({"r1": 2, "r2": 2})


def test_match_label_keys_spread_each_version_separately():
    def versioned(name: str, version: str) -> dict:
        return pod(
            name,
            labels={**APP, "version": version},
            topologySpreadConstraints=_spread(matchLabelKeys=["version"]),
        )

    pods = [versioned("a1", "1"), versioned("a2", "1"), versioned("b1", "2"), versioned("b2", "2")]
    plan = run(pods)
    zones = {p.split("/")[1]: nc.labels[wk.ZONE] for nc in plan.nodeclaims for p in nc.pods}
    assert zones["a1"] != zones["a2"] and zones["b1"] != zones["b2"]
    assert _zones(plan) == Counter({"test-zone-1": 2, "test-zone-2": 2})


def test_hostname_anti_affinity_puts_three_pods_on_three_nodes():
    plan = run([_web(f"p{i}", affinity=_anti(wk.HOSTNAME)) for i in range(3)])
    assert layout(plan) == [("small", ["p0"]), ("small", ["p1"]), ("small", ["p2"])]


def test_zone_anti_affinity_allows_one_pod_per_zone():
    plan = run([_web(f"p{i}", affinity=_anti(wk.ZONE)) for i in range(4)])
    assert _zones(plan) == Counter({"test-zone-1": 1, "test-zone-2": 1, "test-zone-3": 1})
    assert reasons(plan) == {"p3": POD_ANTI_AFFINITY}


def test_anti_affinity_of_running_pods_keeps_new_matching_pods_away():
    guard = pod("guard", affinity=_anti(wk.ZONE, {"app": "other"}))
    nodes = [ExistingNode("n1", {wk.ZONE: "test-zone-1"}, ALLOCATABLE, pods=[guard])]
    plan = run(
        [_web("p", nodeSelector={wk.ZONE: "test-zone-1"})], snapshot=ClusterSnapshot(nodes=nodes)
    )
    assert plan.existing == {"default/p": "n1"}  # not selected by the guard's term
    plan = run(
        [_web("p")],
        snapshot=ClusterSnapshot(
            nodes=[
                ExistingNode(
                    "n1",
                    {wk.ZONE: "test-zone-1"},
                    ALLOCATABLE,
                    pods=[pod("guard", affinity=_anti(wk.ZONE))],
                )
            ]
        ),
    )
    assert plan.existing == {}
    assert {"key": wk.ZONE, "operator": "In", "values": ["test-zone-2", "test-zone-3"]} in (
        plan.nodeclaims[0].requirements
    )
    plan = run(
        [_web("p", nodeSelector={wk.ZONE: "test-zone-1"})],
        snapshot=ClusterSnapshot(
            nodes=[
                ExistingNode(
                    "n1",
                    {wk.ZONE: "test-zone-1"},
                    ALLOCATABLE,
                    pods=[pod("guard", affinity=_anti(wk.ZONE))],
                )
            ]
        ),
    )
    assert reasons(plan) == {"p": POD_ANTI_AFFINITY}


def test_zone_self_affinity_keeps_a_group_in_one_zone():
    plan = run([_web(f"p{i}", cpu="3", affinity=_affinity(wk.ZONE)) for i in range(3)])
    assert len(plan.nodeclaims) == 2
    assert _zones(plan) == Counter({"test-zone-1": 3})


def test_pod_affinity_follows_a_running_pod():
    nodes = [
        ExistingNode(
            "db",
            {wk.ZONE: "test-zone-2"},
            {"cpu": 0, "memory": 0, "pods": 0},
            pods=[pod("db", labels={"app": "db"})],
        )
    ]
    plan = run(
        [pod("api", affinity=_affinity(wk.ZONE, {"app": "db"}))],
        snapshot=ClusterSnapshot(nodes=nodes),
    )
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-2"


def test_pod_affinity_to_a_pod_placed_later_in_the_same_batch_is_retried():
    # the big db pod is placed first (CPU order); api follows it onto the same node
    plan = run(
        [
            pod("api", affinity=_affinity(wk.HOSTNAME, {"app": "db"})),
            pod("db", cpu="1", labels={"app": "db"}),
        ]
    )
    assert layout(plan) == [("small", ["api", "db"])]
    # here api sorts first, fails, and is retried once db is placed
    plan = run(
        [
            pod("api", cpu="1", affinity=_affinity(wk.HOSTNAME, {"app": "db"})),
            pod("db", labels={"app": "db"}),
        ]
    )
    assert layout(plan) == [("small", ["api", "db"])]


def test_pod_affinity_without_any_matching_pod_fails():
    plan = run([pod("api", affinity=_affinity(wk.ZONE, {"app": "db"}))])
    assert reasons(plan) == {"api": POD_AFFINITY}


def test_preferred_zonal_anti_affinity_blocks_every_zone_its_claim_may_use():
    """As in Karpenter: the first pod's NodeClaim keeps every empty zone open, so its
    preference blocks them all and the other pods relax theirs onto the same claim
    instead of paying for more nodes."""
    preferred = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": _term(wk.ZONE)}
            ]
        }
    }
    plan = run([_web(f"p{i}", affinity=preferred) for i in range(4)])
    assert plan.unplaceable == {}
    assert len(plan.nodeclaims) == 1
    assert not any(
        r["key"] == wk.ZONE and len(r["values"]) == 1 for r in plan.nodeclaims[0].requirements
    )


def test_preferred_pod_affinity_is_followed_when_possible():
    nodes = [
        ExistingNode(
            "db",
            {wk.ZONE: "test-zone-3"},
            {"cpu": 0, "memory": 0, "pods": 0},
            pods=[pod("db", labels={"app": "db"})],
        )
    ]
    preferred = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": _term(wk.ZONE, {"app": "db"})}
            ]
        }
    }
    plan = run([pod("api", affinity=preferred)], snapshot=ClusterSnapshot(nodes=nodes))
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-3"
    plan = run([pod("api", affinity=preferred)])
    assert plan.unplaceable == {} and wk.ZONE not in plan.nodeclaims[0].labels


def test_without_pools_hostname_skew_is_measured_against_existing_nodes():
    # kube-scheduler view: both nodes already hold one matching pod, so a third may join
    nodes = [
        ExistingNode(f"n{i}", {wk.ZONE: "test-zone-1"}, ALLOCATABLE, pods=[_web(f"o{i}")])
        for i in range(2)
    ]
    plan = solve(
        [_web("p", topologySpreadConstraints=_spread(wk.HOSTNAME))],
        [],
        {},
        ClusterSnapshot(nodes=nodes),
    )
    assert plan.existing == {"default/p": "n0"}
    plan = run(
        [_web("p", topologySpreadConstraints=_spread(wk.HOSTNAME))],
        snapshot=ClusterSnapshot(nodes=nodes),
    )
    assert plan.existing == {} and len(plan.nodeclaims) == 1


def test_relaxation_order():
    zone = [{"key": wk.ZONE, "operator": "In", "values": ["test-zone-1"]}]
    spec_affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": zone}, {"matchExpressions": zone}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": zone}}
            ],
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": _term(wk.ZONE)},
                {"weight": 9, "podAffinityTerm": _term(wk.HOSTNAME)},
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": _term(wk.ZONE)}
            ]
        },
    }
    p = _web("p", affinity=spec_affinity, topologySpreadConstraints=_spread(when="ScheduleAnyway"))
    constraints = build_constraints(p, Requirements(), Topology(lambda key: {}, []))
    assert [g.key for g in constraints.preferred_affinity] == [wk.HOSTNAME, wk.ZONE]
    steps = []
    while (relaxed := constraints.relax()) is not None:
        constraints, step = relaxed
        steps.append(step)
    assert steps == [
        "required node affinity term",
        "preferred pod affinity",
        "preferred pod affinity",
        "preferred pod anti-affinity",
        "preferred node affinity",
        "ScheduleAnyway topology spread",
        "PreferNoSchedule taints",
    ]
    assert constraints.topology == ()
