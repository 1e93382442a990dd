"""The explanations over a snapshot of plain objects, as a live cluster hands them over:
the outcomes a NodePool can give a pod besides a constraint."""

from __future__ import annotations

from typing import Any

from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import Offering
from joiner.explain.cluster import Cluster
from joiner.explain.pod import explain_pod
from joiner.explain.snapshot import Snapshot
from joiner.testing import ec2nodeclass, nodepool, pod

READY = {
    "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
}


def objects() -> list[dict[str, Any]]:
    ready_class = {**ec2nodeclass("default"), "status": READY}
    return [
        ready_class,
        ec2nodeclass("unresolved"),  # no status: not Ready
        nodepool("general", weight=30),
        nodepool("waiting", weight=20, nodeclass="unresolved"),
        nodepool("fixed", weight=10, replicas=2),
        pod("web", "1", "1Gi"),  # not yet marked unschedulable by the kube-scheduler
    ]


def test_launches_static_and_not_ready_pools_for_a_pod_not_yet_unschedulable() -> None:
    offerings = [Offering("us-east-1a", wk.CAPACITY_TYPE_ON_DEMAND, 0.1)]
    types = [new_instance_type(f"t-{n}", cpu=n, memory="8Gi", offerings=offerings) for n in (2, 4)]
    snapshot = Snapshot(objects(), now=1_767_225_600.0, instance_types={"general": types})
    assert explain_pod(Cluster(snapshot), "default/web").lines() == [
        "pod default/web is waiting for the kube-scheduler",
        "  nodepool general: launches: would launch a node (t-2, t-4) from $0.1000/h",
        "  nodepool waiting: not ready: its node class unresolved is not Ready",
        "  nodepool fixed: static: a static NodePool launches no nodes for pods",
    ]
