"""Pods, their templates and Nodes written for v1alpha5: the annotations
``karpenter.sh/do-not-evict`` / ``do-not-consolidate`` (v1 honours only
``karpenter.sh/do-not-disrupt``) and the label ``karpenter.sh/provisioner-name`` in node
selectors and node affinity (v1 nodes carry ``karpenter.sh/nodepool``) are renamed, and
each rename reported."""

from __future__ import annotations

import copy
from typing import Any

from joiner.convert.common import RENAMED_ANNOTATIONS, RENAMED_LABELS, source_of
from joiner.convert.report import Note, Outcome

# Where each kind keeps its pod template (the object itself for Pod; Node has metadata only).
_POD_AT: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Node": (),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
_NODE_AFFINITY = "spec.affinity.nodeAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def rename_old_keys(obj: Any) -> tuple[Any, list[Note]]:
    """``obj`` (a copy when anything changed) with the old keys renamed, and a note for
    each."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    where = _POD_AT.get(kind) if isinstance(kind, str) else None
    if where is None:
        return obj, []
    out = copy.deepcopy(obj)
    pod = _at(out, where)
    if not isinstance(pod, dict):
        return obj, []
    prefix = ".".join(where)
    renames = _renamed_keys(pod.get("metadata"), "annotations", RENAMED_ANNOTATIONS)
    renames += _renamed_keys(pod.get("spec"), "nodeSelector", RENAMED_LABELS, "spec")
    renames += _renamed_affinity_keys(pod.get("spec"))
    if not renames:
        return obj, []
    source = source_of(obj)
    notes = [
        Note(
            source,
            _joined(prefix, old),
            Outcome.CONVERTED,
            f"{source} {_joined(prefix, new)}",
            "renamed: v1 knows only the new key",
        )
        for old, new in renames
    ]
    return out, notes


def _renamed_keys(
    parent: Any, field: str, renames: dict[str, str], at: str = "metadata"
) -> list[tuple[str, str]]:
    """Rename the keys of the map ``parent[field]`` in place; (old path, new path) each."""
    values = parent.get(field) if isinstance(parent, dict) else None
    if not isinstance(values, dict):
        return []
    done = []
    for old, new in renames.items():
        if old in values:
            values.setdefault(new, values.pop(old))
            done.append((f"{at}.{field}.{old}", f"{at}.{field}.{new}"))
    return done


def _renamed_affinity_keys(spec: Any) -> list[tuple[str, str]]:
    """Rename the old label keys of the node affinity's expressions, required and
    preferred, in place."""
    affinity = _at(spec, ("affinity", "nodeAffinity"))
    if not isinstance(affinity, dict):
        return []
    required = _at(affinity, (_REQUIRED, "nodeSelectorTerms"))
    terms = [
        (f"{_NODE_AFFINITY}.{_REQUIRED}.nodeSelectorTerms[{i}]", term)
        for i, term in enumerate(required if isinstance(required, list) else [])
    ]
    preferred = affinity.get(_PREFERRED)
    terms += [
        (f"{_NODE_AFFINITY}.{_PREFERRED}[{i}].preference", _at(weighted, ("preference",)))
        for i, weighted in enumerate(preferred if isinstance(preferred, list) else [])
    ]
    done = []
    for at, term in terms:
        expressions = term.get("matchExpressions") if isinstance(term, dict) else None
        for e, expression in enumerate(expressions if isinstance(expressions, list) else []):
            key = expression.get("key") if isinstance(expression, dict) else None
            if key in RENAMED_LABELS:
                expression["key"] = RENAMED_LABELS[key]
                path = f"{at}.matchExpressions[{e}].key"
                done.append((path, path))
    return done


def _joined(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if prefix else path


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
