"""Pods, their templates and Nodes that carry the v1alpha5 annotations
``karpenter.sh/do-not-evict`` / ``do-not-consolidate``: v1 honours only
``karpenter.sh/do-not-disrupt``, so they are renamed (and reported)."""

from __future__ import annotations

import copy
from typing import Any

from joiner.convert.common import RENAMED_ANNOTATIONS, source_of
from joiner.convert.report import Note, Outcome

# Where each kind keeps the annotations of its pods (or its own, for Pod and Node).
_ANNOTATIONS_AT: dict[str, tuple[str, ...]] = {
    "Pod": ("metadata",),
    "Node": ("metadata",),
    "Deployment": ("spec", "template", "metadata"),
    "StatefulSet": ("spec", "template", "metadata"),
    "DaemonSet": ("spec", "template", "metadata"),
    "ReplicaSet": ("spec", "template", "metadata"),
    "Job": ("spec", "template", "metadata"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "metadata"),
}


def rename_annotations(obj: Any) -> tuple[Any, list[Note]]:
    """``obj`` (a copy when anything changed) with old annotations renamed, and a note
    for each."""
    where = _ANNOTATIONS_AT.get(obj.get("kind")) if isinstance(obj, dict) else None
    metadata = _at(obj, where) if where else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or not set(annotations) & set(RENAMED_ANNOTATIONS):
        return obj, []
    out = copy.deepcopy(obj)
    target = _at(out, where)["annotations"]  # type: ignore[index]
    notes = []
    for old, new in RENAMED_ANNOTATIONS.items():
        if old in target:
            value = target.pop(old)
            target.setdefault(new, value)
            path = ".".join((*where, "annotations", old))  # type: ignore[misc]
            notes.append(
                Note(
                    source_of(obj),
                    path,
                    Outcome.CONVERTED,
                    f"{source_of(obj)} {path.rsplit('.', 1)[0]}.{new}",
                    "v1 honours only do-not-disrupt",
                )
            )
    return out, notes


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
