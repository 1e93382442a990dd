"""The AWS tags the controller writes and filters on [SPEC 4.5, 9]."""

from __future__ import annotations

from collections.abc import Mapping

from joiner.api import labels as wk

EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
NAME_TAG = "Name"
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
DISCOVERY_TAG = "karpenter.sh/discovery"
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
# Keys a class may not set in spec.tags: the controller owns them [SPEC 1].
RESTRICTED_TAG_KEYS = (EKS_CLUSTER_NAME_TAG, wk.NODEPOOL, NODECLAIM_TAG, wk.EC2NODECLASS)


def cluster_tag(cluster_name: str) -> str:
    return f"{CLUSTER_TAG_PREFIX}{cluster_name}"


def restricted_tag_problems(tags: Mapping[str, str]) -> list[str]:
    """Problems with ``spec.tags``, each naming the key."""
    return [
        f"spec.tags: key {key!r} is reserved for the controller"
        for key in sorted(tags)
        if key.startswith("kubernetes.io/cluster") or key in RESTRICTED_TAG_KEYS
    ]


def launch_tags(
    cluster_name: str, nodepool: str, nodeclass: str, class_tags: Mapping[str, str]
) -> dict[str, str]:
    """Tags shared by everything launched for a pool and class (launch templates, ENIs);
    the class's tags first so the controller's own keys always win."""
    return {
        **class_tags,
        cluster_tag(cluster_name): "owned",
        EKS_CLUSTER_NAME_TAG: cluster_name,
        wk.NODEPOOL: nodepool,
        wk.EC2NODECLASS: nodeclass,
    }


def instance_tags(
    cluster_name: str, nodepool: str, nodeclass: str, nodeclaim: str, class_tags: Mapping[str, str]
) -> dict[str, str]:
    """Every tag of SPEC 4.5 for an instance and its volumes."""
    return {
        **launch_tags(cluster_name, nodepool, nodeclass, class_tags),
        NODECLAIM_TAG: nodeclaim,
        NAME_TAG: nodeclaim,
    }


def as_tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def from_tag_list(tags: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or ()}
