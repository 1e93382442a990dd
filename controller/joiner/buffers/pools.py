"""Joiner-only: the NodePool shorthand ``joiner.sh/spare-capacity`` as a buffer.

A pool's ``{cpu: "4", memory: 16Gi}`` becomes a buffer keyed ``NodePool/<pool>`` (no
namespace is spelled with capitals, so no CapacityBuffer has such a key) whose chunks are
pinned to the pool (``nodeSelector`` on ``karpenter.sh/nodepool``, tolerating the pool's
taints). The chunk shape: the spare capacity split into equal chunks of at most 1 CPU and
4 GiB each (the 1:4 of general-purpose instances), as few as that allows: ``cpu: 4,
memory: 16Gi`` is 4 chunks of 1 CPU and 4 GiB; ``cpu: 2, memory: 32Gi`` is 8 chunks of
250m and 4 GiB. Small chunks fill the room other pods leave on the pool's nodes; for room
for pods of a given shape, a CapacityBuffer with their template fits better. The buffer
is as old as the pool (``Buffers`` places the oldest first).
"""

from __future__ import annotations

import math
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.annotations import AnnotationError
from joiner.api.capacitybuffer import ACTIVE_CAPACITY, CapacityBuffer
from joiner.api.nodepool import NodePool
from joiner.api.resources import ResourceList, format_resource_list
from joiner.api.sparecapacity import SPARE_ANNOTATION, parse_spare
from joiner.buffers.resolution import Resolved, Unresolved

POOL_NAMESPACE = "NodePool"  # the "namespace" of a pool's buffer key and chunks
INVALID_SPARE = "InvalidSpareCapacity"
GIB = 2**30
# The most one chunk of a pool's spare capacity requests (milli-units).
CHUNK_AT_MOST: ResourceList = {res.CPU: 1000, res.MEMORY: 4 * GIB * 1000}


def pool_key(pool: str) -> str:
    return f"{POOL_NAMESPACE}/{pool}"


def pool_of(key: str) -> str | None:
    """The pool a buffer key is the shorthand of; None for a CapacityBuffer's key."""
    namespace, _, name = key.partition("/")
    return name if namespace == POOL_NAMESPACE else None


def expand(pool: NodePool) -> Resolved | Unresolved | None:
    """The buffer a pool's spare capacity annotation stands for; None without one."""
    buffer = CapacityBuffer(
        namespace=POOL_NAMESPACE,
        name=pool.name,
        generation=int(pool.metadata.get("generation") or 0),
        strategy=ACTIVE_CAPACITY,
        created=pool.metadata.get("creationTimestamp") or "",
    )
    try:
        spare = parse_spare((pool.metadata.get("annotations") or {}).get(SPARE_ANNOTATION))
    except AnnotationError as error:
        return Unresolved(buffer, INVALID_SPARE, str(error))
    if spare is None:
        return None
    count, chunk = chunks_of(spare)
    return Resolved(buffer, _template(pool, chunk), count)


def chunks_of(spare: ResourceList) -> tuple[int, ResourceList]:
    """How many chunks, and what one requests (see the module docstring)."""
    count = max(math.ceil(amount / CHUNK_AT_MOST[name]) for name, amount in spare.items())
    # rounded up: to the millicore, to the byte
    unit = {res.CPU: 1, res.MEMORY: 1000}
    return count, {
        name: math.ceil(amount / count / unit[name]) * unit[name] for name, amount in spare.items()
    }


def _template(pool: NodePool, chunk: ResourceList) -> dict[str, Any]:
    tolerations = [
        {"key": taint["key"], "operator": "Exists", "effect": taint.get("effect", "")}
        for taint in pool.template.taints
    ]
    requests = format_resource_list(chunk)
    spec: dict[str, Any] = {
        "containers": [{"name": "spare", "resources": {"requests": requests}}],
        "nodeSelector": {wk.NODEPOOL: pool.name},
    }
    if tolerations:
        spec["tolerations"] = tolerations
    return {"metadata": {}, "spec": spec}
