"""The JSON result is a public contract: field for field, in the documented order."""

from __future__ import annotations

import json

from joiner.sim.result import NodeClaimRecord, cost_per_hour, resource_view
from sim_builders import GIB

NODE_JSON = {
    "name": "ip-10-0-1-1",
    "managed": True,
    "nodepool": "default",
    "nodeclaim": "ip-10-0-1-1-claim",
    "instanceType": "c5.xlarge",
    "zone": "us-east-1a",
    "capacityType": "spot",
    "price": 0.068,
    "ready": True,
    "labels": {},
    "taints": [],
    "allocatable": {"cpu": 3.92, "memory": 7 * GIB, "pods": 58},
    "requested": {"cpu": 2.0, "memory": 2 * GIB, "pods": 4},
    "pods": ["default/app-1", "default/app-2"],
}
STATIC_JSON = {
    "name": "system-1",
    "managed": False,
    "nodepool": None,
    "nodeclaim": None,
    "instanceType": "m5.large",
    "zone": "us-east-1a",
    "capacityType": "on-demand",
    "price": 0.096,
    "ready": True,
    "labels": {},
    "taints": [],
    "allocatable": {"cpu": 1.93, "memory": 7 * GIB, "pods": 29},
    "requested": {"cpu": 0.5, "memory": GIB // 2, "pods": 1},
    "pods": ["default/app-0"],
}
SCALED = {
    "time": 0.0,
    "costPerHour": 0.096,
    "nodes": [STATIC_JSON],
    "pendingPods": [
        {"name": f"default/app-{i}", "reason": "Insufficient cpu on system-1; waiting for a node"}
        for i in range(1, 5)
    ],
}
SETTLED = {"time": 65.0, "costPerHour": 0.164, "nodes": [STATIC_JSON, NODE_JSON], "pendingPods": []}

EXPECTED = {
    "version": 1,
    "scenario": "sample",
    "steps": [
        {"index": 0, "action": "scale", "time": 0.0, "snapshot": SCALED},
        {"index": 1, "action": "settle", "time": 65.0, "settled": True, "snapshot": SETTLED},
        {"index": 2, "action": "expect", "time": 65.0, "snapshot": SETTLED},
    ],
    "final": SETTLED,
    "nodeclaims": [
        {
            "name": "default-x7k2p",
            "nodepool": "default",
            "instanceType": "c5.xlarge",
            "zone": "us-east-1a",
            "capacityType": "spot",
            "price": 0.068,
            "instanceTypes": ["c5.xlarge", "m5.xlarge"],
            "createdAt": 1.0,
            "launchedAt": 1.5,
            "registeredAt": 31.5,
            "initializedAt": 41.5,
            "deletedAt": None,
            "disruptionReason": None,
        }
    ],
    "events": [
        {
            "time": 1.0,
            "kind": "Pod",
            "name": "app-1",
            "reason": "Nominated",
            "message": "Pod should schedule on: nodeclaim/default-x7k2p",
            "count": 1,
            "lastTime": 1.0,
        },
        {
            "time": 41.5,
            "kind": "Node",
            "name": "ip-10-0-1-1",
            "reason": "Ready",
            "message": "node is ready",
            "count": 1,
            "lastTime": 41.5,
        },
    ],
    "totals": {
        "cost": 0.002,
        "nodeclaimsCreated": 1,
        "nodeclaimsDeleted": 0,
        "evictions": 0,
        "podPendingSeconds": 160.0,
        "restarts": 0,
    },
}


def test_json_matches_the_contract_field_for_field(sample_result):
    assert json.loads(sample_result.to_json()) == EXPECTED


def test_json_keeps_the_documented_field_order(sample_result):
    document = json.loads(sample_result.to_json())
    assert list(document) == [
        "version",
        "scenario",
        "steps",
        "final",
        "nodeclaims",
        "events",
        "totals",
    ]
    assert [list(step) for step in document["steps"]] == [
        ["index", "action", "time", "snapshot"],
        ["index", "action", "time", "settled", "snapshot"],
        ["index", "action", "time", "snapshot"],
    ]
    assert list(document["final"]) == ["time", "costPerHour", "nodes", "pendingPods"]
    assert list(document["final"]["nodes"][0]) == list(STATIC_JSON)
    assert list(document["nodeclaims"][0]) == list(EXPECTED["nodeclaims"][0])


def test_times_are_floats_even_when_given_as_integers(sample_result):
    sample_result.steps[0].time = 0
    sample_result.nodeclaims[0].created_at = 1
    sample_result.nodeclaims[0].deleted_at = 100
    text = sample_result.to_json(indent=None)
    assert '"time": 0.0, "snapshot"' in text
    assert '"createdAt": 1.0' in text
    assert '"deletedAt": 100.0' in text


def test_failures_are_for_humans_not_in_the_json(sample_result):
    assert sample_result.failures == ["spec.steps[2]: nodes.total: expected 3, got 2"]
    steps = json.loads(sample_result.to_json())["steps"]
    assert list(steps[2]) == ["index", "action", "time", "snapshot"]


def test_a_settle_step_that_did_not_settle_says_so(sample_result):
    message = "spec.steps[1] (wait): settle: did not settle within 1m5s: pending pods: 4"
    sample_result.steps[1].unsettled = message

    steps = json.loads(sample_result.to_json())["steps"]

    assert steps[1]["settled"] is False
    assert message not in sample_result.to_json()  # the words are for people
    assert sample_result.unsettled == [message]


def test_resource_view_units():
    view = resource_view(
        {"cpu": 3920, "memory": 512 * 2**20 * 1000, "pods": 58000, "nvidia.com/gpu": 2000}
    )
    assert view == {"cpu": 3.92, "memory": 512 * 2**20, "nvidia.com/gpu": 2, "pods": 58}
    assert isinstance(view["cpu"], float)
    assert isinstance(view["pods"], int)
    assert resource_view({"cpu": 2000, "example.com/half": 500}) == {
        "cpu": 2.0,
        "example.com/half": 0.5,
    }


def test_cost_per_hour_skips_unknown_prices(sample_result):
    nodes = list(sample_result.final.nodes)
    nodes[0].price = None
    assert cost_per_hour(nodes) == 0.068


def test_nodeclaim_exists_between_creation_and_deletion():
    claim = NodeClaimRecord(name="c", nodepool="p", created_at=10.0, deleted_at=20.0)
    assert [claim.exists_at(t) for t in (9.9, 10.0, 19.9, 20.0)] == [False, True, True, False]
    assert NodeClaimRecord(name="c", nodepool="p", created_at=10.0).exists_at(1e9)
