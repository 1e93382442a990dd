"""Decisions the differential suite (test_sched_differential.py) found Joiner making
differently from Karpenter's scheduler, each pinned to Karpenter's outcome on a small
case (each was checked against the oracle when it was written)."""

from __future__ import annotations

from collections import Counter

from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import Offering
from joiner.scheduling.model import (
    MIN_VALUES,
    NODE_AFFINITY,
    POOL_LIMITS,
    RESOURCES,
    TAINTS,
    TOPOLOGY_SPREAD,
    ClusterSnapshot,
    DaemonSet,
    ExistingNode,
)
from sched_builders import catalogue, layout, nodepool, pod, reasons, run

GI = 2**30 * 1000
WEB = {"app": "web"}


def _zone(claim) -> str | None:
    return claim.labels.get(wk.ZONE)


def _requirement(claim, key: str) -> list[str] | None:
    found = [r for r in claim.requirements if r["key"] == key and r["operator"] == "In"]
    return found[0]["values"] if found else None


# --- issue #18: quantities past int64 -------------------------------------------------


def test_a_memory_limit_past_int64_schedules_as_if_unlimited():
    pods = [pod(f"p{i}", cpu="1", memory="1Gi") for i in range(3)]
    unlimited = run(pods)
    for limits in ({"memory": "10000000Gi"}, {"cpu": "1e30"}, {"cpu": "1000", "memory": "8Ei"}):
        plan = run(pods, pools=[nodepool(limits=limits)])
        assert layout(plan) == layout(unlimited)
        assert plan.unplaceable == {}


def test_a_pod_requesting_past_int64_is_unplaceable_and_the_others_are_placed():
    pods = [pod("huge", cpu="1", memory="10Pi"), pod("fine", cpu="1", memory="1Gi")]
    plan = run(pods)
    assert reasons(plan) == {"huge": RESOURCES}
    assert plan.unplaceable["default/huge"].message.startswith(
        "no instance type has enough resources, requests cpu=1, memory=10Pi"
    )
    assert layout(plan) == [("small", ["fine"])]


def test_an_existing_pool_usage_past_int64_leaves_a_huge_limit_room():
    """Pool usage is summed exactly: 10,000 nodes of 1Ti are past int64 milli-bytes."""
    nodes = [
        ExistingNode(
            f"n{i}",
            {wk.NODEPOOL: "default", wk.HOSTNAME: f"n{i}"},
            {"cpu": 0, "memory": 2**40 * 1000, "pods": 0},
        )
        for i in range(10_000)
    ]
    plan = run(
        [pod("p", cpu="1", memory="1Gi")],
        pools=[nodepool(limits={"memory": "100Pi"})],
        snapshot=ClusterSnapshot(nodes=nodes),
    )
    assert layout(plan) == [("small", ["p"])]


# --- minValues ---------------------------------------------------------------------


def test_min_values_opens_another_nodeclaim_rather_than_drop_types():
    """Two pods together fit only the large type; with minValues 2 Karpenter puts each
    on its own NodeClaim (medium or large) instead of leaving them pending."""
    pool = nodepool(requirements=[{"key": wk.INSTANCE_TYPE, "operator": "Exists", "minValues": 2}])
    plan = run([pod(f"p{i}", cpu="3", memory="1Gi") for i in range(2)], pools=[pool])
    assert plan.unplaceable == {}
    assert [(nc.instance_types, len(nc.pods)) for nc in plan.nodeclaims] == [
        (["medium", "large"], 1),
        (["medium", "large"], 1),
    ]


def test_min_values_that_even_one_pod_breaks_names_karpenters_reason():
    pool = nodepool(requirements=[{"key": wk.INSTANCE_TYPE, "operator": "Exists", "minValues": 2}])
    plan = run([pod("p", cpu="7", memory="1Gi")], pools=[pool])
    assert reasons(plan) == {"p": MIN_VALUES}
    assert plan.unplaceable["default/p"].message == (
        "minValues requirement is not met for label(s)"
        " (label(s)=[node.kubernetes.io/instance-type]), minValues 2 on"
        " node.kubernetes.io/instance-type but only 1 value(s) remain, nodepool=default"
    )


