"""The cluster ``joiner top`` tests look at (created by conftest's ``top_cluster``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from joiner.api import labels as wk
from joiner.kube.http import HttpKube
from joiner.testing import pod


@dataclass
class TopCluster:
    """The objects' names, and an admin client to change them while top runs."""

    kube: HttpKube
    namespace: str
    pool: str
    node: str
    claim: str
    kubeconfig: Path  # top's ServiceAccount: read-only

    def add_node(self, name: str, instance_type: str, capacity_type: str, cpu: str) -> None:
        labels = {
            wk.NODEPOOL: self.pool,
            wk.INSTANCE_TYPE: instance_type,
            wk.ZONE: "us-east-1a",
            wk.REGION: "us-east-1",
            wk.CAPACITY_TYPE: capacity_type,
        }
        self.kube.create(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        )
        status = {
            "allocatable": {"cpu": cpu, "memory": "7Gi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        }
        # a merge patch carries no resourceVersion: the controller-manager, when a test
        # of the session started it, taints new nodes and would make an update conflict
        self.kube.patch("Node", name, {"status": status}, subresource="status")

    def bind_pod(self, name: str, node: str, cpu: str, memory: str) -> None:
        self.kube.create(pod(name, cpu, memory, namespace=self.namespace, nodeName=node))
