"""``joiner explain pod`` on a simulation: a pending pod, each NodePool's reason."""

from __future__ import annotations

import pytest
from explain_scenarios import EXAMPLES, cluster_at, explain_json
from joiner.cli import main
from joiner.explain.cluster import Cluster
from joiner.explain.pod import explain_pod

PENDING = EXAMPLES / "explain-pending.yaml"


@pytest.fixture(scope="module")
def pending() -> Cluster:
    return cluster_at("explain-pending.yaml")


def test_a_pending_pod_is_told_each_pools_reason_taint_affinity_limit_ice_size(
    pending: Cluster,
) -> None:
    assert explain_pod(pending, "default/big").lines() == [
        "pod default/big is pending",
        "  nodepool gpu: taints: did not tolerate taint (taint=dedicated=gpu:NoSchedule), "
        "nodepool=gpu",
        "  nodepool zone-b: node affinity: incompatible requirements, key "
        "topology.kubernetes.io/zone, topology.kubernetes.io/zone In [us-east-1a] not in "
        "topology.kubernetes.io/zone In [us-east-1b], nodepool=zone-b",
        "  nodepool capped: pool limits: all available instance types exceed limits for "
        "nodepool (NodePool=capped), limits on cpu leave no room for a node, nodepool=capped",
        "    limits (used / allowed): cpu 0 / 1",
        "  nodepool ice: no compatible instance type: nodepool requirements filtered out all "
        "available instance types, nodepool=ice",
        "    no offering available: ice-8x32",
        "  nodepool small: resources: no instance type has enough resources, requests cpu=6, "
        "memory=4Gi, pods=1 (pod + daemonsets), nodepool=small",
        "    closest instance types:",
        "      a-4x16: cpu short by 2100m (needs 6, has 3900m)",
        "      a-2x8: cpu short by 4 (needs 6, has 2)",
    ]


def test_json_carries_the_same_answer_for_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    answer = explain_json(capsys, "pod", "default/big", "--simulate", str(PENDING))
    assert [(p["nodepool"], p["outcome"]) for p in answer["pools"]] == [
        ("gpu", "taints"),
        ("zone-b", "node affinity"),
        ("capped", "pool limits"),
        ("ice", "no compatible instance type"),
        ("small", "resources"),
    ]
    assert answer["pools"][2]["limits"] == [{"resource": "cpu", "used": "0", "allowed": "1"}]
    assert answer["pools"][3]["unavailable"] == ["ice-8x32"]
    assert answer["pools"][4]["closest"][0] == {
        "instance_type": "a-4x16",
        "short": {"cpu": "2100m"},
        "needs": {"cpu": "6"},
        "allocatable": {"cpu": "3900m"},
    }


def test_a_pod_not_there_yet_is_an_error_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At step 0 the pod is not there yet: explaining it is an error naming it."""
    code = main(["explain", "pod", "default/big", "--simulate", str(PENDING), "--at", "0"])
    assert code == 2
    assert capsys.readouterr().err == "joiner explain: pod default/big not found\n"


def test_an_unknown_step_is_named_with_the_steps_there_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["explain", "pod", "default/big", "--simulate", str(PENDING), "--at", "later"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"joiner explain: {PENDING}: --at later: no such step (steps 0-3; names: ice is out of "
        "capacity, the pod arrives, pending)\n"
    )


def test_a_live_cluster_needs_the_eks_cluster_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CLUSTER_NAME", raising=False)
    assert main(["explain", "pod", "default/big"]) == 2
    assert capsys.readouterr().err == (
        "joiner explain: --cluster-name (or CLUSTER_NAME) is required: the EKS cluster\n"
    )


def test_at_without_a_simulation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "pod", "default/big", "--at", "1"]) == 2
    assert capsys.readouterr().err == "joiner explain: --at needs --simulate\n"
