"""Bin packing, daemonset overhead, pools, limits and NodeClaim finalisation [SCHED-3..5, 9, 10]."""

from __future__ import annotations

from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import Offering
from joiner.scheduling.model import (
    POOL_LIMITS,
    RESOURCES,
    ClusterSnapshot,
    DaemonSet,
    ExistingNode,
)
from joiner.scheduling.nodeclaims import MAX_INSTANCE_TYPES
from joiner.scheduling.solver import solve
from sched_builders import catalogue, layout, nodepool, pod, reasons, run

GI = 2**30 * 1000


def test_five_small_pods_fit_one_node_and_list_every_type_cheapest_first():
    plan = run([pod(f"p{i}", cpu="", memory="10M") for i in range(5)])
    assert layout(plan) == [("small", ["p0", "p1", "p2", "p3", "p4"])]
    claim = plan.nodeclaims[0]
    assert claim.instance_types == ["small", "medium", "large"]
    assert claim.requests == {"memory": 5 * 10**7 * 1000, "pods": 5000}
    assert claim.price == 0.054  # small, spot: 2 x 0.025 + 4 x 0.001
    assert claim.requirements == [
        {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand", "spot"]},
        {"key": wk.NODEPOOL, "operator": "In", "values": ["default"]},
        {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["small", "medium", "large"]},
    ]
    assert claim.labels == {wk.NODEPOOL: "default"}


def test_forty_pods_of_1_8g_on_4gi_types_need_twenty_nodes():
    types = [new_instance_type("four-gi", cpu="4", memory="4Gi", pods=10)]
    plan = run([pod(f"p{i:02d}", cpu="", memory="1.8G") for i in range(40)], types=types)
    assert [len(nc.pods) for nc in plan.nodeclaims] == [2] * 20
    assert plan.unplaceable == {}


def test_pods_are_sorted_by_cpu_then_memory_before_packing():
    # 1.5 CPU fits small (2 CPU) alone; placed first it opens the small-capable claim,
    # then the 1-CPU pods join it until only medium/large remain.
    pods = [pod("a", cpu="1"), pod("b", cpu="1500m"), pod("c", cpu="1")]
    plan = run(pods)
    assert layout(plan) == [("medium", ["a", "b", "c"])]
    assert plan.nodeclaims[0].instance_types == ["medium", "large"]


def test_a_pod_larger_than_every_type_is_unplaceable_for_resources():
    plan = run([pod("huge", cpu="9")])
    assert plan.nodeclaims == []
    assert reasons(plan) == {"huge": RESOURCES}
    assert "cpu=9" in plan.unplaceable["default/huge"].message


def test_daemonset_overhead_counts_on_new_nodes():
    daemonset = DaemonSet("logging", pod("ds", cpu="2", memory=""))
    plan = run([pod("app", cpu="1", memory="")], snapshot=ClusterSnapshot(daemonsets=[daemonset]))
    assert layout(plan) == [("medium", ["app"])]
    claim = plan.nodeclaims[0]
    assert claim.daemonset_overhead == {"cpu": 2000, "pods": 1000}
    assert claim.requests == {"cpu": 3000, "pods": 2000}


def test_daemonsets_that_do_not_tolerate_the_pool_taint_add_no_overhead():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    toleration = {"key": "dedicated", "operator": "Exists"}
    pools = [nodepool(taints=[taint])]
    daemonset = DaemonSet("logging", pod("ds", cpu="2", memory=""))
    plan = run(
        [pod("app", cpu="1", memory="", tolerations=[toleration])],
        pools=pools,
        snapshot=ClusterSnapshot(daemonsets=[daemonset]),
    )
    assert layout(plan) == [("small", ["app"])]
    assert plan.nodeclaims[0].daemonset_overhead == {}
    assert plan.nodeclaims[0].taints == [taint]


def test_highest_weight_pool_is_used_first():
    pools = [nodepool("low", weight=10), nodepool("high", weight=50), nodepool("none")]
    plan = run([pod("p")], pools=pools)
    assert [nc.nodepool for nc in plan.nodeclaims] == ["high"]


def test_a_pool_without_instance_types_launches_nothing():
    pool = nodepool()
    plan = solve([pod("p")], [pool], {})
    assert reasons(plan) == {"p": "no nodepool"}


def test_pool_cpu_limit_admits_one_1_75_cpu_pod_but_not_a_second():
    plan = run(
        [pod("a", cpu="1750m"), pod("b", cpu="1750m")], pools=[nodepool(limits={"cpu": "2"})]
    )
    assert layout(plan) == [("small", ["a"])]
    assert plan.nodeclaims[0].instance_types == ["small"]
    assert reasons(plan) == {"b": POOL_LIMITS}


def test_pool_limit_counts_existing_nodes_of_the_pool():
    node = ExistingNode(
        "n1",
        {wk.NODEPOOL: "default"},
        allocatable={"cpu": 0, "memory": 0, "pods": 0},
        capacity={"cpu": 3000, "memory": 4 * GI},
    )
    plan = run(
        [pod("a", cpu="500m")],
        pools=[nodepool(limits={"cpu": "4"})],
        snapshot=ClusterSnapshot(nodes=[node]),
    )
    assert reasons(plan) == {"a": POOL_LIMITS}


def test_pool_node_limit():
    plan = run(
        [pod("a", cpu="1500m"), pod("b", cpu="1500m", memory="101Mi")],
        pools=[nodepool(limits={"nodes": "1"})],
        types=[new_instance_type("small", cpu="2", memory="4Gi", pods=10)],
    )
    assert layout(plan) == [("small", ["b"])]
    assert reasons(plan) == {"a": POOL_LIMITS}
    assert "nodes=1" in plan.unplaceable["default/a"].message


def test_a_limited_pool_falls_through_to_the_next_pool():
    pools = [nodepool("capped", weight=90, limits={"cpu": "1"}), nodepool("open", weight=1)]
    plan = run([pod("a", cpu="1")], pools=pools)
    assert [nc.nodepool for nc in plan.nodeclaims] == ["open"]


def test_existing_node_is_used_before_a_new_one_and_initialized_first():
    starting = ExistingNode(
        "starting", {}, {"cpu": 4000, "memory": 8 * GI, "pods": 10000}, initialized=False
    )
    ready = ExistingNode("ready", {}, {"cpu": 4000, "memory": 8 * GI, "pods": 10000})
    plan = run([pod("a", cpu="1")], snapshot=ClusterSnapshot(nodes=[starting, ready]))
    assert plan.existing == {"default/a": "ready"}
    assert plan.nodeclaims == []


def test_existing_node_capacity_is_reduced_by_bound_pods_and_pending_daemonsets():
    bound = pod("bound", cpu="2", memory="")
    node = ExistingNode("n1", {}, {"cpu": 4000, "memory": 8 * GI, "pods": 10000}, pods=[bound])
    daemonset = DaemonSet("agent", pod("ds", cpu="1", memory=""))
    snapshot = ClusterSnapshot(nodes=[node], daemonsets=[daemonset])
    plan = run([pod("a", cpu="1"), pod("b", cpu="1")], snapshot=snapshot)
    assert plan.existing == {"default/a": "n1"}
    assert layout(plan) == [("small", ["b"])]  # b + the 1-CPU daemonset fill 2 CPU


def test_a_running_daemonset_pod_is_not_counted_twice():
    running = pod("ds-abc", cpu="1", memory="")
    running["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent"}]
    node = ExistingNode("n1", {}, {"cpu": 2000, "memory": 8 * GI, "pods": 10000}, pods=[running])
    daemonset = DaemonSet("default/agent", pod("ds", cpu="1", memory=""))
    plan = run([pod("a", cpu="1")], snapshot=ClusterSnapshot(nodes=[node], daemonsets=[daemonset]))
    assert plan.existing == {"default/a": "n1"}


