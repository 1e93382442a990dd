"""The virtual pods of a buffer's chunks: what the scheduler places for it. They are never
created in the cluster: kube-scheduler never sees them, so a real pod always takes the
room they hold.

A chunk is named ``<buffer>#<index>`` in the buffer's namespace: ``#`` is not allowed in a
pod's name, so a chunk's key (``pod_key``) can never be a real pod's.
"""

from __future__ import annotations

from typing import Any

from joiner.buffers.resolution import Resolved
from joiner.jsoncopy import deep_copy
from joiner.scheduling.model import Pod

# On every chunk: the buffer it holds capacity for (namespace/name).
BUFFER_ANNOTATION = "autoscaling.x-k8s.io/capacity-buffer"
SEPARATOR = "#"


def chunk_pods(resolved: Resolved) -> list[Pod]:
    """One pod per chunk, shaped by the buffer's template."""
    buffer = resolved.buffer
    meta = resolved.template.get("metadata") or {}
    spec = deep_copy(resolved.template.get("spec") or {})
    spec.pop("nodeName", None)
    labels = dict(meta.get("labels") or {})
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{buffer.name}{SEPARATOR}{index}",
                "namespace": buffer.namespace,
                "labels": labels,
                "annotations": {BUFFER_ANNOTATION: buffer.key},
            },
            "spec": spec,
        }
        for index in range(resolved.replicas)
    ]


def buffer_of(pod: Pod) -> str | None:
    """The buffer (namespace/name) a chunk holds capacity for; None for a real pod."""
    annotations: dict[str, Any] = (pod.get("metadata") or {}).get("annotations") or {}
    return annotations.get(BUFFER_ANNOTATION)
