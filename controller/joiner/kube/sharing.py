"""One copy of each repeated string in the objects a controller keeps.

``json.loads`` makes a new string for every key and value it reads, so each of 10,000
pods decoded from its own watch event carries its own "metadata", "containers",
"Running", "node.kubernetes.io/not-ready", ... (a list shares keys only within its
page). For a cache that holds every pod, node and NodeClaim of a cluster that is most of
their memory: a pod as kube-apiserver sends it is about 14 KB decoded, 7 KB with its
strings shared (``benchmarks/bench_realplane``, docs/performance.md).
"""

from __future__ import annotations

import sys
from typing import Any

# Longer strings (certificates, scripts, JSON in annotations) seldom repeat; looking them
# up would cost more than it saves.
SHARED_MAX_LENGTH = 64


def share_strings(value: Any) -> Any:
    """The decoded JSON value rebuilt with every key, and every string value of up to
    ``SHARED_MAX_LENGTH`` characters, replaced by the interpreter's one interned copy
    (strings are immutable, so sharing them changes nothing a reader sees). Interned
    strings go when their last user does: nothing outlives the objects that hold it."""
    kind = type(value)
    if kind is dict:
        return {sys.intern(k): share_strings(v) for k, v in value.items()}
    if kind is list:
        return [share_strings(item) for item in value]
    if kind is str and len(value) <= SHARED_MAX_LENGTH:
        return sys.intern(value)
    return value
