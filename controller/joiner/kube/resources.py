"""The kind registry: Kind -> group, version, plural, scope, status subresource.

Core kinds are listed here; the Karpenter kinds come from the CRDs that
``joiner render crds`` prints (``joiner.api.crds.render_crds``), so the served
API always matches the manifests users install.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from joiner.api.crds import render_crds
from joiner.kube.api import NotFound


@dataclass(frozen=True)
class ResourceKind:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    status_subresource: bool = True
    list_kind: str = ""
    custom: bool = False  # served from a CustomResourceDefinition

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind_name(self) -> str:
        return self.list_kind or f"{self.kind}List"

    def collection_path(self, namespace: str | None = None) -> str:
        """REST path of the collection (all namespaces when namespace is None)."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None) -> str:
        return f"{self.collection_path(namespace)}/{name}"


_CORE: tuple[ResourceKind, ...] = (
    ResourceKind("Pod", "", "v1", "pods", True),
    ResourceKind("Node", "", "v1", "nodes", False),
    ResourceKind("Namespace", "", "v1", "namespaces", False),
    ResourceKind("Event", "", "v1", "events", True, status_subresource=False),
    ResourceKind("PersistentVolume", "", "v1", "persistentvolumes", False),
    ResourceKind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True),
    ResourceKind("ConfigMap", "", "v1", "configmaps", True, status_subresource=False),
    ResourceKind("PodTemplate", "", "v1", "podtemplates", True, status_subresource=False),
    ResourceKind("Service", "", "v1", "services", True),
    ResourceKind("StorageClass", "storage.k8s.io", "v1", "storageclasses", False, False),
    ResourceKind("CSINode", "storage.k8s.io", "v1", "csinodes", False, False),
    ResourceKind("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False),
    ResourceKind("DaemonSet", "apps", "v1", "daemonsets", True),
    ResourceKind("Deployment", "apps", "v1", "deployments", True),
    ResourceKind("ReplicaSet", "apps", "v1", "replicasets", True),
    ResourceKind("StatefulSet", "apps", "v1", "statefulsets", True),
    ResourceKind("Job", "batch", "v1", "jobs", True),
    ResourceKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    ResourceKind("Lease", "coordination.k8s.io", "v1", "leases", True, False),
)


def kinds_from_crds(crds: Iterable[dict[str, Any]]) -> list[ResourceKind]:
    """One ResourceKind per served version of each CustomResourceDefinition."""
    kinds = []
    for crd in crds:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            subresources = version.get("subresources") or spec.get("subresources") or {}
            kinds.append(
                ResourceKind(
                    kind=names["kind"],
                    group=spec["group"],
                    version=version["name"],
                    plural=names["plural"],
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                    status_subresource="status" in subresources,
                    list_kind=names.get("listKind", ""),
                    custom=True,
                )
            )
    return kinds


class Registry:
    """Looks kinds up by Kind (optionally apiVersion), or by group/version/plural (REST)."""

    def __init__(self, kinds: Iterable[ResourceKind]) -> None:
        self._kinds: list[ResourceKind] = []
        self._by_kind: dict[str, list[ResourceKind]] = {}
        self._by_path: dict[tuple[str, str, str], ResourceKind] = {}
        for kind in kinds:
            self.add(kind)

    def add(self, kind: ResourceKind) -> None:
        self._kinds.append(kind)
        self._by_kind.setdefault(kind.kind, []).append(kind)
        self._by_path[(kind.group, kind.version, kind.plural)] = kind

    def __iter__(self) -> Iterator[ResourceKind]:
        return iter(self._kinds)

    def lookup(self, kind: str, api_version: str | None = None) -> ResourceKind:
        candidates = self._by_kind.get(kind, [])
        if api_version:
            candidates = [c for c in candidates if c.api_version == api_version]
        if not candidates:
            shown = f"{api_version}, Kind={kind}" if api_version else kind
            raise NotFound(f'the server could not find the requested resource (kind "{shown}")')
        return candidates[0]

    def by_path(self, group: str, version: str, plural: str) -> ResourceKind:
        try:
            return self._by_path[(group, version, plural)]
        except KeyError:
            where = f"{group}/{version}" if group else version
            raise NotFound(
                f'the server could not find the requested resource ("{plural}" in {where})'
            ) from None


def default_registry() -> Registry:
    """Core kinds the controller and simulator use, plus the Karpenter CRD kinds."""
    return Registry([*_CORE, *kinds_from_crds(render_crds())])
