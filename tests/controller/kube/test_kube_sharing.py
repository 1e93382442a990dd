"""Repeated strings of decoded objects are shared, and nothing else changes."""

from __future__ import annotations

import json
from typing import Any

from joiner.kube.sharing import SHARED_MAX_LENGTH, shared_loads

DOCUMENT = json.dumps(
    {
        "metadata": {"name": "web-1", "labels": {"app": "web"}, "finalizers": ["a/b"]},
        "spec": {
            "containers": [{"name": "main", "ports": [{"containerPort": 8080}]}],
            "priority": 0,
            "enableServiceLinks": True,
            "overhead": None,
            "weight": 0.5,
        },
        "status": {"phase": "Running", "message": "x" * (SHARED_MAX_LENGTH + 1)},
    }
)


def key_strings(value: Any) -> list[tuple[str, bool]]:
    """Every key and string value of a key, depth first; whether it is a key."""
    if isinstance(value, dict):
        found = []
        for k, v in value.items():
            found.append((k, True))
            found += [(v, False)] if isinstance(v, str) else key_strings(v)
        return found
    if isinstance(value, list):
        return [s for item in value for s in key_strings(item)]
    return []


def test_two_decoded_objects_share_every_key_and_short_string_value() -> None:
    plain = json.loads(DOCUMENT), json.loads(DOCUMENT)
    assert plain[0]["status"]["phase"] is not plain[1]["status"]["phase"]  # json.loads copies

    first, second = shared_loads(DOCUMENT), shared_loads(DOCUMENT.encode())

    assert first == second == plain[0]  # the same value, types and all
    pairs = list(zip(key_strings(first), key_strings(second), strict=True))
    assert [a is b for (a, _), (b, _) in pairs] == [
        is_key or len(a) <= SHARED_MAX_LENGTH for (a, is_key), _ in pairs
    ]
    assert [a for (a, _), (b, _) in pairs if a is not b] == ["x" * (SHARED_MAX_LENGTH + 1)]
