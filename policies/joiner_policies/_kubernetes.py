"""Recognising Kubernetes objects among a stack's resources."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joiner.api import ec2nodeclass, nodepool
from joiner.api import labels as wk

NODEPOOL = (wk.API_VERSION, nodepool.KIND)
EC2NODECLASS = (wk.AWS_API_VERSION, ec2nodeclass.KIND)
DEPLOYMENT = ("apps/v1", "Deployment")


def is_kind(resource_type: str, props: Mapping[str, Any], kind: tuple[str, str]) -> bool:
    """True for a Kubernetes object of ``(apiVersion, kind)``, whether the program declared
    it as a typed resource (``kubernetes:apps/v1:Deployment``), a CustomResource
    (``kubernetes:karpenter.sh/v1:NodePool``) or a generic custom resource type: the
    object's own apiVersion and kind decide."""
    if not resource_type.startswith("kubernetes:"):
        return False
    api_version, name = kind
    if resource_type == f"kubernetes:{api_version}:{name}":
        return True
    return props.get("apiVersion") == api_version and props.get("kind") == name
