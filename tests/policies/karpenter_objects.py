"""Karpenter objects as a policy sees them, for the tests of several policy modules."""

from __future__ import annotations

from typing import Any

NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def node_class_props(**spec: Any) -> dict[str, Any]:
    """An EC2NodeClass named default for the node role demo-node on AL2023; ``spec`` adds
    the fields a test is about."""
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {"role": "demo-node", "amiSelectorTerms": [{"alias": "al2023@latest"}], **spec},
    }
