"""Building blocks of the models' Kubernetes dict form, written once."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any


def manifest(
    api_version: str,
    kind: str,
    metadata: dict[str, Any],
    spec: dict[str, Any],
    status: dict[str, Any] | None,
) -> dict[str, Any]:
    """An object in Kubernetes form; an empty status is left out."""
    out: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": copy.deepcopy(metadata),
        "spec": spec,
    }
    if status:
        out["status"] = copy.deepcopy(status)
    return out


def stable_hash(value: Any) -> str:
    """A short hash of a JSON value that does not depend on key order (drift hashes)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def optional_fields(spec: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Add the fields that are set (not None, not empty), deep-copied, to ``spec``."""
    for key, value in fields.items():
        if value is not None and value != [] and value != {}:
            spec[key] = copy.deepcopy(value)
    return spec
