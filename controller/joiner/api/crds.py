"""The CustomResourceDefinitions of NodePool, NodeClaim, EC2NodeClass, NodeOverlay and
CapacityBuffer, rendered from the schemas in ``joiner.api.definitions`` (the Pulumi
components and ``joiner render crds`` install exactly these)."""

from __future__ import annotations

from typing import Any

from joiner.api.definitions import KINDS, Kind
from joiner.api.schema import to_openapi


def render_crds() -> list[dict[str, Any]]:
    """The CRD manifests (apiextensions.k8s.io/v1), NodePool first."""
    return [render_crd(kind) for kind in KINDS]


def render_crd(kind: Kind) -> dict[str, Any]:
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
        "categories": list(kind.categories),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{kind.group}"},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [_version(kind)],
        },
    }


def _version(kind: Kind) -> dict[str, Any]:
    subresources: dict[str, Any] = {"status": {}}
    if kind.scale is not None:
        subresources["scale"] = {
            "specReplicasPath": kind.scale.spec_replicas_path,
            "statusReplicasPath": kind.scale.status_replicas_path,
        }
    return {
        "name": kind.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": to_openapi(kind.schema)},
        "subresources": subresources,
        "additionalPrinterColumns": [dict(column) for column in kind.printer_columns],
    }
