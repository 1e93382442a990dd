"""``joiner explain`` with a CapacityBuffer (tests/.../buffer.yaml): the buffer resolved
from the snapshot's PodTemplate, its chunks held by the controller's own placement."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from explain_scenarios import EXAMPLES, cluster_at, explain_json
from joiner import testing
from joiner.explain.cluster import Cluster
from joiner.explain.node import explain_node
from joiner.explain.nodepool import explain_nodepool
from joiner.explain.pod import explain_pod
from joiner.explain.simulation import snapshot_at
from joiner.explain.snapshot import Snapshot
from joiner.sim.scenario import load_scenario

SCENARIO = Path(__file__).with_name("buffer.yaml")
NODE_TYPE = "m-4x16 us-east-1a on-demand $0.1920/h"
HELD_BOTH = "Provisioning True CapacityHeld: 2 of 2 chunks held"
LIMIT_REACHED = (
    "Provisioning False PoolLimitReached: 1 of 2 chunks held; all available instance types "
    "exceed limits for nodepool (NodePool=spare), limits on cpu leave no room for a node, "
    "nodepool=spare; did not tolerate taint (taint=dedicated=gpu:NoSchedule), nodepool=gpu"
)


def snapshot(step: str | None = None) -> Snapshot:
    return snapshot_at(load_scenario(SCENARIO), step)


@pytest.fixture(scope="module")
def settled() -> Cluster:
    return Cluster(snapshot())


def nodes_by_pods(cluster: Cluster) -> tuple[str, str]:
    """(the node web runs on, the node with no pod)."""
    (web,) = [sn.name for sn in cluster.state.state_nodes() if cluster.state.pods_on(sn.name)]
    (bare,) = [sn.name for sn in cluster.state.state_nodes() if sn.name != web]
    return web, bare


def test_a_node_holding_only_a_chunk_is_kept_for_the_buffer_not_empty(settled: Cluster) -> None:
    _, bare = nodes_by_pods(settled)
    assert explain_node(settled, bare).lines() == [
        f"node {bare} (nodeclaim {bare}, nodepool spare): {NODE_TYPE}",
        "  compatible offerings, cheapest first:",
        f"    {NODE_TYPE}  <- this node",
        "  buffer chunks held: default/room 1",
        "  disrupted now: no",
        "  passed over: replacement not cheaper",
        "  emptiness: does not apply (budget now: 1): not empty: it holds 1 CapacityBuffer "
        "chunk(s)",
        "  drift: does not apply (budget now: 1): not drifted",
        "  consolidation: applies (budget now: 1): consolidationPolicy WhenEmptyOrUnderutilized",
        "  expiration: does not apply: expires in 719h56m56s (expireAfter 720h), budgets aside",
    ]


def test_the_node_answer_in_json_names_the_buffer_and_why_not_empty(
    settled: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    web, bare = nodes_by_pods(settled)
    answer = explain_json(capsys, "node", bare, "--simulate", str(SCENARIO))
    assert answer["buffer_chunks"] == {"default/room": 1}
    assert answer["methods"][0] == {
        "method": "emptiness",
        "applies": False,
        "why": "not empty: it holds 1 CapacityBuffer chunk(s)",
        "budget": 1,
    }
    assert explain_json(capsys, "node", web, "--simulate", str(SCENARIO))["buffer_chunks"] == {}


def test_the_pool_shows_its_buffer_wanted_held_and_provisioning(settled: Cluster) -> None:
    assert explain_nodepool(settled, "spare").lines() == [
        "nodepool spare: ready, 2 node(s)",
        "  limits (used / allowed):",
        "    cpu: 8 / 8",
        "  disruptions allowed now: Empty 1, Drifted 1, Underutilized 1",
        "    budget nodes=10% (all reasons): active",
        "  drifted: none",
        "  buffers (chunks wanted / held):",
        f"    default/room: 2 / 1 (1 on this pool's nodes); {LIMIT_REACHED}",
    ]


def test_a_pool_whose_taint_the_chunks_do_not_tolerate_lists_no_buffer(settled: Cluster) -> None:
    assert explain_nodepool(settled, "gpu").buffers == []


def test_the_pool_answer_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    answer = explain_json(capsys, "nodepool", "spare", "--simulate", str(SCENARIO))
    assert answer["buffers"] == [
        {
            "buffer": "default/room",
            "wanted": 2,
            "held": 1,
            "held_here": 1,
            "provisioning": {
                "status": "False",
                "reason": "PoolLimitReached",
                "message": LIMIT_REACHED.split("PoolLimitReached: ", 1)[1],
            },
            "expansion": None,
        }
    ]


def test_a_pending_pod_is_answered_as_if_the_chunks_were_not_there() -> None:
    """The chunks hold both starting nodes, yet the pod fits there: real pods come first.
    The answer is the one the cluster without the buffer gets."""
    arrived = snapshot("a pod arrives")
    cluster = Cluster(arrived)
    assert [b.describe() for b in explain_nodepool(cluster, "spare").buffers] == [
        f"default/room: 2 / 2 (2 on this pool's nodes); {HELD_BOTH}"
    ]
    answer = explain_pod(cluster, "default/web")
    (node,) = {line.split("fits on node ")[1].split()[0] for line in answer.lines()[1:]}
    assert answer.lines() == [
        "pod default/web is pending",
        f"  nodepool spare: existing node: fits on node {node} as the cluster is now",
        f"  nodepool gpu: existing node: fits on node {node} as the cluster is now",
    ]
    objects = [o for o in arrived.objects if o["kind"] != "CapacityBuffer"]
    without = Cluster(Snapshot(objects, arrived.now, arrived.instance_types))
    assert explain_pod(without, "default/web") == answer


def test_the_docs_show_the_headroom_answers_as_they_are() -> None:
    """examples/headroom.yaml at its end: the pool, and a node holding chunks only (one
    of web-spare's, the older buffer's)."""
    headroom = cluster_at("headroom.yaml")
    (node,) = [
        sn.name
        for sn in headroom.state.state_nodes()
        if not headroom.state.pods_on(sn.name)
        and "default/web-spare" in explain_node(headroom, sn.name).buffer_chunks
    ]
    pool = "```\n" + "\n".join(explain_nodepool(headroom, "default").lines()) + "\n```"
    docs = EXAMPLES.parent / "docs"
    assert pool in (docs / "headroom.md").read_text()
    explain = (docs / "explain.md").read_text()
    assert pool in explain
    assert "```\n" + "\n".join(explain_node(headroom, node).lines()) + "\n```" in explain
    assert f"joiner explain node {node} --simulate examples/headroom.yaml" in explain


def _spare_pool_cluster(spare: str) -> Cluster:
    """A pool with that spare capacity annotation, two minutes on."""
    pool = testing.nodepool(requirements=[testing.capacity_types("on-demand")])
    pool["metadata"]["annotations"] = {"joiner.sh/spare-capacity": spare}
    doc = testing.scenario(
        "spare-pool",
        [testing.scenario_instance_type("std-4x16", "4", "16Gi", {"zone-a/on-demand": 0.2})],
        [testing.ec2nodeclass(), pool],
        [{"advance": "2m"}],
    )
    return Cluster(snapshot_at(load_scenario(yaml.safe_dump(doc)), None))


def test_a_pools_spare_capacity_is_listed_with_what_it_expanded_to() -> None:
    """{cpu: "2", memory: 2Gi}: two chunks of 1 CPU and 1 GiB, held on the node launched
    for them; a bad value is listed with its error."""
    cluster = _spare_pool_cluster('{cpu: "2", memory: 2Gi}')
    [line] = explain_nodepool(cluster, "default").lines()[-1:]
    assert line == (
        "    NodePool/default: 2 / 2 (2 on this pool's nodes); joiner.sh/spare-capacity: "
        "2 chunk(s) of cpu=1, memory=1Gi"
    )
    bad = _spare_pool_cluster("{cpu: many}")
    assert explain_nodepool(bad, "default").lines()[-1] == (
        "    NodePool/default: 0 / 0 (0 on this pool's nodes); joiner.sh/spare-capacity: "
        "InvalidSpareCapacity: metadata.annotations[joiner.sh/spare-capacity].cpu: invalid "
        "value 'many': expected a quantity like 500m, 2, 4Gi or 100G"
    )
