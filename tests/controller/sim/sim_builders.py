"""Builders for the simulator tests: a valid scenario document to break field by field,
and a small hand-built SimulationResult for the renderers. (A plain module, not
conftest, so that test modules can import it by a name no other test directory uses.)"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from joiner import testing
from joiner.sim.result import (
    EventRecord,
    NodeClaimRecord,
    NodeView,
    PendingPod,
    SimulationResult,
    Snapshot,
    StepRecord,
    Totals,
)
from joiner.sim.scenario import load_scenario

GIB = 2**30

BASE_SCENARIO: dict[str, Any] = testing.scenario(
    "base",
    cluster="demo",
    instance_types=[
        testing.scenario_instance_type(
            "small",
            "2",
            "4Gi",
            {"zone-a/spot": 0.03, "zone-b/on-demand": 0.08},
            overhead={"cpu": "100m"},
        )
    ],
    objects=[
        testing.ec2nodeclass(cluster="demo"),
        testing.nodepool(),
        testing.deployment("app", replicas=1, cpu="500m", memory="512Mi"),
    ],
    steps=[
        {"scale": {"kind": "Deployment", "name": "app", "replicas": 5}},
        {"name": "wait", "settle": "10m"},
        {"advance": "1m"},
        {"expect": {"pendingPods": 0}},
    ],
)


def to_text(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False)


# Five of BASE_SCENARIO's 500m pods: two of its 2-CPU nodes.
SCALE_UP = {"scale": {"kind": "Deployment", "name": "app", "replicas": 5}}


def with_steps(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """BASE_SCENARIO with these steps instead of its own."""
    document = copy.deepcopy(BASE_SCENARIO)
    document["spec"]["steps"] = steps
    return document


def load_steps(steps: list[dict[str, Any]]) -> tuple[Any, ...]:
    """The loaded steps of BASE_SCENARIO with these steps."""
    return load_scenario(to_text(with_steps(steps))).steps


def node(name: str, **overrides: Any) -> NodeView:
    fields: dict[str, Any] = {
        "name": name,
        "managed": True,
        "instance_type": "c5.xlarge",
        "zone": "us-east-1a",
        "capacity_type": "spot",
        "price": 0.068,
        "ready": True,
        "nodepool": "default",
        "nodeclaim": f"{name}-claim",
        "allocatable": {"cpu": 3.92, "memory": 7 * GIB, "pods": 58},
        "requested": {"cpu": 2.0, "memory": 2 * GIB, "pods": 4},
        "pods": ["default/app-1", "default/app-2"],
    }
    fields.update(overrides)
    return NodeView(**fields)


def static_node() -> NodeView:
    return node(
        "system-1",
        managed=False,
        instance_type="m5.large",
        capacity_type="on-demand",
        price=0.096,
        nodepool=None,
        nodeclaim=None,
        allocatable={"cpu": 1.93, "memory": 7 * GIB, "pods": 29},
        requested={"cpu": 0.5, "memory": GIB // 2, "pods": 1},
        pods=["default/app-0"],
    )


def build_sample_result() -> SimulationResult:
    """Three steps: five pods scaled up (four pending), then one launched node takes them."""
    scaled = Snapshot(
        time=0.0,
        cost_per_hour=0.096,
        nodes=[static_node()],
        pending_pods=[
            PendingPod(f"default/app-{i}", "Insufficient cpu on system-1; waiting for a node")
            for i in range(1, 5)
        ],
    )
    settled = Snapshot(
        time=65.0,
        cost_per_hour=0.164,
        nodes=[static_node(), node("ip-10-0-1-1")],
    )
    claim = NodeClaimRecord(
        name="default-x7k2p",
        nodepool="default",
        created_at=1.0,
        instance_types=["c5.xlarge", "m5.xlarge"],
        instance_type="c5.xlarge",
        zone="us-east-1a",
        capacity_type="spot",
        price=0.068,
        launched_at=1.5,
        registered_at=31.5,
        initialized_at=41.5,
    )
    events = [
        EventRecord(
            1.0, "Pod", "app-1", "Nominated", "Pod should schedule on: nodeclaim/default-x7k2p"
        ),
        EventRecord(41.5, "Node", "ip-10-0-1-1", "Ready", "node is ready"),
    ]
    return SimulationResult(
        scenario="sample",
        steps=[
            StepRecord(0, "scale", 0.0, scaled),
            StepRecord(1, "settle", 65.0, settled, name="wait"),
            StepRecord(
                2,
                "expect",
                65.0,
                settled,
                failures=["spec.steps[2]: nodes.total: expected 3, got 2"],
            ),
        ],
        final=settled,
        nodeclaims=[claim],
        events=events,
        totals=Totals(
            cost=0.002,
            nodeclaims_created=1,
            nodeclaims_deleted=0,
            evictions=0,
            pod_pending_seconds=160.0,
        ),
    )
