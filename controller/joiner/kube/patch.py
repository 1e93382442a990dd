"""The three patch types of the API server: JSON merge, strategic merge and JSON patch.

Strategic merge follows the field types of the built-in kinds (``joiner.kube.coreschema``,
from the server's OpenAPI): a list with patch strategy ``merge`` merges by its merge key
(containers by name, conditions by type, ownerReferences by uid, ...) or, without one,
as a set of scalars (finalizers); other lists are replaced. The merged list is ordered
as the server orders it: the patch's items in the patch's order, new ones before the
server's own, and the server's items in their order (or as ``$setElementOrder`` says).
"""

from __future__ import annotations

from typing import Any

from joiner.kube.api import Cause, Invalid
from joiner.kube.coreschema import core_schema
from joiner.kube.jsondata import clone

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


def strategic_merge_patch(target: Any, patch: Any, type_name: str | None) -> Any:
    """Kubernetes strategic merge patch of an object of the built-in type ``type_name``
    (``core.v1.Pod``; None: no list merges)."""
    return _merge_map(target, patch, type_name)


def _field_type(container_type: Any, field: str) -> Any:
    """The type of ``field`` in an object type or the value type of a map."""
    if isinstance(container_type, list):
        return container_type[1] if container_type[0] == "map" else None
    if container_type is None:
        return None
    return core_schema().types.get(container_type, {}).get(field)


def _merge_map(original: Any, patch: Any, container_type: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    original = original if isinstance(original, dict) else {}
    result = dict(original)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith(_SET_ORDER):
            orders[key[len(_SET_ORDER) :]] = value or []
        elif key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE) :]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
        elif value is None:
            result.pop(key, None)
        else:
            merged = _merge_field(_field_type(container_type, key), result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    for field, order in orders.items():
        field_type = _field_type(container_type, field)
        if isinstance(result.get(field), list) and isinstance(field_type, list):
            result[field] = _ordered(result[field], order, original.get(field) or [], field_type[2])
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or [])
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _merge_field(field_type: Any, current: Any, value: Any) -> Any:
    if isinstance(value, list):
        merging = isinstance(field_type, list) and field_type[0] == "list"
        if merging and "merge" in (field_type[3] or "").split(","):
            return _merge_list(current if isinstance(current, list) else [], value, field_type)
        return clone(value)
    if isinstance(value, dict):
        return _merge_map(current, value, field_type)
    return value


def _merge_list(original: list[Any], patch: list[Any], list_type: list[Any]) -> list[Any]:
    merge_key = list_type[2]
    if merge_key is None:  # a set of scalars
        merged = []
        for value in [*original, *patch]:
            if value not in merged:
                merged.append(clone(value))
        return _ordered(merged, patch, original, None)
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [clone(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    result = list(original)
    kept = []
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise Invalid(
                f"strategic merge patch: list item needs the merge key {merge_key!r}",
                [Cause(merge_key, "merge key missing", "FieldValueRequired")],
            )
        position = _position(result, item[merge_key], merge_key)
        if item.get("$patch") == "delete":
            if position is not None:
                result.pop(position)
            continue
        kept.append(item)
        if position is None:
            result.append(_merge_map({}, item, list_type[1]))
        else:
            result[position] = _merge_map(result[position], item, list_type[1])
    return _ordered(result, kept, original, merge_key)


def _position(items: list[Any], value: Any, merge_key: str) -> int | None:
    return next(
        (
            i
            for i, item in enumerate(items)
            if isinstance(item, dict) and item.get(merge_key) == value
        ),
        None,
    )


def _ordered(
    merged: list[Any], order: list[Any], original: list[Any], merge_key: str | None
) -> list[Any]:
    """The server's order of a merged list: the items ``order`` names (the patch's, or
    ``$setElementOrder``) in that order, merged with the server-only items in their
    original order; an item the original does not have comes first."""

    def identity(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    order_ids = [identity(i) for i in order]
    original_ids = [identity(i) for i in original]
    named = sorted(
        (i for i in merged if identity(i) in order_ids), key=lambda i: order_ids.index(identity(i))
    )
    server_only = sorted(
        (i for i in merged if identity(i) not in order_ids),
        key=lambda i: _index_or_end(original_ids, identity(i)),
    )
    result: list[Any] = []
    while named or server_only:
        if not named or (
            server_only
            and identity(named[0]) in original_ids
            and identity(server_only[0]) in original_ids
            and original_ids.index(identity(server_only[0]))
            < original_ids.index(identity(named[0]))
        ):
            result.append(server_only.pop(0))
        else:
            result.append(named.pop(0))
    return result


def _index_or_end(ids: list[Any], value: Any) -> int:
    return ids.index(value) if value in ids else len(ids)


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