# --- pool order ----------------------------------------------------------------------


def test_pools_of_equal_weight_are_tried_by_name_descending():
    plan = run([pod("p")], pools=[nodepool("alpha"), nodepool("beta")])
    assert [nc.nodepool for nc in plan.nodeclaims] == ["beta"]
    weighted = run([pod("p")], pools=[nodepool("alpha", weight=2), nodepool("beta", weight=1)])
    assert [nc.nodepool for nc in weighted.nodeclaims] == ["alpha"]


# --- relaxation ----------------------------------------------------------------------


def test_a_retry_starts_again_from_the_full_preferences():
    """api sorts first and fails everything (no db yet, and its second required term
    names a zone no pool offers); once db is placed the retry meets its first term and
    its preferred affinity, as Karpenter's retry of the original pod does."""
    pool = nodepool(
        requirements=[{"key": wk.ZONE, "operator": "In", "values": ["test-zone-1", "test-zone-2"]}]
    )
    terms = [
        {"matchExpressions": [{"key": wk.ZONE, "operator": "In", "values": ["test-zone-2"]}]},
        {"matchExpressions": [{"key": wk.ZONE, "operator": "In", "values": ["test-zone-3"]}]},
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": wk.ZONE,
                    },
                }
            ]
        },
    }
    api = pod("api", cpu="2", affinity=affinity)
    db = pod("db", labels={"app": "db"}, nodeSelector={wk.ZONE: "test-zone-2"})
    plan = run([api, db], pools=[pool])
    assert plan.unplaceable == {}
    assert [(_zone(nc), sorted(nc.pods)) for nc in plan.nodeclaims] == [
        ("test-zone-2", ["default/api", "default/db"])
    ]


# --- topology ------------------------------------------------------------------------


def test_a_spread_pins_the_cheaper_domain_among_equally_empty_ones():
    types = [
        new_instance_type(
            "only",
            cpu="2",
            memory="4Gi",
            pods=10,
            offerings=[
                Offering("test-zone-1", "on-demand", 0.2),
                Offering("test-zone-1", "spot", 0.1),
            ],
        )
    ]
    spread = _spread(key=wk.CAPACITY_TYPE)
    plan = run([pod("w", labels=WEB, topologySpreadConstraints=spread)], types=types)
    assert [(_requirement(nc, wk.CAPACITY_TYPE), nc.price) for nc in plan.nodeclaims] == [
        (["spot"], 0.1)
    ]


def test_a_spread_counts_only_pods_on_nodes_the_owner_could_use():
    """nodeAffinityPolicy Honor (the default): the two web pods on an on-demand node do
    not count for a web pod that only runs on spot, so zone 1 is as empty as the others
    and, equally priced, comes first."""
    node = ExistingNode(
        "od",
        {wk.ZONE: "test-zone-1", wk.HOSTNAME: "od", wk.CAPACITY_TYPE: "on-demand"},
        {"cpu": 0, "memory": 0, "pods": 10000},
        pods=[pod(f"old{i}", labels=WEB) for i in range(2)],
    )
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": wk.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": WEB},
        }
    ]
    new = pod(
        "new",
        labels=WEB,
        nodeSelector={wk.CAPACITY_TYPE: "spot"},
        topologySpreadConstraints=spread,
    )
    plan = run([new], snapshot=ClusterSnapshot(nodes=[node]))
    assert [_zone(nc) for nc in plan.nodeclaims] == ["test-zone-1"]


