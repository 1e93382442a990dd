"""A ``Snapshot`` of a live cluster: one list of each kind ``joiner explain`` reads,
through the HTTP adapter with read-only rights (``READ_ONLY_RULES``, docs/explain.md),
and the instance types each NodePool may launch as the controller's AWS provider finds
them (read-only EC2 and pricing calls, for the NodePool's EC2NodeClass as the cluster
holds it). The controller's memory of offerings out of capacity is its own: a live
snapshot counts every offering EC2 lists as available.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodepool import NodePool
from joiner.cloudprovider.types import InstanceType
from joiner.explain.snapshot import KINDS, Object, Snapshot
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.settings import Settings, SettingsError

# All `joiner explain` may do on a cluster (docs/explain.md, as a ClusterRole): read.
READ_ONLY_RULES = [
    {
        "apiGroups": [""],
        "resources": [
            "nodes",
            "pods",
            "persistentvolumeclaims",
            "persistentvolumes",
            "podtemplates",
        ],
        "verbs": ["list"],
    },
    {
        "apiGroups": ["apps"],
        "resources": ["daemonsets", "deployments", "replicasets", "statefulsets"],
        "verbs": ["list"],
    },
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]},
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses", "csinodes"],
        "verbs": ["list"],
    },
    {
        "apiGroups": ["karpenter.sh"],
        "resources": ["nodeclaims", "nodepools"],
        "verbs": ["list"],
    },
    {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"], "verbs": ["list"]},
    {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["capacitybuffers"], "verbs": ["list"]},
]

# The cluster's objects -> the instance types of each NodePool, by its name.
TypesReader = Callable[[Sequence[Object]], dict[str, list[InstanceType]]]


def read_cluster(kubeconfig: str | None, context: str | None, types: TypesReader) -> Snapshot:
    """Every object of ``KINDS`` (an ApiError names the list refused), and their types."""
    config = ClusterConfig.from_kubeconfig(kubeconfig, context)
    kube = HttpKube(config, managed_fields=False)
    try:
        objects = [{**obj, "kind": kind} for kind in KINDS for obj in kube.list(kind)]
    finally:
        kube.close()
    return Snapshot(objects=objects, now=time.time(), instance_types=types(objects))


def aws_instance_types(cluster_name: str | None) -> TypesReader:
    """The controller's AWS provider, set up as the controller sets it up (its settings
    from the environment; ``cluster_name`` over ``CLUSTER_NAME``): checks that AWS answers
    and the EKS cluster exists (a StartupError names what is missing)."""
    from joiner.commands.controller import aws_cloud_factory  # boto3: only when asked

    env = dict(os.environ)
    if cluster_name:
        env["CLUSTER_NAME"] = cluster_name
    if not env.get("CLUSTER_NAME"):
        raise SettingsError("--cluster-name (or CLUSTER_NAME) is required: the EKS cluster")
    build = aws_cloud_factory(Settings.from_env(env))

    def read(objects: Sequence[Object]) -> dict[str, list[InstanceType]]:
        nodeclasses = {
            o["metadata"]["name"]: EC2NodeClass.from_dict(o)
            for o in objects
            if o["kind"] == "EC2NodeClass"
        }
        cloud, _ = build(nodeclasses.get)
        pools = [NodePool.from_dict(o) for o in objects if o["kind"] == "NodePool"]
        return {pool.name: list(cloud.get_instance_types(pool)) for pool in pools}

    return read
