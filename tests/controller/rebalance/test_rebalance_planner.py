"""The rebalancer's planner on small hand-made clusters: exact targets and moves."""

from __future__ import annotations

from typing import Any

import pytest
from joiner.api import labels as wk
from joiner.api.nodepool import NodePool
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.rebalance import Cluster, plan
from joiner.rebalance.model import GREEDY, MILP, STAY
from joiner.scheduling.model import ClusterSnapshot, ExistingNode
from joiner.testing import pod

ZONES = ("zone-a", "zone-b")
PRICES = {"small": 0.10, "medium": 0.17, "large": 0.40}
SIZES = {"small": ("2", "4Gi"), "medium": ("4", "8Gi"), "large": ("8", "16Gi")}


def _types() -> list[InstanceType]:
    """small (2 CPU) $0.10, medium (4 CPU) $0.17, large (8 CPU) $0.40: on-demand in two
    zones, 20 pods each."""
    return [
        new_instance_type(
            name,
            cpu=cpu,
            memory=memory,
            pods=20,
            offerings=[Offering(zone, "on-demand", PRICES[name]) for zone in ZONES],
        )
        for name, (cpu, memory) in SIZES.items()
    ]


def _pool(limits: dict[str, str] | None = None) -> NodePool:
    spec: dict[str, Any] = {"template": {"spec": {"nodeClassRef": {"name": "default"}}}}
    if limits:
        spec["limits"] = limits
    return NodePool.from_dict({"metadata": {"name": "default"}, "spec": spec})


def _node(name: str, size: str, pods: list[dict[str, Any]], zone: str = "zone-a") -> ExistingNode:
    """A node of the default pool with ``pods`` bound to it."""
    by_name = {it.name: it for it in _types()}
    for p in pods:
        p["spec"]["nodeName"] = name
    labels = {
        wk.HOSTNAME: name,
        wk.NODEPOOL: "default",
        wk.INSTANCE_TYPE: size,
        wk.ZONE: zone,
        wk.CAPACITY_TYPE: "on-demand",
    }
    return ExistingNode(name, labels, by_name[size].allocatable, pods=pods)


def _pods(prefix: str, count: int, cpu: str = "1", **spec: Any) -> list[dict[str, Any]]:
    return [
        pod(f"{prefix}-{i}", cpu=cpu, memory="1Gi", labels={"app": prefix}, **spec)
        for i in range(count)
    ]


def _cluster(
    nodes: list[ExistingNode], limits: dict[str, str] | None = None, **fields: Any
) -> Cluster:
    sizes = {n.name: n.labels[wk.INSTANCE_TYPE] for n in nodes}
    return Cluster(
        snapshot=ClusterSnapshot(nodes=nodes),
        prices={name: PRICES[size] for name, size in sizes.items()},
        nodepools=[_pool(limits)],
        instance_types={"default": _types()},
        **fields,
    )


def _summary(result) -> dict[str, Any]:
    """The plan as plain values: method, costs, kept nodes, and per move what it
    launches (type: pods), drains and evicts, and its saving."""
    return {
        "method": result.method,
        "current": round(result.current_cost, 6),
        "target": round(result.target_cost, 6),
        "kept": result.kept,
        "moves": [
            {
                "launch": sorted(
                    (claim.instance_types[0], tuple(sorted(claim.pods))) for claim in move.launch
                ),
                "drain": move.drain,
                "evicts": move.evicts,
                "saving": round(move.saving, 6),
            }
            for move in result.moves
        ],
    }


def _fragmented_pair(**b_spec: Any) -> list[ExistingNode]:
    """node-a (medium) holds three 1-CPU pods, node-b (medium) one: either has room for
    the other's pods."""
    return [
        _node("node-a", "medium", _pods("a", 3)),
        _node("node-b", "medium", _pods("b", 1, **b_spec)),
    ]