def test_a_spread_skews_over_the_required_domains_not_the_preferred_ones():
    """The preferred zone is tried first, but the skew counts every zone the pod may
    use: the second pod cannot join the first in zone 1 (2 - 0 > 1) until its
    preference is relaxed."""
    prefer = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [
                            {"key": wk.ZONE, "operator": "In", "values": ["test-zone-1"]}
                        ]
                    },
                }
            ]
        }
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": wk.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": WEB},
        }
    ]
    pods = [
        pod(f"w{i}", labels=WEB, affinity=prefer, topologySpreadConstraints=spread)
        for i in range(2)
    ]
    plan = run(pods)
    assert Counter(_zone(nc) for nc in plan.nodeclaims) == Counter(
        {"test-zone-1": 1, "test-zone-2": 1}
    )


# --- Karpenter's words -----------------------------------------------------------------


def test_failure_messages_start_with_karpenters_words():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    cases = {
        "tainted": (
            [nodepool(taints=[taint])],
            pod("p"),
            TAINTS,
            "did not tolerate taint (taint=dedicated=gpu:NoSchedule), nodepool=default",
        ),
        "undefined label": (
            [nodepool()],
            pod("p", nodeSelector={"example.com/team": "a"}),
            NODE_AFFINITY,
            'incompatible requirements, label "example.com/team" does not have known values,'
            " nodepool=default",
        ),
        "conflicting values": (
            [nodepool(labels={"example.com/team": "b"})],
            pod("p", nodeSelector={"example.com/team": "a"}),
            NODE_AFFINITY,
            "incompatible requirements, key example.com/team, example.com/team In [a] not in"
            " example.com/team In [b], nodepool=default",
        ),
        "limits reached": (
            [nodepool(limits={"cpu": "1"})],
            pod("p"),
            POOL_LIMITS,
            "all available instance types exceed limits for nodepool (NodePool=default),"
            " limits on cpu leave no room for a node, nodepool=default",
        ),
    }
    for name, (pools, candidate, constraint, message) in cases.items():
        plan = run([candidate], pools=pools, types=catalogue())
        (why,) = plan.unplaceable.values()
        assert (name, why.constraint, why.message) == (name, constraint, message)


def test_a_pod_no_pool_can_take_is_reported_under_the_pool_it_targets():
    """Pools are tried by name descending, so the tainted pool's reason comes first in
    the message, but the constraint is that of the pool the pod tolerates."""
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    pools = [nodepool("open", limits={"cpu": "1"}), nodepool("tainted", taints=[taint])]
    plan = run([pod("p")], pools=pools)
    (why,) = plan.unplaceable.values()
    assert why.constraint == POOL_LIMITS
    assert why.message.startswith("did not tolerate taint (taint=dedicated=x:NoSchedule)")
    assert "; all available instance types exceed limits for nodepool (NodePool=open)" in (
        why.message
    )
    assert reasons(run([pod("p")], pools=[nodepool(taints=[taint])])) == {"p": TAINTS}


def test_a_spread_failure_names_the_topology_key():
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": wk.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": WEB},
        }
    ]
    pool = nodepool(requirements=[{"key": wk.ZONE, "operator": "In", "values": ["test-zone-1"]}])
    node = ExistingNode(
        "z2", {wk.ZONE: "test-zone-2", wk.HOSTNAME: "z2"}, {"cpu": 0, "memory": 0, "pods": 0}
    )
    pods = [pod(f"w{i}", labels=WEB, topologySpreadConstraints=spread) for i in range(2)]
    plan = run(pods, pools=[pool], snapshot=ClusterSnapshot(nodes=[node]))
    assert reasons(plan) == {"w1": TOPOLOGY_SPREAD}
    assert plan.unplaceable["default/w1"].message == (
        "unsatisfiable topology constraint for topology spread, key=topology.kubernetes.io/zone,"
        " maxSkew 1 would be exceeded, nodepool=default"
    )


def _spread(skew: int = 1, key: str = wk.ZONE) -> list[dict]:
    return [
        {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": WEB},
        }
    ]