def test_a_daemonset_pod_counts_only_for_the_daemonset_of_its_namespace():
    running = pod("ds-abc", cpu="1", memory="", namespace="other")
    running["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent"}]
    node = ExistingNode("n1", {}, {"cpu": 2000, "memory": 8 * GI, "pods": 10000}, pods=[running])
    daemonset = DaemonSet("default/agent", pod("ds", cpu="1", memory=""))
    plan = run([pod("a", cpu="1")], snapshot=ClusterSnapshot(nodes=[node], daemonsets=[daemonset]))
    assert plan.existing == {}  # other/agent's pod is there; default/agent's is still due
    assert len(plan.nodeclaims) == 1


def test_nodes_marked_for_deletion_take_no_pods():
    node = ExistingNode(
        "old", {}, {"cpu": 4000, "memory": 8 * GI, "pods": 10000}, marked_for_deletion=True
    )
    plan = run([pod("a")], snapshot=ClusterSnapshot(nodes=[node]))
    assert plan.existing == {}
    assert len(plan.nodeclaims) == 1


def test_new_claims_are_filled_fewest_pods_first():
    # Two 1.5-CPU pods need two small-capable claims; the 0.5-CPU pods then go to the claim
    # with fewest pods each time.
    types = [new_instance_type("two", cpu="2", memory="4Gi", pods=10)]
    pods = [
        pod("big1", cpu="1500m", created="2026-01-01T00:00:00Z"),
        pod("big2", cpu="1500m", memory="101Mi"),
        pod("s1", cpu="500m"),
        pod("s2", cpu="500m", memory="99Mi"),
    ]
    plan = run(pods, types=types)
    assert layout(plan) == [("two", ["big2", "s1"]), ("two", ["big1", "s2"])]


