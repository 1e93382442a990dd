"""Volume topology and CSI volume counts of a pod [SPEC 3.4].

A bound PVC pins the pod to its PV's node affinity (typically one zone); an
unbound one to its StorageClass's ``allowedTopologies``. Every CSI volume counts
against the node's per-driver attach limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from joiner.api.requirements import IN, Requirement, Requirements
from joiner.scheduling.model import Pod, VolumeCatalog
from joiner.scheduling.pods import namespace_of


@dataclass(slots=True)
class PodVolumes:
    requirements: Requirements = field(default_factory=Requirements)
    usage: dict[str, frozenset[str]] = field(default_factory=dict)  # driver -> volume ids
    error: str | None = None


def _claim_of(pod: Pod, volume: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
    """(claim name, inline claim spec for generic ephemeral volumes)."""
    if volume.get("persistentVolumeClaim"):
        return volume["persistentVolumeClaim"].get("claimName", ""), None
    template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
    pod_name = (pod.get("metadata") or {}).get("name", "")
    return f"{pod_name}-{volume.get('name', '')}", template.get("spec") or {}


def pod_volumes(pod: Pod, catalog: VolumeCatalog) -> PodVolumes:
    result = PodVolumes()
    usage: dict[str, set[str]] = {}
    namespace = namespace_of(pod)
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not (volume.get("persistentVolumeClaim") or volume.get("ephemeral")):
            continue
        name, inline = _claim_of(pod, volume)
        key = f"{namespace}/{name}"
        claim = catalog.claims.get(key)
        claim_spec = (claim or {}).get("spec") or inline
        if claim_spec is None:
            result.error = f"persistentvolumeclaim {key!r} not found"
            return result
        driver = _add_claim_topology(result.requirements, claim_spec, catalog)
        if isinstance(driver, _Missing):
            result.error = f"persistentvolumeclaim {key!r}: {driver.message}"
            return result
        if driver:
            usage.setdefault(driver, set()).add(key)
    result.usage = {driver: frozenset(ids) for driver, ids in usage.items()}
    return result


@dataclass(frozen=True, slots=True)
class _Missing:
    message: str


def _add_claim_topology(
    requirements: Requirements, claim_spec: Mapping[str, Any], catalog: VolumeCatalog
) -> str | _Missing | None:
    """Adds the claim's topology to ``requirements``; returns its CSI driver."""
    volume_name = claim_spec.get("volumeName")
    if volume_name:
        volume = catalog.volumes.get(volume_name)
        if volume is None:
            return _Missing(f"persistentvolume {volume_name!r} not found")
        spec = volume.get("spec") or {}
        terms = ((spec.get("nodeAffinity") or {}).get("required") or {}).get(
            "nodeSelectorTerms"
        ) or []
        if terms:
            requirements.add(
                *Requirements.from_node_selector_requirements(
                    terms[0].get("matchExpressions")
                ).values()
            )
        return (spec.get("csi") or {}).get("driver")
    class_name = claim_spec.get("storageClassName")
    if not class_name:
        return None
    storage_class = catalog.storage_classes.get(class_name)
    if storage_class is None:
        return _Missing(f"storageclass {class_name!r} not found")
    for term in list(storage_class.get("allowedTopologies") or ())[:1]:
        for expression in term.get("matchLabelExpressions") or ():
            requirements.add(Requirement.new(expression["key"], IN, expression.get("values")))
    return storage_class.get("provisioner")
