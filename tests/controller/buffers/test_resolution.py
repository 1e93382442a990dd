"""How a CapacityBuffer resolves to its chunk template and count [joiner.buffers.resolution]:
the combination of replicas, percentage and limits, the workloads a scalableRef may name,
and a clear reason naming the field when it resolves to nothing."""

from __future__ import annotations

from typing import Any

import pytest
from joiner.api.capacitybuffer import CapacityBuffer
from joiner.buffers import resolution as r
from joiner.kube.api import NotFound

CHUNK = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}


def _buffer(**spec: Any) -> CapacityBuffer:
    return CapacityBuffer.from_dict(
        {"metadata": {"name": "spare", "namespace": "apps", "generation": 2}, "spec": spec}
    )


def _store(*objects: dict[str, Any]) -> r.Get:
    by_key = {(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"]): o for o in objects}

    def get(kind: str, name: str, namespace: str) -> dict[str, Any]:
        try:
            return by_key[(kind, name, namespace)]
        except KeyError:
            raise NotFound(f"{kind} {name}") from None

    return get


def _pod_template(generation: int = 3) -> dict[str, Any]:
    meta = {"name": "chunk", "namespace": "apps", "generation": generation}
    return {"kind": "PodTemplate", "metadata": meta, "template": CHUNK}


def _workload(kind: str, replicas: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": CHUNK}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"kind": kind, "metadata": {"name": "web", "namespace": "apps"}, "spec": spec}


NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
WEB = {"apiGroup": "apps", "kind": "Deployment", "name": "web"}


@pytest.mark.parametrize(
    ("spec", "replicas", "expected"),
    [
        ({"replicas": 4}, 10, 4),
        ({"percentage": 20}, 10, 2),
        ({"percentage": 25}, 10, 3),  # 2.5 rounds up
        ({"percentage": 1}, 10, 1),  # at least 1
        ({"percentage": 50}, 0, 1),  # at least 1, even of none
        ({"percentage": 0}, 10, 0),
        ({"percentage": 200}, 3, 6),
        ({"replicas": 5, "percentage": 20}, 10, 2),  # both: the smaller
        ({"replicas": 1, "percentage": 20}, 10, 1),
        ({"limits": {"cpu": "2200m"}}, 10, 4),  # 500m each: 4 fit under 2.2
        ({"percentage": 100, "limits": {"cpu": "2"}}, 10, 4),  # limits cap the percentage
        ({"replicas": 2, "limits": {"cpu": "10"}}, 10, 2),
        ({"replicas": 9, "limits": {"cpu": "2", "memory": "1Gi"}}, 10, 4),  # memory unrequested
        ({"percentage": 30}, None, 1),  # no replicas field: 1 replica, as the API defaults it
    ],
)
def test_counts_combine_as_the_api_documents(
    spec: dict[str, Any], replicas: int | None, expected: int
) -> None:
    store = _store(_workload("Deployment", replicas))
    resolved = r.resolve(_buffer(scalableRef=WEB, **spec), store, NOW)
    assert isinstance(resolved, r.Resolved)
    assert (resolved.replicas, resolved.template) == (expected, CHUNK)
    assert resolved.pod_template is None


def test_a_pod_template_shapes_the_chunk_and_is_reported_with_its_generation() -> None:
    buffer = _buffer(podTemplateRef={"name": "chunk"}, replicas=3)
    resolved = r.resolve(buffer, _store(_pod_template(generation=7)), NOW)
    assert resolved == r.Resolved(buffer, CHUNK, 3, "chunk", 7)


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_each_apps_workload_may_shape_the_chunk(kind: str) -> None:
    buffer = _buffer(scalableRef={**WEB, "kind": kind}, percentage=50)
    resolved = r.resolve(buffer, _store(_workload(kind, 4)), NOW)
    assert isinstance(resolved, r.Resolved) and resolved.replicas == 2


@pytest.mark.parametrize(
    ("spec", "reason", "message"),
    [
        (
            {"podTemplateRef": {"name": "gone"}, "replicas": 1},
            r.TEMPLATE_NOT_FOUND,
            "spec.podTemplateRef.name: no PodTemplate 'gone' in apps",
        ),
        (
            {"scalableRef": {**WEB, "name": "other"}, "replicas": 1},
            r.SCALABLE_NOT_FOUND,
            "spec.scalableRef.name: no Deployment 'other' in apps",
        ),
        (
            {"scalableRef": {"kind": "ReplicationController", "name": "web"}, "replicas": 1},
            r.UNSUPPORTED_SCALABLE,
            "spec.scalableRef: core/ReplicationController is not a workload Joiner reads a pod "
            "template from (one of apps/Deployment, apps/ReplicaSet, apps/StatefulSet)",
        ),
        (
            {"scalableRef": WEB},
            r.NO_SIZE,
            "spec: none of replicas, percentage and limits is set",
        ),
        (
            {"scalableRef": WEB, "limits": {"nvidia.com/gpu": "2"}},
            r.LIMITS_UNRELATED,
            "spec.limits: a chunk requests none of nvidia.com/gpu, so the limits size nothing",
        ),
        (
            {"replicas": 2},
            r.NO_SIZE,
            "spec: neither podTemplateRef nor scalableRef is set",
        ),
        (
            {"scalableRef": WEB, "replicas": 1, "provisioningStrategy": "example.com/passive"},
            r.UNSUPPORTED_STRATEGY,
            "spec.provisioningStrategy: 'example.com/passive' is not one Joiner holds "
            "(only buffer.x-k8s.io/active-capacity)",
        ),
    ],
)
def test_a_buffer_that_resolves_to_nothing_says_why_naming_the_field(
    spec: dict[str, Any], reason: str, message: str
) -> None:
    buffer = _buffer(**spec)
    store = _store(_pod_template(), _workload("Deployment", 4))
    assert r.resolve(buffer, store, NOW) == r.Unresolved(buffer, reason, message)


def _windowed(windows: str, **spec: Any) -> CapacityBuffer:
    raw = {
        "metadata": {
            "name": "spare",
            "namespace": "apps",
            "annotations": {"joiner.sh/capacity-windows": windows},
        },
        "spec": spec,
    }
    return CapacityBuffer.from_dict(raw)


# 00:00-01:00 UTC every day; NOW is 2026-01-01T00:00:00Z, inside it
FIRST_HOUR = "[{schedule: '@daily', duration: 1h, percentage: 50}]"


def test_an_active_window_s_size_stands_in_for_the_spec_s() -> None:
    """The window's percentage replaces the spec's replicas (a window sets the whole
    size); outside it, the spec's replicas again."""
    buffer = _windowed(FIRST_HOUR, scalableRef=WEB, replicas=1)
    store = _store(_workload("Deployment", 10))
    inside = r.resolve(buffer, store, NOW)
    assert isinstance(inside, r.Resolved) and inside.schedule is not None
    assert (inside.replicas, inside.buffer, inside.schedule.until) == (5, buffer, NOW + 3600)
    outside = r.resolve(buffer, store, NOW + 3600)
    assert isinstance(outside, r.Resolved) and outside.schedule is not None
    assert (outside.replicas, outside.schedule.active) == (1, None)
    plain = r.resolve(_buffer(scalableRef=WEB, replicas=1), store, NOW)
    assert isinstance(plain, r.Resolved) and plain.schedule is None


def test_a_window_that_sizes_nothing_says_which_window() -> None:
    windows = "[{schedule: '@daily', duration: 1h, limits: {memory: 1Gi}}]"
    buffer = _windowed(windows, podTemplateRef={"name": "chunk"}, replicas=1)
    assert r.resolve(buffer, _store(_pod_template()), NOW) == r.Unresolved(
        buffer,
        "LimitsNotRequested",
        "while window 0 (@daily UTC, 1h) is active: spec.limits: a chunk requests none of "
        "memory, so the limits size nothing",
    )
