"""What a CapacityBuffer asks for: the pod template of one chunk and how many chunks.

The template is a PodTemplate's (``podTemplateRef``) or a workload's (``scalableRef``: an
apps Deployment, ReplicaSet or StatefulSet). The count is the smallest of those the spec
sets: ``replicas``; ``percentage`` of the workload's replicas, rounded up and at least 1
(as the API documents it); and as many chunks as fit under ``limits`` (only the resources
a chunk requests count). A spec that sets none of them resolves to nothing, as Cluster
Autoscaler's does. Joiner-only: while one of the buffer's time windows is active, the
window's size stands in for the spec's (``joiner.buffers.windows``). Pure: the objects
are read through ``Get``, the time is given.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joiner.api import resources as res
from joiner.api.annotations import AnnotationError
from joiner.api.capacitybuffer import ACTIVE_CAPACITY, CapacityBuffer
from joiner.api.capacitywindows import parse_windows
from joiner.api.resources import ResourceList
from joiner.buffers.windows import Schedule, schedule_at
from joiner.kube.api import NotFound
from joiner.scheduling.pods import pod_requests

# (kind, name, namespace) -> the object; raises NotFound
Get = Callable[[str, str, str], dict[str, Any]]

# The workloads a scalableRef may name (group, kind); their template is spec.template.
SCALABLE_KINDS = frozenset(
    {("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet")}
)
POD_TEMPLATE = "PodTemplate"  # what a podTemplateRef names
# Every kind a resolution may get (what a reader of the buffers must be able to read).
READ_KINDS = (POD_TEMPLATE, *sorted(kind for _, kind in SCALABLE_KINDS))

# Reasons of a buffer that resolves to nothing (ReadyForProvisioning False).
UNSUPPORTED_STRATEGY = "UnsupportedStrategy"
TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
SCALABLE_NOT_FOUND = "ScalableNotFound"
UNSUPPORTED_SCALABLE = "UnsupportedScalable"
NO_SIZE = "NoSize"
LIMITS_UNRELATED = "LimitsNotRequested"
INVALID_WINDOWS = "InvalidWindows"


@dataclass(frozen=True)
class Resolved:
    """A buffer's chunks: ``template`` is a PodTemplateSpec (metadata, spec)."""

    buffer: CapacityBuffer
    template: Mapping[str, Any]
    replicas: int
    pod_template: str | None = None  # the PodTemplate's name, for a podTemplateRef
    template_generation: int | None = None
    schedule: Schedule | None = None  # for a buffer with time windows


@dataclass(frozen=True)
class Unresolved:
    """Why a buffer holds nothing: a condition reason and a message naming the field."""

    buffer: CapacityBuffer
    reason: str
    message: str


def resolve(buffer: CapacityBuffer, get: Get, now: float) -> Resolved | Unresolved:
    if buffer.strategy != ACTIVE_CAPACITY:
        return Unresolved(
            buffer,
            UNSUPPORTED_STRATEGY,
            f"spec.provisioningStrategy: {buffer.strategy!r} is not one Joiner holds "
            f"(only {ACTIVE_CAPACITY})",
        )
    try:
        windows = parse_windows(buffer.windows, scalable=buffer.scalable is not None)
    except AnnotationError as error:
        return Unresolved(buffer, INVALID_WINDOWS, str(error))
    schedule = schedule_at(windows, now) if windows else None
    sized = _sized(buffer, schedule)
    if buffer.pod_template is not None:
        resolution = _from_pod_template(sized, get)
    else:
        resolution = _from_scalable(sized, get)
    # The buffer as written (its size is the spec's), with the window that sized it.
    if isinstance(resolution, Resolved):
        return dataclasses.replace(resolution, buffer=buffer, schedule=schedule)
    if schedule is not None and schedule.active is not None:
        message = f"while {schedule.active.describe()} is active: {resolution.message}"
        return dataclasses.replace(resolution, buffer=buffer, message=message)
    return dataclasses.replace(resolution, buffer=buffer)


