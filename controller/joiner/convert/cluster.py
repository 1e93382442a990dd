"""Reading the old kinds from a cluster (``joiner convert --from-cluster``) and writing
the v1 objects back (``--apply``), over the http adapter."""

from __future__ import annotations

from typing import Any

from joiner.api.validation import is_joiner_api_version
from joiner.kube.api import AlreadyExists, NotFound
from joiner.kube.http import HttpKube
from joiner.kube.resources import ResourceKind

# The REST resources of the old kinds, in the order they are read.
OLD_RESOURCES = (
    ResourceKind("Provisioner", "karpenter.sh", "v1alpha5", "provisioners", False, custom=True),
    ResourceKind(
        "AWSNodeTemplate", "karpenter.k8s.aws", "v1alpha1", "awsnodetemplates", False, custom=True
    ),
    ResourceKind("NodePool", "karpenter.sh", "v1beta1", "nodepools", False, custom=True),
    ResourceKind("NodeClaim", "karpenter.sh", "v1beta1", "nodeclaims", False, custom=True),
    ResourceKind(
        "EC2NodeClass", "karpenter.k8s.aws", "v1beta1", "ec2nodeclasses", False, custom=True
    ),
)


def read_old_objects(kube: HttpKube) -> list[dict[str, Any]]:
    """Every object of the old kinds the cluster serves (a kind it does not serve is
    skipped)."""
    objects: list[dict[str, Any]] = []
    for resource in OLD_RESOURCES:
        if not any(k == resource for k in kube.registry):
            kube.registry.add(resource)
        try:
            listed = kube.list(resource.kind, api_version=resource.api_version)
        except NotFound:
            continue
        objects.extend(listed.items)
    return objects


def apply_objects(kube: HttpKube, objects: list[dict[str, Any]]) -> list[str]:
    """Create each v1 NodePool and EC2NodeClass, or replace the one of that name;
    ``Kind/name created|configured`` for each, as kubectl says it. NodeClaims are not
    written: the controller makes its own, and a created one would launch an instance."""
    done = []
    for obj in objects:
        if not is_joiner_api_version(obj.get("apiVersion")):
            continue
        name = obj["metadata"]["name"]
        if obj["kind"] == "NodeClaim":
            done.append(f"NodeClaim/{name} not applied (the controller's own; printed only)")
            continue
        try:
            kube.create(obj)
            done.append(f"{obj['kind']}/{name} created")
        except AlreadyExists:
            current = kube.get(obj["kind"], name, api_version=obj["apiVersion"])
            version = current["metadata"]["resourceVersion"]
            kube.update({**obj, "metadata": {**obj["metadata"], "resourceVersion": version}})
            done.append(f"{obj['kind']}/{name} configured")
    return done