def test_candidates_are_ordered_by_cheapest_offering_and_capped_at_sixty():
    types = [
        new_instance_type(
            f"t{i:03d}",
            cpu="4",
            memory="8Gi",
            pods=10,
            offerings=[Offering("z1", "on-demand", 1.0 + (i * 37 % 100) / 100)],
        )
        for i in range(100)
    ]
    plan = run([pod("a")], types=types)
    names = plan.nodeclaims[0].instance_types
    expected = sorted(
        (t.name for t in types), key=lambda n: (1.0 + (int(n[1:]) * 37 % 100) / 100, int(n[1:]))
    )
    assert len(names) == MAX_INSTANCE_TYPES
    assert names == expected[:MAX_INSTANCE_TYPES]
    assert plan.nodeclaims[0].price == 1.0


def test_capacity_type_is_narrowed_to_what_the_candidates_offer():
    types = [
        new_instance_type(
            "od-only", cpu="2", memory="4Gi", pods=10, offerings=[Offering("z1", "on-demand", 0.1)]
        )
    ]
    plan = run([pod("a")], types=types)
    ct = [r for r in plan.nodeclaims[0].requirements if r["key"] == wk.CAPACITY_TYPE]
    assert ct == [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]
    assert plan.nodeclaims[0].labels[wk.CAPACITY_TYPE] == "on-demand"


def test_identical_pods_split_across_claims_exactly_when_full():
    plan = run([pod(f"p{i:02d}", cpu="1") for i in range(20)], types=catalogue())
    assert [len(nc.pods) for nc in plan.nodeclaims] == [8, 8, 4]
    assert [nc.instance_types[0] for nc in plan.nodeclaims] == ["large", "large", "medium"]


def test_gpu_pods_need_a_type_with_the_extended_resource():
    gpu = new_instance_type(
        "gpu", cpu="8", memory="32Gi", pods=20, resources={"nvidia.com/gpu": "2"}
    )
    types = [*catalogue(), gpu]
    plan = run(
        [pod("train", cpu="1", extra={"nvidia.com/gpu": "1"}), pod("web", cpu="1")], types=types
    )
    assert layout(plan) == [("gpu", ["train", "web"])]
    assert plan.nodeclaims[0].requests["nvidia.com/gpu"] == 1000
    plan = run([pod(f"t{i}", extra={"nvidia.com/gpu": "2"}) for i in range(2)], types=types)
    assert layout(plan) == [("gpu", ["t0"]), ("gpu", ["t1"])]


