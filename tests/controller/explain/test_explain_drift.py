"""``joiner explain`` of a drifted node its pool's budget holds (tests/.../drift.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.explain.cluster import Cluster
from joiner.explain.node import explain_node
from joiner.explain.nodepool import explain_nodepool
from joiner.explain.simulation import snapshot_at
from joiner.sim.scenario import load_scenario


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(snapshot_at(load_scenario(Path(__file__).with_name("drift.yaml")), None))


def test_the_nodepool_lists_its_drifted_nodeclaim_and_the_budget_holding_it(
    cluster: Cluster,
) -> None:
    (claim,) = cluster.state.nodeclaims
    assert explain_nodepool(cluster, "frozen").lines() == [
        "nodepool frozen: ready, 1 node(s)",
        "  limits (used / allowed):",
        "    cpu: 2 / 10",
        "  disruptions allowed now: Empty 1, Drifted 0, Underutilized 1",
        "    budget nodes=0 (Drifted): active",
        "  drifted:",
        f"    {claim}: NodePoolDrifted",
    ]


def test_the_drifted_node_says_drift_applies_and_its_budget_is_0(cluster: Cluster) -> None:
    (claim,) = cluster.state.nodeclaims
    assert explain_node(cluster, claim).lines() == [
        f"node {claim} (nodeclaim {claim}, nodepool frozen): c-2x8 us-east-1a on-demand $0.1000/h",
        "  compatible offerings, cheapest first:",
        "    c-2x8 us-east-1a on-demand $0.1000/h  <- this node",
        "  disrupted now: no",
        "  passed over: budget 0 for Drifted",
        "  emptiness: does not apply (budget now: 1): 1 pod(s) would have to move",
        "  drift: applies (budget now: 0): drifted (NodePoolDrifted)",
        "  consolidation: does not apply (budget now: 1): not consolidatable yet "
        "(consolidateAfter 1h since its pods last changed)",
        "  expiration: does not apply: expires in 719h57m19s (expireAfter 720h), budgets aside",
        "  replacement its pods would need: c-2x8 from $0.1000/h (this node: $0.1000/h)",
    ]