def test_a_zone_without_an_available_offering_is_no_domain():
    """The only type can launch in zone 1 alone (zone 3 is unavailable): three web pods
    spread over the zones all go to zone 1, as nothing can ever run in zone 3."""
    types = [
        new_instance_type(
            "only",
            cpu="4",
            memory="8Gi",
            pods=20,
            offerings=[
                Offering("test-zone-1", "on-demand", 0.2),
                Offering("test-zone-3", "on-demand", 0.2, available=False),
            ],
        )
    ]
    pods = [pod(f"w{i}", labels=WEB, topologySpreadConstraints=_spread()) for i in range(3)]
    plan = run(pods, types=types)
    assert plan.unplaceable == {}
    assert {_zone(nc) for nc in plan.nodeclaims} == {"test-zone-1"}


def test_a_zone_the_pool_names_is_a_domain_even_without_offerings():
    """The pool names zones 1 and 2 but its types launch only in zone 1: zone 2 stays an
    empty domain, so a second pod may not join the first (as in Karpenter)."""
    types = [
        new_instance_type(
            "only", cpu="4", memory="8Gi", pods=20, offerings=[Offering("test-zone-1", "spot", 1)]
        )
    ]
    pool = nodepool(
        requirements=[{"key": wk.ZONE, "operator": "In", "values": ["test-zone-1", "test-zone-2"]}]
    )
    pods = [pod(f"w{i}", labels=WEB, topologySpreadConstraints=_spread()) for i in range(2)]
    assert reasons(run(pods, pools=[pool], types=types)) == {"w1": TOPOLOGY_SPREAD}


def test_an_open_nodeclaim_is_chosen_where_the_pod_raises_its_price_least():
    """a and b must be apart, so each opens a NodeClaim; c fits a's only on a larger type
    (a holds 3.8 of 4 CPUs) and b's on its current one: it joins b, not the older a."""
    apart = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"apart": "yes"}}, "topologyKey": wk.HOSTNAME}
            ]
        }
    }
    pods = [
        pod("a", cpu="3800m", labels={"apart": "yes"}, affinity=apart),
        pod("b", cpu="1500m", labels={"apart": "yes"}, affinity=apart),
        pod("c", cpu="500m"),
    ]
    plan = run(pods, types=catalogue()[1:])  # medium (4 CPU, 8Gi) and large
    assert layout(plan) == [("medium", ["a"]), ("medium", ["b", "c"])]


def test_equally_empty_zones_go_to_the_least_flexible_first():
    """Zone 3 has only on-demand, zone 2 spot and on-demand: the first pod takes zone 3,
    so the next (which must differ in capacity type) can still have spot in zone 2 and
    the last two pods share the two NodeClaims instead of opening a third."""
    types = [
        new_instance_type(
            "t",
            cpu="8",
            memory="64Gi",
            pods=110,
            offerings=[
                Offering("test-zone-2", "spot", 1.0),
                Offering("test-zone-2", "on-demand", 1.0),
                Offering("test-zone-3", "on-demand", 1.0),
            ],
        )
    ]
    spread = [*_spread(), *_spread(key=wk.CAPACITY_TYPE)]
    pods = [
        pod(f"w{i}", cpu="3", memory="6Gi", labels=WEB, topologySpreadConstraints=spread)
        for i in range(4)
    ]
    plan = run(pods, types=types)
    assert plan.unplaceable == {}
    assert sorted(
        (_zone(nc), _requirement(nc, wk.CAPACITY_TYPE)[0], len(nc.pods)) for nc in plan.nodeclaims
    ) == [("test-zone-2", "spot", 2), ("test-zone-3", "on-demand", 2)]


# the requests of the daemonset that runs on every node, as a NodeClaim reports them
EVERY_NODE_DAEMON = {"cpu": 100, "memory": 128 * 2**20 * 1000, "pods": 1000}


