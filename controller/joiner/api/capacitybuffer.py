"""CapacityBuffer (autoscaling.x-k8s.io/v1beta1): typed view over the dict form.

A buffer asks for spare capacity ahead of demand, in "chunks" shaped like one pod: the pod
of a PodTemplate (``podTemplateRef``) or of a workload's template (``scalableRef``). How
many chunks is ``replicas``, ``percentage`` of the workload's replicas and ``limits`` on
their total requests (``joiner.buffers.resolution``). Validation lives in
``joiner.api.validation`` with the schema in ``joiner.api.definitions.capacitybuffer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joiner.api.resources import ResourceList, parse_resource_list

GROUP = "autoscaling.x-k8s.io"
VERSION = "v1beta1"
KIND = "CapacityBuffer"
# The one strategy the API defines: chunks are provisioned and kept, and real pods take
# precedence over them. Joiner holds buffers of this strategy only.
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"
# Joiner-only: the buffer's time windows (joiner.api.capacitywindows, docs/headroom.md).
WINDOWS_ANNOTATION = "joiner.sh/capacity-windows"


@dataclass(frozen=True)
class ScalableRef:
    """A workload whose pod template shapes the chunks (``apiGroup`` "" is the core group)."""

    api_group: str
    kind: str
    name: str


@dataclass(frozen=True)
class CapacityBuffer:
    namespace: str
    name: str
    generation: int
    strategy: str
    created: str = ""  # metadata.creationTimestamp (RFC 3339: sorts by time)
    pod_template: str | None = None
    scalable: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: ResourceList | None = None
    # Joiner-only: the joiner.sh/capacity-windows annotation as written (its windows are
    # parsed, with their field errors, by joiner.api.capacitywindows).
    windows: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CapacityBuffer:
        """From an object the API server accepted (the schema holds, defaults applied)."""
        meta, spec = raw["metadata"], raw.get("spec") or {}
        template = spec.get("podTemplateRef")
        scalable = spec.get("scalableRef")
        limits = spec.get("limits")
        return cls(
            namespace=meta.get("namespace") or "default",
            name=meta["name"],
            generation=int(meta.get("generation") or 0),
            created=meta.get("creationTimestamp") or "",
            strategy=spec.get("provisioningStrategy") or ACTIVE_CAPACITY,
            pod_template=template["name"] if template else None,
            scalable=(
                ScalableRef(scalable.get("apiGroup") or "", scalable["kind"], scalable["name"])
                if scalable
                else None
            ),
            replicas=spec.get("replicas"),
            percentage=spec.get("percentage"),
            limits=parse_resource_list(limits) if limits is not None else None,
            windows=(meta.get("annotations") or {}).get(WINDOWS_ANNOTATION),
        )