def _sized(buffer: CapacityBuffer, schedule: Schedule | None) -> CapacityBuffer:
    """The buffer with the active window's size in place of the spec's."""
    if schedule is None or schedule.active is None:
        return buffer
    window = schedule.active
    return dataclasses.replace(
        buffer, replicas=window.replicas, percentage=window.percentage, limits=window.limits
    )


def _from_pod_template(buffer: CapacityBuffer, get: Get) -> Resolved | Unresolved:
    name = buffer.pod_template
    assert name is not None
    try:
        template = get(POD_TEMPLATE, name, buffer.namespace)
    except NotFound:
        message = f"spec.podTemplateRef.name: no PodTemplate {name!r} in {buffer.namespace}"
        return Unresolved(buffer, TEMPLATE_NOT_FOUND, message)
    spec = template.get("template") or {}
    count = chunk_count(buffer, spec, scalable_replicas=None)
    if isinstance(count, Unresolved):
        return count
    generation = (template.get("metadata") or {}).get("generation")
    return Resolved(buffer, spec, count, name, int(generation) if generation else None)


def _from_scalable(buffer: CapacityBuffer, get: Get) -> Resolved | Unresolved:
    ref = buffer.scalable
    if ref is None:  # the CRD allows neither ref; nothing shapes a chunk then
        message = "spec: neither podTemplateRef nor scalableRef is set"
        return Unresolved(buffer, NO_SIZE, message)
    if (ref.api_group, ref.kind) not in SCALABLE_KINDS:
        kinds = ", ".join(f"{group}/{kind}" for group, kind in sorted(SCALABLE_KINDS))
        message = (
            f"spec.scalableRef: {ref.api_group or 'core'}/{ref.kind} is not a workload Joiner "
            f"reads a pod template from (one of {kinds})"
        )
        return Unresolved(buffer, UNSUPPORTED_SCALABLE, message)
    try:
        workload = get(ref.kind, ref.name, buffer.namespace)
    except NotFound:
        message = f"spec.scalableRef.name: no {ref.kind} {ref.name!r} in {buffer.namespace}"
        return Unresolved(buffer, SCALABLE_NOT_FOUND, message)
    spec = workload.get("spec") or {}
    replicas = spec.get("replicas")
    count = chunk_count(buffer, spec.get("template") or {}, 1 if replicas is None else replicas)
    if isinstance(count, Unresolved):
        return count
    return Resolved(buffer, spec.get("template") or {}, count)


def chunk_count(
    buffer: CapacityBuffer, template: Mapping[str, Any], scalable_replicas: int | None
) -> int | Unresolved:
    """The smallest of the counts the spec sets (see the module docstring)."""
    counts = []
    if buffer.replicas is not None:
        counts.append(max(0, buffer.replicas))
    if buffer.percentage is not None and scalable_replicas is not None:
        counts.append(from_percentage(buffer.percentage, scalable_replicas))
    if buffer.limits is not None:
        fitting = within_limits(chunk_requests(template), buffer.limits)
        if fitting is None:
            message = (
                f"spec.limits: a chunk requests none of {', '.join(sorted(buffer.limits))}, "
                "so the limits size nothing"
            )
            return Unresolved(buffer, LIMITS_UNRELATED, message)
        counts.append(fitting)
    if not counts:
        message = "spec: none of replicas, percentage and limits is set"
        return Unresolved(buffer, NO_SIZE, message)
    return min(counts)


def from_percentage(percentage: int, scalable_replicas: int) -> int:
    """``percentage`` of the workload's replicas, rounded up, at least 1 (0% is none)."""
    if percentage <= 0:
        return 0
    return max(1, math.ceil(percentage * max(0, scalable_replicas) / 100))


def chunk_requests(template: Mapping[str, Any]) -> ResourceList:
    """What one chunk requests (the pod count the scheduler adds left out)."""
    requests = pod_requests({"spec": template.get("spec") or {}}, {})
    requests.pop(res.PODS, None)
    return requests


def within_limits(requests: Mapping[str, int], limits: Mapping[str, int]) -> int | None:
    """How many chunks fit under ``limits``; None when a chunk requests none of them."""
    counted = [
        max(0, limits[name]) // amount
        for name, amount in requests.items()
        if amount > 0 and name in limits
    ]
    return min(counted) if counted else None
