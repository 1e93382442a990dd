"""Repeated strings of decoded objects are shared, and nothing else changes."""

from __future__ import annotations

import json
from typing import Any

from joiner.kube.sharing import SHARED_MAX_LENGTH, share_strings

DOCUMENT = json.dumps(
    {
        "metadata": {"name": "web-1", "labels": {"app": "web"}},
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


def strings(value: Any) -> list[str]:
    """Every key and string value, depth first."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return [value] if isinstance(value, str) else []


def test_two_decoded_objects_share_every_key_and_short_string() -> None:
    first, second = json.loads(DOCUMENT), json.loads(DOCUMENT)
    assert first["status"]["phase"] is not second["status"]["phase"]  # json.loads copies

    first, second = share_strings(first), share_strings(second)

    assert first == second == json.loads(DOCUMENT)  # the same value, types and all
    pairs = list(zip(strings(first), strings(second), strict=True))
    shared = [a is b for a, b in pairs]
    assert shared == [len(a) <= SHARED_MAX_LENGTH for a, _ in pairs]
    assert shared.count(False) == 1  # the long message only