def test_daemonsets_that_cannot_run_on_the_claim_add_no_overhead():
    zonal = pod("ds", cpu="2", memory="", nodeSelector={wk.ZONE: "test-zone-1"})
    snapshot = ClusterSnapshot(daemonsets=[DaemonSet("zonal-agent", zonal)])
    plan = run(
        [pod("app", cpu="1", memory="", nodeSelector={wk.ZONE: "test-zone-2"})], snapshot=snapshot
    )
    assert layout(plan) == [("small", ["app"])]
    assert plan.nodeclaims[0].daemonset_overhead == {}
    plan = run([pod("app", cpu="1", memory="")], snapshot=snapshot)
    assert layout(plan) == [("medium", ["app"])]  # the zone is open: it might run there
    assert plan.nodeclaims[0].daemonset_overhead == {"cpu": 2000, "pods": 1000}


def test_pool_limit_on_an_extended_resource_counts_the_largest_candidate():
    gpu = new_instance_type(
        "gpu", cpu="8", memory="32Gi", pods=20, resources={"nvidia.com/gpu": "2"}
    )
    pods = [pod(f"t{i}", extra={"nvidia.com/gpu": "1"}) for i in range(3)]
    plan = run(pods, pools=[nodepool(limits={"nvidia.com/gpu": "2"})], types=[gpu])
    assert layout(plan) == [("gpu", ["t0", "t1"])]
    assert reasons(plan) == {"t2": POOL_LIMITS}


def test_pool_memory_limit_filters_candidate_types():
    plan = run([pod("a", cpu="1", memory="1Gi")], pools=[nodepool(limits={"memory": "8Gi"})])
    assert plan.nodeclaims[0].instance_types == ["small", "medium"]


def test_limits_that_rule_out_every_type_big_enough_are_named_as_the_reason():
    """A pod that fits only the types a pool's limits exclude fails on pool limits, not on
    resources: the limit is what the user would change."""
    small = new_instance_type("two", cpu="2", memory="4Gi", pods=20)
    large = new_instance_type("eight", cpu="8", memory="16Gi", pods=20)
    plan = run(
        [pod("big", cpu="3", memory="1Gi")],
        pools=[nodepool(limits={"cpu": "4"})],
        types=[small, large],
    )
    (why,) = plan.unplaceable.values()
    assert why.constraint == POOL_LIMITS
    assert why.message == (
        "no instance type has enough resources, limits on cpu leave no room for a node with "
        "cpu=3, memory=1Gi, pods=1 (pod + daemonsets), nodepool=default"
    )
    unlimited = run([pod("big", cpu="3", memory="1Gi")], types=[small, large])
    assert layout(unlimited) == [("eight", ["big"])]


def test_among_equally_full_claims_a_pod_goes_where_more_of_its_group_fit():
    # Both claims hold three pods when b2 comes; the older one (three 5-CPU pods) has room
    # for one 900m pod, the other for ten. b2 takes the roomier claim, so the older keeps
    # the last CPU for c0; on it, c1 (kept off c0's node by the spread) would need a
    # third node.
    types = [new_instance_type("sixteen", cpu="16", memory="64Gi", pods=110)]
    spread = {
        "maxSkew": 1,
        "topologyKey": wk.HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "c"}},
    }
    pods = [pod(f"a{i}", cpu="5") for i in range(4)]
    pods += [pod(f"b{i}", cpu="900m") for i in range(3)]
    pods += [
        pod(f"c{i}", cpu="200m", labels={"app": "c"}, topologySpreadConstraints=[spread])
        for i in range(2)
    ]
    plan = run(pods, types=types)
    assert layout(plan) == [
        ("sixteen", ["a0", "a1", "a2", "c0"]),
        ("sixteen", ["a3", "b0", "b1", "b2", "c1"]),
    ]
