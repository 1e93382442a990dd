"""A NodePool's spare capacity as a buffer [joiner.buffers.pools]: the chunk shape (equal
chunks of at most 1 CPU and 4 GiB, as few as that allows), pinned to the pool, and a bad
annotation named field by field [joiner.api.sparecapacity]."""

from __future__ import annotations

from typing import Any

import pytest
from joiner import testing
from joiner.api.nodepool import NodePool
from joiner.buffers.pools import expand, pool_key, pool_of
from joiner.buffers.resolution import Resolved, Unresolved

FIELD = "metadata.annotations[joiner.sh/spare-capacity]"


def _pool(spare: str | None, **overrides: Any) -> NodePool:
    raw = testing.nodepool(**overrides)
    raw["metadata"]["generation"] = 3
    if spare is not None:
        raw["metadata"]["annotations"] = {"joiner.sh/spare-capacity": spare}
    return NodePool.from_dict(raw)


@pytest.mark.parametrize(
    ("spare", "count", "requests"),
    [
        ('{cpu: "4", memory: 16Gi}', 4, {"cpu": "1", "memory": "4Gi"}),
        ('{cpu: "2", memory: 32Gi}', 8, {"cpu": "250m", "memory": "4Gi"}),
        ('{"cpu": "1500m"}', 2, {"cpu": "750m"}),  # JSON too
        ("{memory: 10Gi}", 3, {"memory": "3579139414"}),  # rounded up to the byte
        ('{cpu: "500m", memory: 1Gi}', 1, {"cpu": "500m", "memory": "1Gi"}),
    ],
)
def test_the_chunk_shape(spare: str, count: int, requests: dict[str, str]) -> None:
    resolved = expand(_pool(spare))
    assert isinstance(resolved, Resolved)
    assert (resolved.replicas, resolved.buffer.key) == (count, "NodePool/default")
    assert resolved.template == {
        "metadata": {},
        "spec": {
            "containers": [{"name": "spare", "resources": {"requests": requests}}],
            "nodeSelector": {"karpenter.sh/nodepool": "default"},
        },
    }


def test_no_annotation_no_buffer_and_the_key_names_the_pool() -> None:
    assert expand(_pool(None)) is None
    assert (pool_key("gpu"), pool_of("NodePool/gpu"), pool_of("default/web")) == (
        "NodePool/gpu",
        "gpu",
        None,
    )


@pytest.mark.parametrize(
    ("spare", "message"),
    [
        (
            "[cpu]",
            f'{FIELD}: expected a mapping of cpu and/or memory like {{cpu: "4", memory: 16Gi}}',
        ),
        ("{}", f'{FIELD}: expected a mapping of cpu and/or memory like {{cpu: "4", memory: 16Gi}}'),
        ("{cpu: -1}", f"{FIELD}.cpu: must be more than 0"),
        (
            "{cpu: 2, pods: 3}",
            f"{FIELD}.pods: only cpu and memory (for another resource, a CapacityBuffer)",
        ),
        (
            "{memory: much}",
            f"{FIELD}.memory: invalid value 'much': expected a quantity like 500m, 2, 4Gi or 100G",
        ),
    ],
)
def test_a_bad_annotation_holds_nothing_and_names_the_field(spare: str, message: str) -> None:
    resolved = expand(_pool(spare))
    assert isinstance(resolved, Unresolved)
    assert (resolved.reason, resolved.message) == ("InvalidSpareCapacity", message)
