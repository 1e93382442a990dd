"""Shrinking a workload document that shows a divergence, without hypothesis.

The differential suite's long mode records every divergence of a run instead of stopping
at the first (hypothesis shrinks only the failure that ends a run). ``shrink`` makes each
recorded document as small as it can while it still shows the same kind of divergence:
it removes one element of a list (a pod, an instance type, an offering, a NodePool, a
requirement, a toleration, ...) or one optional field at a time, keeps every removal
after which the divergence remains, and stops when no single removal keeps it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

Document = dict[str, Any]

# Fields a document stays valid without (the oracle and ``solve`` default them).
OPTIONAL_FIELDS = frozenset(
    {
        "affinity",
        "daemonSets",
        "existingNodes",
        "labels",
        "limits",
        "minValues",
        "nodeSelector",
        "overhead",
        "resources",
        "taints",
        "tolerations",
        "topologySpreadConstraints",
        "weight",
    }
)


def shrink(document: Document, diverges: Callable[[Document], bool]) -> Document:
    """The smallest document reached by single removals for which ``diverges`` holds
    (``document`` itself must diverge). A removal that makes the document invalid counts
    as not diverging (``diverges`` should return False on such input)."""
    current = document
    refused: set[str] = set()  # candidates already found not to diverge
    while True:
        for candidate in _one_smaller(current):
            text = json.dumps(candidate, sort_keys=True)
            if text in refused:
                continue
            if diverges(candidate):
                current = candidate
                break
            refused.add(text)
        else:
            return current


def _one_smaller(document: Document) -> Iterator[Document]:
    """Every document with one element or optional field removed, outer parts first (a
    whole pod before one of its tolerations), so that big cuts are tried early."""
    paths = sorted(_removable(document, ()), key=len)
    for path in paths:
        candidate = copy.deepcopy(document)
        *parents, last = path
        container: Any = candidate
        for step in parents:
            container = container[step]
        del container[last]
        yield candidate


def _removable(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield (*path, index)
            yield from _removable(item, (*path, index))
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in OPTIONAL_FIELDS:
                yield (*path, key)
            yield from _removable(value, (*path, key))