def _on_demand_and_every_node_daemonsets() -> ClusterSnapshot:
    on_demand_only = pod("od", cpu="100m", memory="128Mi")
    on_demand_only["spec"]["nodeSelector"] = {wk.CAPACITY_TYPE: "on-demand"}
    return ClusterSnapshot(
        daemonsets=[
            DaemonSet("kube-system/od", on_demand_only),
            DaemonSet("kube-system/all", pod("all", cpu="100m", memory="128Mi")),
        ]
    )


def test_a_daemonset_for_a_capacity_type_no_offering_has_adds_no_overhead():
    """The pool allows any capacity type, but its only type is offered as spot: the
    daemonset that selects on-demand nodes never runs on its nodes, so its pod does not
    count against the type's two pods (found by the 5,000-workload differential run)."""
    types = [
        new_instance_type(
            "t", cpu="1", memory="1Gi", pods=2, offerings=[Offering("test-zone-2", "spot", 0.08)]
        )
    ]
    plan = run([pod("p")], types=types, snapshot=_on_demand_and_every_node_daemonsets())
    assert layout(plan) == [("t", ["p"])]
    assert plan.nodeclaims[0].daemonset_overhead == EVERY_NODE_DAEMON


def test_a_daemonset_adds_overhead_only_to_the_types_it_runs_on():
    """Type a is offered only as spot, b also on-demand: the on-demand daemonset would
    run on b's nodes only, so the pod still fits a's two pods with the other daemonset
    (found by the 5,000-workload differential run; Karpenter places it on a too)."""
    types = [
        new_instance_type(
            "a", cpu="1", memory="1Gi", pods=2, offerings=[Offering("test-zone-2", "spot", 0.08)]
        ),
        new_instance_type(
            "b",
            cpu="1",
            memory="1Gi",
            pods=3,
            offerings=[
                Offering("test-zone-2", "spot", 0.5),
                Offering("test-zone-2", "on-demand", 0.2),
            ],
        ),
    ]
    plan = run([pod("p")], types=types, snapshot=_on_demand_and_every_node_daemonsets())
    assert layout(plan) == [("a", ["p"])]
    assert plan.nodeclaims[0].daemonset_overhead == EVERY_NODE_DAEMON


def _away_from(labels: dict[str, str]) -> dict:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": wk.HOSTNAME}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_a_group_fills_the_claim_it_already_raised_before_raising_another():
    """a holds x0 (small, 1.0), b holds x1 and y (medium, 2.0). z0 goes to a, the emptier,
    which becomes a gpu node; z1 then finds a and b equally full: a already has the GPU
    room, so z1 costs nothing there but b's rise to a gpu node. Karpenter puts z1 on the
    older a too (found by the 5,000-workload differential run)."""
    types = [
        new_instance_type(
            n,
            cpu=cpu,
            memory=mem,
            pods=10,
            resources=extra,
            offerings=[Offering("test-zone-1", "on-demand", price)],
        )
        for n, cpu, mem, extra, price in (
            ("small", "4", "8Gi", None, 1.0),
            ("medium", "4", "32Gi", None, 2.0),
            ("gpu", "8", "64Gi", {"example.com/accel": "2"}, 5.0),
        )
    ]
    x = {"x": "1"}
    pods = [
        pod("x0", cpu="2", memory="1Gi", labels={**x, "n": "0"}, affinity=_away_from(x)),
        pod("x1", cpu="2", memory="1Gi", labels={**x, "n": "1"}, affinity=_away_from(x)),
        pod("y", cpu="1500m", memory="20Gi", affinity=_away_from({"n": "0"})),
        *(
            pod(f"z{i}", cpu="250m", memory="1Gi", extra={"example.com/accel": "1"})
            for i in range(2)
        ),
    ]
    plan = run(pods, types=types)
    assert sorted(layout(plan)) == [("gpu", ["x0", "z0", "z1"]), ("medium", ["x1", "y"])]
    assert plan.price == 7.0
