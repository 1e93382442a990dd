"""Whole-solve properties: bad input, invariants of a large mixed plan, determinism."""

from __future__ import annotations

import gc
from collections import Counter, defaultdict

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.cloudprovider.fake import benchmark_instance_types
from joiner.scheduling.model import INVALID_SPEC, ClusterSnapshot, ExistingNode
from joiner.scheduling.pods import pod_requests
from joiner.scheduling.solver import solve
from sched_builders import pod, reasons, run

from benchmarks.bench_scheduling import mixed_pods, nodepool


def test_malformed_pods_are_unplaceable_with_the_field_named_and_others_still_placed():
    bad_quantity = pod("bad-cpu", cpu="lots")
    bad_operator = pod(
        "bad-op",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]}
                    ]
                }
            }
        },
    )
    plan = run([bad_quantity, bad_operator, pod("good")])
    assert reasons(plan) == {"bad-cpu": INVALID_SPEC, "bad-op": INVALID_SPEC}
    assert "'lots'" in plan.unplaceable["default/bad-cpu"].message
    assert "'Near'" in plan.unplaceable["default/bad-op"].message
    assert [nc.pods for nc in plan.nodeclaims] == [["default/good"]]


def _solve_mix(count: int):
    types = benchmark_instance_types(40)
    pool = nodepool()
    pods = mixed_pods(count, seed=7)
    return pods, types, solve(pods, [pool], {pool.name: types})


def test_a_mixed_plan_places_every_pod_once_within_capacity_and_constraints():
    pods, types, plan = _solve_mix(600)
    assert plan.unplaceable == {}
    placed = [key for nc in plan.nodeclaims for key in nc.pods]
    assert sorted(placed) == sorted(f"default/{p['metadata']['name']}" for p in pods)
    by_key = {f"default/{p['metadata']['name']}": p for p in pods}
    allocatable = {t.name: t.allocatable for t in types}
    for claim in plan.nodeclaims:
        summed = res.sum_lists(pod_requests(by_key[k], {}) for k in claim.pods)
        assert claim.requests == summed
        assert all(res.fits(summed, allocatable[name]) for name in claim.instance_types)
        nginx = [k for k in claim.pods if by_key[k]["metadata"]["labels"].get("app") == "nginx"]
        assert len(nginx) <= 1  # hostname anti-affinity
    _assert_self_affinity_in_one_zone(plan, by_key)


def test_zone_spread_skew_holds_when_only_the_owners_match():
    # Skew is checked when an owner is placed; with no other matching pods it must hold
    # at the end too. Sizes vary so claims fill up and new ones open.
    pods = []
    for i in range(300):
        value = "abc"[i % 3]
        constraint = {
            "maxSkew": 1,
            "topologyKey": wk.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"spread": value}},
        }
        pods.append(
            pod(
                f"s{i:03d}",
                cpu=f"{100 + 50 * (i % 7)}m",
                labels={"spread": value},
                topologySpreadConstraints=[constraint],
            )
        )
        pods.append(pod(f"g{i:03d}", cpu=f"{100 + 25 * (i % 5)}m"))
    plan = solve(pods, [nodepool()], {"default": benchmark_instance_types(8)})
    assert plan.unplaceable == {}
    for value in "abc":
        counts = Counter(
            claim.labels[wk.ZONE]
            for claim in plan.nodeclaims
            for key in claim.pods
            if key.startswith("default/s") and int(key[-3:]) % 3 == "abc".index(value)
        )
        assert sum(counts.values()) == 100
        assert max(counts.values()) - min(counts.values()) <= 1, counts


def _assert_self_affinity_in_one_zone(plan, by_key) -> None:
    zones = defaultdict(set)
    for claim in plan.nodeclaims:
        for key in claim.pods:
            value = by_key[key]["metadata"]["labels"].get("my-affininity")
            if value is not None:
                zones[value].add(claim.labels.get(wk.ZONE))
    assert zones and all(len(z) == 1 and None not in z for z in zones.values())


def test_the_same_input_gives_the_same_plan():
    _, _, first = _solve_mix(200)
    _, _, second = _solve_mix(200)
    assert first == second


def test_a_solve_leaves_no_reference_cycles_for_the_collector():
    # A cycle through the solver (a bound method of it held by its topology) kept every
    # object of the solve alive until the cyclic collector's next pass found them.
    pods, types = mixed_pods(100, seed=7), benchmark_instance_types(40)
    pool = nodepool()
    gc.collect()
    gc.disable()
    try:
        plan = solve(pods, [pool], {pool.name: types})
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert len(plan.nodeclaims) > 1
    assert unreachable == 0


def test_pod_objects_solved_again_are_judged_against_the_cluster_of_that_solve():
    # What solves remember of a pod object (grouping facts, parsed terms, node
    # requirements) holds no cluster state: the same pod objects give the same plan
    # again, and against a cluster whose zone 1 already runs two pods of their spread,
    # they keep out of zone 1.
    web = {"app": "web"}
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": wk.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": web},
        }
    ]
    pods = [pod(f"web{i}", labels=web, topologySpreadConstraints=spread) for i in range(2)]
    first = run(pods)
    assert run(pods) == first
    assert sorted(nc.labels[wk.ZONE] for nc in first.nodeclaims) == ["test-zone-1", "test-zone-2"]
    node = ExistingNode(
        "busy",
        {wk.ZONE: "test-zone-1", wk.HOSTNAME: "busy"},
        {"cpu": 0, "memory": 0, "pods": 10000},
        pods=[pod(f"old{i}", labels=web) for i in range(2)],
    )
    crowded = run(pods, snapshot=ClusterSnapshot(nodes=[node]))
    assert crowded.unplaceable == {}
    assert sorted(nc.labels[wk.ZONE] for nc in crowded.nodeclaims) == [
        "test-zone-2",
        "test-zone-3",
    ]
