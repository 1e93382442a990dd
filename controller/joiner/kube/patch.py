"""The three patch types of the API server: JSON merge, strategic merge and JSON patch.

Strategic merge knows the list merge keys of the fields the controller and the
simulator write (containers by name, conditions by type, ownerReferences by uid,
finalizers as a merged set, ...); other lists are replaced, as the API server
does for lists without a patch strategy.
"""

from __future__ import annotations

from typing import Any

from joiner.kube.api import Cause, Invalid
from joiner.kube.jsondata import clone

# Lists merged by a key field (patchStrategy=merge, patchMergeKey=...).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "ports": "containerPort",
    "conditions": "type",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "addresses": "type",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars merged as ordered sets.
MERGED_PRIMITIVE_LISTS = frozenset({"finalizers"})

_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_SET_ORDER = "$setElementOrder/"


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Kubernetes strategic merge patch for the merge keys in MERGE_KEYS."""
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key == "$patch" or key.startswith(_SET_ORDER) or key == "$retainKeys":
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE) :]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
            continue
        merged = _merge_field(key, result.get(key), value)
        if merged is None:
            result.pop(key, None)
        else:
            result[key] = merged
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or [])
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _merge_field(key: str, current: Any, value: Any) -> Any:
    if isinstance(value, list):
        if key in MERGE_KEYS:
            return _merge_keyed_list(current or [], value, MERGE_KEYS[key])
        if key in MERGED_PRIMITIVE_LISTS:
            merged = list(current or [])
            merged += [v for v in value if v not in merged]
            return merged
        return clone(value)
    if isinstance(value, dict):
        return strategic_merge_patch(current, value)
    return value


def _merge_keyed_list(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [clone(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    result = list(current)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise Invalid(
                f"strategic merge patch: list item needs the merge key {merge_key!r}",
                [Cause(merge_key, "merge key missing", "FieldValueRequired")],
            )
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                result.pop(position)
        elif position is None:
            result.append(strategic_merge_patch({}, item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _patch_error(message: str) -> Invalid:
    """A patch that cannot apply is a 422 on the field ``patch``, as the API server says."""
    return Invalid(message, [Cause("patch", message)])


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        node = _child(node, part)
    return node, parts[-1]


def _child(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        if part not in node:
            raise _patch_error(f"path segment {part!r} does not exist")
        return node[part]
    if isinstance(node, list):
        return node[_index(node, part, allow_end=False)]
    raise _patch_error(f"cannot descend into a scalar at {part!r}")


def _index(node: list[Any], part: str, allow_end: bool) -> int:
    if part == "-" and allow_end:
        return len(node)
    if not part.isdigit():
        raise _patch_error(f"invalid array index {part!r}")
    index = int(part)
    limit = len(node) if allow_end else len(node) - 1
    if index > limit:
        raise _patch_error(f"array index {index} out of range")
    return index


def _get(doc: Any, path: str) -> Any:
    node = doc
    for part in _pointer(path):
        node = _child(node, part)
    return node


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise _patch_error(f"cannot add to a scalar at {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise _patch_error("cannot remove the whole document")
    parent, last = _parent(doc, parts)
    if isinstance(parent, dict):
        if last not in parent:
            raise _patch_error(f"cannot remove {path!r}: it does not exist")
        del parent[last]
    elif isinstance(parent, list):
        parent.pop(_index(parent, last, allow_end=False))
    else:
        raise _patch_error(f"cannot remove from a scalar at {path!r}")
    return doc


def json_patch(target: Any, operations: list[dict[str, Any]]) -> Any:
    """RFC 6902 (add, remove, replace, move, copy, test) on a copy of target."""
    if not isinstance(operations, list):
        raise _patch_error("a JSON patch is a list of operations")
    doc = clone(target)
    for op in operations:
        if not isinstance(op, dict) or "path" not in op:
            raise _patch_error(f"invalid JSON patch operation {op!r}")
        doc = _apply_operation(doc, op)
    return doc


def _apply_operation(doc: Any, op: dict[str, Any]) -> Any:
    kind, path = op.get("op"), op["path"]
    if kind == "add":
        return _add(doc, path, clone(op.get("value")))
    if kind == "remove":
        return _remove(doc, path)
    if kind == "replace":
        _get(doc, path)  # replace needs an existing target
        if not _pointer(path):
            return clone(op.get("value"))
        return _add(_remove(doc, path), path, clone(op.get("value")))
    if kind in ("move", "copy"):
        value = clone(_get(doc, op["from"]))
        if kind == "move":
            doc = _remove(doc, op["from"])
        return _add(doc, path, value)
    if kind == "test":
        actual = _get(doc, path)
        if actual != op.get("value"):
            raise _patch_error(f"test failed at {path!r}: value is {actual!r}")
        return doc
    raise _patch_error(f"unknown JSON patch operation {kind!r}")
