"""One copy of each repeated string in the objects a controller keeps.

``json.loads`` makes a new string for every key and value it reads, so each of 10,000
pods decoded from its own watch event carries its own "metadata", "containers",
"Running", "node.kubernetes.io/not-ready", ... (a list shares keys only within its
page). For a cache that holds every pod, node and NodeClaim of a cluster that is most of
their memory: a pod as kube-apiserver sends it is about 14 KB decoded, 7 KB with its
strings shared (docs/performance.md, "Where the memory goes").
"""

from __future__ import annotations

import json
import sys
from typing import Any

# Longer strings (certificates, scripts, JSON in annotations) seldom repeat; looking them
# up would cost more than it saves.
SHARED_MAX_LENGTH = 64


def shared_loads(text: str | bytes) -> Any:
    """``json.loads``, with every key, and every string value of a key of up to
    ``SHARED_MAX_LENGTH`` characters, the interpreter's one interned copy (strings are
    immutable: sharing them changes nothing a reader sees). Done as each object is
    decoded, which costs a fifth of decoding; walking the result afterwards costs as
    much again as decoding. Interned strings go with their last user: nothing outlives
    the objects that hold it."""
    return json.loads(text, object_pairs_hook=_shared_object)


def _shared_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    intern = sys.intern
    return {
        intern(key): intern(value)
        if value.__class__ is str and len(value) <= SHARED_MAX_LENGTH
        else value
        for key, value in pairs
    }