def test_a_fragmented_pair_is_merged_by_draining_the_node_with_fewer_pods():
    result = plan(_cluster(_fragmented_pair()))
    assert _summary(result) == {
        "method": MILP,
        "current": 0.34,
        "target": 0.17,
        "kept": ["node-a"],
        "moves": [{"launch": [], "drain": ["node-b"], "evicts": ["default/b-0"], "saving": 0.17}],
    }
    assert result.evictions == 1
    assert result.notes == []
    # the greedy repack reaches the same cost by evicting every pod
    considered = {m: (round(c, 6), e) for m, (c, e) in result.considered.items()}
    assert considered == {MILP: (0.17, 1), GREEDY: (0.17, 4), STAY: (0.34, 0)}


def test_one_node_is_replaced_by_two_cheaper_ones():
    # 4.5 CPU of pods on a large ($0.40): no single cheaper type holds them, a medium and a
    # small ($0.27) do. Karpenter's consolidation replaces one node with one only.
    result = plan(_cluster([_node("node-a", "large", _pods("a", 3, cpu="1500m"))]))
    summary = _summary(result)
    assert summary["method"] == MILP
    assert (summary["current"], summary["target"], summary["kept"]) == (0.40, 0.27, [])
    [move] = summary["moves"]
    assert move["drain"] == ["node-a"]
    assert move["evicts"] == ["default/a-0", "default/a-1", "default/a-2"]
    assert move["saving"] == 0.13
    assert [(size, len(pods)) for size, pods in move["launch"]] == [("medium", 2), ("small", 1)]


def test_a_do_not_disrupt_pod_pins_its_node_and_the_other_one_moves_into_it():
    annotated = _fragmented_pair()
    annotated[1].pods[0]["metadata"]["annotations"] = {wk.DO_NOT_DISRUPT: "true"}
    result = plan(_cluster(annotated))
    assert result.pinned == {"node-b": "do-not-disrupt pod default/b-0"}
    assert _summary(result) == {
        "method": MILP,
        "current": 0.34,
        "target": 0.17,
        "kept": ["node-b"],
        "moves": [
            {
                "launch": [],
                "drain": ["node-a"],
                "evicts": ["default/a-0", "default/a-1", "default/a-2"],
                "saving": 0.17,
            }
        ],
    }


def test_a_pdb_allowing_no_eviction_pins_the_node_of_the_pods_it_selects():
    pdb = {
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "b"}}},
        "status": {"disruptionsAllowed": 0},
    }
    result = plan(_cluster(_fragmented_pair(), pdbs={"default/b": pdb}))
    assert result.pinned == {"node-b": "pdb default/b allows no disruption"}
    assert (result.kept, [m.drain for m in result.moves]) == (["node-b"], [["node-a"]])


def test_nodes_not_eligible_for_disruption_stay_and_nothing_moves():
    result = plan(_cluster(_fragmented_pair(), fixed=frozenset({"node-a", "node-b"})))
    assert _summary(result) == {
        "method": STAY,
        "current": 0.34,
        "target": 0.34,
        "kept": ["node-a", "node-b"],
        "moves": [],
    }


def _spread_pair() -> list[ExistingNode]:
    """Two mediums, one per zone, each with one 1.5-CPU pod of a Deployment spread over
    zones (maxSkew 1, DoNotSchedule): counting CPU only, one medium holds both."""
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": wk.ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    web = _pods("web", 2, cpu="1500m", topologySpreadConstraints=spread)
    return [
        _node("node-a", "medium", web[:1], zone="zone-a"),
        _node("node-b", "medium", web[1:], zone="zone-b"),
    ]


def test_verification_refuses_a_target_that_breaks_a_spread_and_the_greedy_one_stands():
    # The optimizer keeps node-a and moves web-1 into it; the scheduler keeps the zones
    # within skew 1 by launching a node in zone-b, which the optimizer did not count.
    result = plan(_cluster(_spread_pair()))
    assert result.notes == [
        "milp: the scheduler needs $0.1000/h of new nodes for its target, "
        "the optimizer counted $0.0000/h"
    ]
    # the greedy repack: each pod on a small in its own zone, $0.20
    assert _summary(result) == {
        "method": GREEDY,
        "current": 0.34,
        "target": 0.20,
        "kept": [],
        "moves": [
            {
                "launch": [("small", ("default/web-0",))],
                "drain": ["node-a"],
                "evicts": ["default/web-0"],
                "saving": 0.07,
            },
            {
                "launch": [("small", ("default/web-1",))],
                "drain": ["node-b"],
                "evicts": ["default/web-1"],
                "saving": 0.07,
            },
        ],
    }
    zones = [_zones(claim) for move in result.moves for claim in move.launch]
    assert zones == [["zone-a"], ["zone-b"]]


