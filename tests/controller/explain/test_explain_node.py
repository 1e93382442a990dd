"""``joiner explain node`` / ``nodeclaim`` / ``nodepool`` on a simulation: four nodes
consolidation would replace with a cheaper one, each kept for its own reason."""

from __future__ import annotations

import pytest
from explain_scenarios import EXAMPLES, cluster_at, explain_json
from joiner.api import labels as wk
from joiner.cli import main
from joiner.explain.cluster import Cluster
from joiner.explain.node import explain_node, explain_nodeclaim
from joiner.explain.nodepool import explain_nodepool
from joiner.explain.pod import explain_pod

DISRUPTION = EXAMPLES / "explain-disruption.yaml"
EXPIRES = "  expiration: does not apply: expires in 719h57m19s (expireAfter 720h), budgets aside"


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return cluster_at("explain-disruption.yaml")


def node_of(cluster: Cluster, pool: str) -> str:
    (name,) = [sn.name for sn in cluster.state.state_nodes() if sn.labels[wk.NODEPOOL] == pool]
    return name


def header(name: str, pool: str) -> list[str]:
    return [
        f"node {name} (nodeclaim {name}, nodepool {pool}): c-4x16 us-east-1a on-demand $0.1800/h",
        "  compatible offerings, cheapest first:",
        "    c-4x16 us-east-1a on-demand $0.1800/h  <- this node",
        "  disrupted now: no",
    ]


def methods(budget: int) -> list[str]:
    return [
        f"  emptiness: does not apply (budget now: {budget}): 1 pod(s) would have to move",
        f"  drift: does not apply (budget now: {budget}): not drifted",
        f"  consolidation: applies (budget now: {budget}): consolidationPolicy "
        "WhenEmptyOrUnderutilized",
        EXPIRES,
    ]


def test_not_consolidated_by_budget_with_the_replacement_it_would_get(cluster: Cluster) -> None:
    name = node_of(cluster, "budget")
    assert explain_node(cluster, name).lines() == [
        *header(name, "budget"),
        "  passed over: budget 0 for Underutilized",
        *methods(0),
        "  replacement its pods would need: c-2x8, c-4x16 from $0.1000/h (this node: $0.1800/h)",
    ]


def test_not_consolidated_by_a_pdb(cluster: Cluster) -> None:
    name = node_of(cluster, "pdb")
    assert explain_node(cluster, name).lines() == [
        *header(name, "pdb"),
        "  blocked: pdb default/pdb allows no disruption",
        *methods(1),
    ]


def test_not_consolidated_by_do_not_disrupt(cluster: Cluster) -> None:
    name = node_of(cluster, "dnd")
    (pod,) = [p for p in cluster.state.pods_on(name)]
    assert explain_node(cluster, name).lines() == [
        *header(name, "dnd"),
        f"  blocked: do-not-disrupt pod default/{pod['metadata']['name']}",
        *methods(1),
    ]


def test_not_consolidated_by_price(cluster: Cluster) -> None:
    name = node_of(cluster, "price")
    assert explain_nodeclaim(cluster, name).lines() == [
        *header(name, "price"),
        "  passed over: replacement not cheaper",
        *methods(1),
        "  replacement its pods would need: c-4x16 from $0.1800/h (this node: $0.1800/h)",
    ]


def test_a_placed_pod_says_where_and_which_requirements_it_met(cluster: Cluster) -> None:
    name = node_of(cluster, "dnd")
    (pod,) = [p["metadata"]["name"] for p in cluster.state.pods_on(name)]
    assert explain_pod(cluster, f"default/{pod}").lines() == [
        f"pod default/{pod} is placed on node {name}",
        "  nodepool: dnd",
        f"  nodeclaim: {name}",
        "  requirements met:",
        "    karpenter.sh/nodepool=dnd",
    ]


def test_a_nodepool_says_its_budgets_now_limits_and_drift(cluster: Cluster) -> None:
    assert explain_nodepool(cluster, "budget").lines() == [
        "nodepool budget: ready, 1 node(s)",
        "  limits: none",
        "  disruptions allowed now: Empty 0, Drifted 0, Underutilized 0",
        "    budget nodes=0 (all reasons): active",
        "  drifted: none",
    ]


def test_json_of_a_node_for_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    answer = explain_json(capsys, "node", "budget-j9hcz", "--simulate", str(DISRUPTION))
    assert answer["passed_over"] == "budget 0 for Underutilized"
    assert answer["replacement"] == {"instance_types": ["c-2x8", "c-4x16"], "price": 0.1}
    assert [(m["method"], m["applies"], m["budget"]) for m in answer["methods"]] == [
        ("emptiness", False, 0),
        ("drift", False, 0),
        ("consolidation", True, 0),
        ("expiration", False, None),
    ]


@pytest.mark.parametrize(
    ("kind", "name", "message"),
    [
        ("node", "nope", "node nope not found"),
        ("nodeclaim", "nope", "nodeclaim nope not found"),
        ("nodepool", "nope", "nodepool nope not found"),
    ],
)
def test_an_unknown_object_is_named_with_its_kind(
    kind: str, name: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", kind, name, "--simulate", str(DISRUPTION)]) == 2
    assert capsys.readouterr().err == f"joiner explain: {message}\n"


def test_the_docs_show_these_answers_as_they_are(cluster: Cluster) -> None:
    docs = (EXAMPLES.parent / "docs" / "explain.md").read_text()
    pending = cluster_at("explain-pending.yaml")
    for answer in (
        explain_pod(pending, "default/big"),
        explain_nodepool(pending, "capped"),
        explain_node(cluster, node_of(cluster, "budget")),
    ):
        assert "```\n" + "\n".join(answer.lines()) + "\n```" in docs
