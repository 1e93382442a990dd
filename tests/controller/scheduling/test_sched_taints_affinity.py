"""Taints, tolerations, node selectors and node affinity with relaxation [SCHED-4, 6, 7]."""

from __future__ import annotations

from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import Offering
from joiner.scheduling.model import (
    NO_INSTANCE_TYPE,
    NO_OFFERING,
    NODE_AFFINITY,
    TAINTS,
    ClusterSnapshot,
    ExistingNode,
)
from joiner.scheduling.taints import tolerates
from sched_builders import catalogue, layout, nodepool, pod, reasons, run

GI = 2**30 * 1000
GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def _affinity(required=None, preferred=None) -> dict:
    node_affinity = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in required]
        }
    if preferred is not None:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": t}} for w, t in preferred
        ]
    return {"nodeAffinity": node_affinity}


def _zone_in(*zones: str) -> list[dict]:
    return [{"key": wk.ZONE, "operator": "In", "values": list(zones)}]


def test_toleration_semantics():
    assert tolerates({"operator": "Exists"}, GPU_TAINT)
    assert tolerates({"key": "gpu", "operator": "Exists"}, GPU_TAINT)
    assert tolerates({"key": "gpu", "value": "true"}, GPU_TAINT)
    assert not tolerates({"key": "gpu", "value": "false"}, GPU_TAINT)
    assert not tolerates({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT)


def test_pool_taints_must_be_tolerated():
    pools = [nodepool(taints=[GPU_TAINT])]
    plan = run(
        [pod("plain"), pod("tolerant", tolerations=[{"key": "gpu", "operator": "Exists"}])],
        pools=pools,
    )
    assert layout(plan) == [("small", ["tolerant"])]
    assert reasons(plan) == {"plain": TAINTS}
    assert "gpu=true:NoSchedule" in plan.unplaceable["default/plain"].message


def test_startup_taints_need_no_toleration_and_are_carried_on_the_claim():
    startup = {"key": "cni-not-ready", "effect": "NoSchedule"}
    plan = run([pod("p")], pools=[nodepool(startup_taints=[startup])])
    assert layout(plan) == [("small", ["p"])]
    assert plan.nodeclaims[0].startup_taints == [startup]


def test_prefer_no_schedule_is_honoured_until_relaxed_last():
    soft = {"key": "spare", "effect": "PreferNoSchedule"}
    pools = [nodepool("soft", weight=100, taints=[soft]), nodepool("hard", taints=[GPU_TAINT])]
    plan = run([pod("p")], pools=pools)
    assert [nc.nodepool for nc in plan.nodeclaims] == ["soft"]  # only after relaxing
    pools = [nodepool("soft", weight=100, taints=[soft]), nodepool("open")]
    plan = run([pod("p")], pools=pools)
    assert [nc.nodepool for nc in plan.nodeclaims] == ["open"]  # honoured while possible


def test_existing_node_taints_and_startup_taints_of_nodes_still_starting():
    taint = {"key": "cni-not-ready", "effect": "NoSchedule"}
    unregistered = {"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}
    allocatable = {"cpu": 4000, "memory": 8 * GI, "pods": 10000}
    ready = ExistingNode("ready", {}, allocatable, taints=[taint])
    starting = ExistingNode(
        "starting",
        {},
        allocatable,
        taints=[taint, unregistered],
        initialized=False,
        startup_taints=[taint],
    )
    plan = run([pod("p")], snapshot=ClusterSnapshot(nodes=[ready, starting]))
    assert plan.existing == {"default/p": "starting"}


def test_node_selector_on_a_pool_label():
    pools = [nodepool("a", labels={"team": "a"}), nodepool("b", labels={"team": "b"})]
    plan = run([pod("p", nodeSelector={"team": "b"})], pools=pools)
    assert [nc.nodepool for nc in plan.nodeclaims] == ["b"]
    assert plan.nodeclaims[0].labels == {"team": "b", wk.NODEPOOL: "b"}


def test_custom_labels_must_be_defined_by_the_pool():
    plan = run([pod("p", nodeSelector={"team": "b"})])
    assert reasons(plan) == {"p": NODE_AFFINITY}
    plan = run(
        [
            pod(
                "p",
                affinity=_affinity(
                    required=[[{"key": "team", "operator": "NotIn", "values": ["b"]}]]
                ),
            )
        ]
    )
    assert len(plan.nodeclaims) == 1  # NotIn needs no definition


def test_node_selector_on_a_well_known_label_narrows_types_and_zone():
    plan = run([pod("p", nodeSelector={wk.INSTANCE_TYPE: "medium", wk.ZONE: "test-zone-2"})])
    claim = plan.nodeclaims[0]
    assert claim.instance_types == ["medium"]
    assert claim.labels[wk.ZONE] == "test-zone-2"
    assert {"key": wk.ZONE, "operator": "In", "values": ["test-zone-2"]} in claim.requirements


def test_unknown_instance_type_or_zone():
    plan = run([pod("p", nodeSelector={wk.INSTANCE_TYPE: "huge"})])
    assert reasons(plan) == {"p": NO_INSTANCE_TYPE}
    plan = run([pod("p", nodeSelector={wk.ZONE: "elsewhere"})])
    assert reasons(plan) == {"p": NO_INSTANCE_TYPE}


def test_offerings_that_are_not_available_are_not_used():
    offerings = [Offering("z1", "spot", 0.01, available=False), Offering("z2", "on-demand", 0.1)]
    types = [new_instance_type("only", cpu="2", memory="4Gi", pods=10, offerings=offerings)]
    plan = run([pod("p", nodeSelector={wk.ZONE: "z1"})], types=types)
    assert reasons(plan) == {"p": NO_OFFERING}
    plan = run([pod("p")], types=types)
    assert plan.nodeclaims[0].price == 0.1
    assert plan.nodeclaims[0].labels[wk.CAPACITY_TYPE] == "on-demand"


def test_gt_and_lt_on_instance_cpu():
    plan = run(
        [
            pod(
                "p",
                affinity=_affinity(
                    required=[
                        [
                            {"key": wk.INSTANCE_CPU, "operator": "Gt", "values": ["2"]},
                            {"key": wk.INSTANCE_CPU, "operator": "Lt", "values": ["8"]},
                        ]
                    ]
                ),
            )
        ]
    )
    assert plan.nodeclaims[0].instance_types == ["medium"]


def test_pool_requirements_intersect_with_the_pod():
    pools = [
        nodepool(
            requirements=[{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]
        )
    ]
    plan = run([pod("p")], pools=pools)
    claim = plan.nodeclaims[0]
    assert claim.price == 0.108  # small on-demand
    assert claim.labels[wk.CAPACITY_TYPE] == "on-demand"
    plan = run([pod("p", nodeSelector={wk.CAPACITY_TYPE: "spot"})], pools=pools)
    assert reasons(plan) == {"p": NODE_AFFINITY}


def test_second_required_term_is_tried_after_the_first():
    terms = [_zone_in("nowhere"), _zone_in("test-zone-3")]
    plan = run([pod("p", affinity=_affinity(required=terms))])
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-3"


def test_preferred_node_affinity_is_followed_when_possible_then_dropped():
    preferred = [(10, _zone_in("test-zone-2")), (50, _zone_in("test-zone-3"))]
    plan = run([pod("p", affinity=_affinity(preferred=preferred))])
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-3"  # heaviest first
    preferred = [(10, _zone_in("test-zone-2")), (50, _zone_in("nowhere"))]
    plan = run([pod("p", affinity=_affinity(preferred=preferred))])
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-2"
    preferred = [(50, _zone_in("nowhere"))]
    plan = run([pod("p", affinity=_affinity(preferred=preferred))])
    assert wk.ZONE not in plan.nodeclaims[0].labels


def test_existing_node_must_match_node_affinity():
    allocatable = {"cpu": 4000, "memory": 8 * GI, "pods": 10000}
    node = ExistingNode("n1", {wk.ZONE: "test-zone-1"}, allocatable)
    plan = run(
        [
            pod("p", nodeSelector={wk.ZONE: "test-zone-1"}),
            pod("q", memory="99Mi", nodeSelector={wk.ZONE: "test-zone-2"}),
        ],
        snapshot=ClusterSnapshot(nodes=[node]),
    )
    assert plan.existing == {"default/p": "n1"}
    assert layout(plan) == [("small", ["q"])]


def test_pods_with_different_requirements_do_not_share_a_claim():
    plan = run(
        [
            pod("a", nodeSelector={wk.ZONE: "test-zone-1"}),
            pod("b", memory="99Mi", nodeSelector={wk.ZONE: "test-zone-2"}),
            pod("c", memory="98Mi", nodeSelector={wk.ZONE: "test-zone-1"}),
        ],
        types=catalogue(),
    )
    assert layout(plan) == [("small", ["a", "c"]), ("small", ["b"])]