def test_verification_refuses_a_target_whose_spread_the_pool_limits_cannot_keep():
    # As above, but the pool may hold 5 CPU: with node-a kept (4 CPU), the node zone-b
    # needs for web-1 is beyond the limit, so the scheduler cannot place web-1 there. The
    # greedy target fails the limit too (its first node may be a medium, as the
    # scheduler counts a launch at its largest candidate), so nothing moves.
    result = plan(_cluster(_spread_pair(), limits={"cpu": "5"}))
    [note] = result.notes
    assert note.startswith("milp: the scheduler cannot place pod default/web-1 on its target: ")
    assert (result.method, result.moves, result.kept) == (STAY, [], ["node-a", "node-b"])


def _zones(claim) -> list[str]:
    return next(r["values"] for r in claim.requirements if r["key"] == wk.ZONE)


def test_the_greedy_target_stands_in_when_the_optimizer_runs_out_of_time():
    result = plan(_cluster(_fragmented_pair()), time_limit=0.0)
    assert result.notes == ["milp: the optimizer reached its time limit (0 s)"]
    # the greedy repack places all four pods again: one medium, every pod evicted
    assert _summary(result)["method"] == GREEDY
    assert (round(result.target_cost, 6), result.kept, result.evictions) == (0.17, [], 4)


def test_pending_pods_are_placed_by_the_target():
    pending = _pods("p", 1)
    result = plan(_cluster(_fragmented_pair(), pending=pending))
    # 5 CPU of pods: node-a takes node-b's pod, a small the pending one ($0.27 < $0.34);
    # the pending pod's launch comes first
    assert _summary(result) == {
        "method": MILP,
        "current": 0.34,
        "target": 0.27,
        "kept": ["node-a"],
        "moves": [
            {"launch": [("small", ("default/p-0",))], "drain": [], "evicts": [], "saving": -0.1},
            {"launch": [], "drain": ["node-b"], "evicts": ["default/b-0"], "saving": 0.17},
        ],
    }


@pytest.mark.parametrize("time_limit", [0.0, 1.0])
def test_a_cluster_already_at_its_cheapest_stays(time_limit):
    result = plan(_cluster([_node("node-a", "small", _pods("a", 1))]), time_limit=time_limit)
    assert (result.method, result.moves, result.target_cost) == (STAY, [], 0.10)


def test_a_pending_pod_that_fits_nowhere_is_left_out_and_named():
    pending = [pod("huge", cpu="100", memory="1Gi"), *_pods("p", 1)]
    result = plan(_cluster(_fragmented_pair(), pending=pending))
    assert result.notes == ["pending pods no target can place, left out: default/huge"]
    # the rest as without it
    assert (result.method, result.kept, round(result.target_cost, 6)) == (MILP, ["node-a"], 0.27)


def test_a_node_is_split_into_the_two_cheaper_ones_the_optimizer_chose():
    # Offered every type, the scheduler puts the six 1-CPU pods on one large ($0.40, what
    # the node costs now); offered the optimizer's medium and small, it launches those.
    result = plan(_cluster([_node("node-a", "large", _pods("a", 6))]))
    assert result.notes == []
    summary = _summary(result)
    assert (summary["method"], summary["target"], summary["kept"]) == (MILP, 0.27, [])
    (move,) = summary["moves"]
    assert [(size, len(pods)) for size, pods in move["launch"]] == [("medium", 4), ("small", 2)]
    assert (move["drain"], len(move["evicts"]), move["saving"]) == (["node-a"], 6, 0.13)
