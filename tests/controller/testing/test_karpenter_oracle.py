"""One workload document for both schedulers: the oracle runner (``joiner.testing.oracle``)
against the real binary, and the reading of the same document into Joiner's inputs with
the fake provider's catalogue as Karpenter builds it (``joiner.testing.workload``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.testing import oracle
from joiner.testing.workload import instance_type, solve_inputs, solve_workload, type_labels

NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {"template": {"spec": {"requirements": []}}},
}


def _pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {"metadata": {"name": name}, "spec": {"containers": [container], **spec}}


# --- the catalogue ---------------------------------------------------------------------


def test_a_type_with_defaults_is_the_fakes():
    it = instance_type({"name": "t"})
    assert it.capacity == res.parse_resource_list({"cpu": "4", "memory": "4Gi", "pods": "110"})
    assert it.allocatable == res.parse_resource_list(
        {"cpu": "3900m", "memory": "4086Mi", "pods": "110"}
    )
    price = 0.1 * 4 + 0.1 * 4 * 2**30 / 1e9
    assert [(o.zone, o.capacity_type, o.price) for o in it.offerings] == [
        ("test-zone-1", "spot", price),
        ("test-zone-2", "spot", price),
        ("test-zone-1", "on-demand", price),
        ("test-zone-2", "on-demand", price),
        ("test-zone-3", "on-demand", price),
    ]
    assert type_labels(it) == {
        wk.INSTANCE_TYPE: "t",
        wk.ARCH: "amd64",
        wk.OS: "darwin",
        wk.ZONE: "test-zone-1",
        wk.CAPACITY_TYPE: "on-demand",
        "integer": "4",
        "size": "small",
    }
    assert it.requirements["special"].allows_absence()


def test_a_large_type_has_the_fakes_large_labels_and_rounded_up_cpus():
    it = instance_type(
        {
            "name": "big",
            "cpu": "4500m",
            "memory": "9Gi",
            "os": "linux",
            "overhead": {},
            "labels": {"example.com/family": "f1"},
            "resources": {"fake.com/vendor-a": "1"},
            "offerings": [
                {"zone": "z1", "capacityType": "spot", "price": 0.5, "available": False},
                {"zone": "z2", "capacityType": "on-demand", "price": 2},
            ],
        }
    )
    assert it.allocatable == it.capacity
    assert type_labels(it) == {
        wk.INSTANCE_TYPE: "big",
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.ZONE: "z2",
        wk.CAPACITY_TYPE: "on-demand",
        "integer": "5",
        "size": "large",
        "special": "optional",
        "example.com/family": "f1",
    }
    assert [(o.zone, o.available) for o in it.offerings] == [("z1", False), ("z2", True)]


def test_existing_nodes_carry_the_labels_the_fake_provider_gives_a_node():
    document = {
        "instanceTypes": [{"name": "t", "os": "linux"}],
        "nodePools": [NODEPOOL],
        "pods": [],
        "existingNodes": [
            {
                "name": "n",
                "instanceType": "t",
                "zone": "test-zone-2",
                "capacityType": "spot",
                "nodePool": "default",
                "labels": {"team": "a"},
                "pods": [_pod("bound", "1", nodeName="n")],
            }
        ],
    }
    (node,) = solve_inputs(document).snapshot.nodes
    assert node.labels == {
        wk.INSTANCE_TYPE: "t",
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.ZONE: "test-zone-2",
        wk.CAPACITY_TYPE: "spot",
        "integer": "4",
        "size": "small",
        wk.HOSTNAME: "n",
        wk.NODEPOOL: "default",
        wk.NODE_REGISTERED: "true",
        wk.NODE_INITIALIZED: "true",
        "team": "a",
    }
    assert node.capacity == res.parse_resource_list({"cpu": "4", "memory": "4Gi", "pods": "110"})
    assert [p["metadata"]["uid"] for p in node.pods] == ["oracle-default-bound"]


# --- against the oracle ----------------------------------------------------------------


def test_both_schedulers_read_one_document_alike(karpenter_oracle: Path):
    document = {
        "instanceTypes": [{"name": "c2", "cpu": "2", "memory": "4Gi"}, {"name": "c4"}],
        "nodePools": [NODEPOOL],
        "pods": [_pod("a", "1500m"), _pod("b", "1500m"), _pod("huge", "64")],
    }
    (result,) = oracle.run_many(karpenter_oracle, [document])
    upstream = oracle.Outcome.of(result)
    plan = solve_workload(document)
    assert sorted(upstream.placed) == ["default/a", "default/b"]
    assert set(upstream.errors) == set(plan.unplaceable) == {"default/huge"}
    assert upstream.errors["default/huge"].startswith("no instance type has enough resources")
    assert plan.unplaceable["default/huge"].message.startswith(
        "no instance type has enough resources"
    )
    assert (upstream.nodeclaims, round(upstream.cost, 6)) == (1, round(plan.price, 6))
    [claim] = upstream.claims
    assert upstream.homes["default/a"] == {
        wk.HOSTNAME: "nodeclaim-0",
        wk.NODEPOOL: "default",
        wk.NODE_REGISTERED: "true",
        wk.NODE_INITIALIZED: "true",
        "karpenter.test.sh/testnodeclass": "default",
    }
    assert claim["instanceTypes"] == plan.nodeclaims[0].instance_types == ["c4"]


def test_a_document_the_oracle_rejects_raises_with_its_words(karpenter_oracle: Path):
    with pytest.raises(oracle.OracleError, match="karpenter oracle exited 1"):
        oracle.run(karpenter_oracle, {"instanceTypes": "not a list", "nodePools": []})


def _oracle_children() -> list[int]:
    """Processes of this test process still running the oracle."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"TestOracle" in cmdline:
            children.append(int(stat.parent.name))
    return children


def test_a_run_past_its_timeout_raises_and_leaves_no_oracle_running(karpenter_oracle: Path):
    document = {"instanceTypes": [], "nodePools": []}
    with pytest.raises(oracle.OracleError, match=r"^karpenter oracle took longer than 0.001 s$"):
        oracle.run_many(karpenter_oracle, [document, document], timeout=0.001)
    assert _oracle_children() == []
