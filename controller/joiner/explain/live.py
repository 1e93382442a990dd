"""A ``Snapshot`` of a live cluster, read through the HTTP adapter with read-only rights:
one list of each kind ``joiner explain`` reads (``READ_ONLY_RULES``, docs/explain.md)."""

from __future__ import annotations

import time

from joiner.explain.snapshot import KINDS, Snapshot
from joiner.kube.http import ClusterConfig, HttpKube

# All `joiner explain` may do on a cluster (docs/explain.md, as a ClusterRole): read.
READ_ONLY_RULES = [
    {
        "apiGroups": [""],
        "resources": [
            "nodes",
            "pods",
            "persistentvolumeclaims",
            "persistentvolumes",
        ],
        "verbs": ["get", "list"],
    },
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "list"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list"]},
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses", "csinodes"],
        "verbs": ["get", "list"],
    },
    {
        "apiGroups": ["karpenter.sh"],
        "resources": ["nodeclaims", "nodepools"],
        "verbs": ["get", "list"],
    },
    {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"], "verbs": ["get", "list"]},
]


def read_cluster(kubeconfig: str | None, context: str | None) -> Snapshot:
    """Every object of ``KINDS`` (an ApiError names the list refused)."""
    config = ClusterConfig.from_kubeconfig(kubeconfig, context)
    kube = HttpKube(config, managed_fields=False)
    try:
        objects = [{**obj, "kind": kind} for kind in KINDS for obj in kube.list(kind).items]
    finally:
        kube.close()
    return Snapshot(objects=objects, now=time.time())
