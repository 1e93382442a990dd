"""List and watch throughput of the KubeAPI adapters with 10,000 pods and 1,000 nodes.

Prints figures for the memory adapter (create, list, label/field-selected list,
watch replay and live watch delivery) and for the http adapter over the memory
store served on 127.0.0.1 (list decode and watch decode). Returns nonzero when a
correctness check fails or a target is missed.
"""

from __future__ import annotations

from typing import Any

PODS = 10_000
NODES = 1_000
NAMESPACES = 10
# Targets: a full list of 10k pods well under a second on either adapter, so a
# controller's resync never dominates its CPU.
MEMORY_LIST_TARGET_S = 0.5
HTTP_LIST_TARGET_S = 1.5


def make_node(i: int) -> dict[str, Any]:
    zone = "us-east-1" + "abc"[i % 3]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"ip-10-0-{i // 250}-{i % 250}.ec2.internal",
            "labels": {
                "kubernetes.io/hostname": f"ip-10-0-{i // 250}-{i % 250}",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.2xlarge",
                "topology.kubernetes.io/zone": zone,
                "karpenter.sh/nodepool": "default",
                "karpenter.sh/capacity-type": "on-demand",
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"},
            "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def make_pod(i: int, node_name: str) -> dict[str, Any]:
    """A typical Deployment pod (about 2 KB of JSON)."""
    app = f"app-{i % 200}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{i:06d}",
            "namespace": f"team-{i % NAMESPACES}",
            "labels": {"app": app, "pod-template-hash": "5d8f7c9b6", "tier": "web"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "main",
                    "image": f"registry.example.com/{app}:1.4.2",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "PORT", "value": "8080"}],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"memory": "512Mi"},
                    },
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": f"{app}-config"}}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
        },
    }
