"""Old Karpenter manifests to v1: v1alpha5 ``Provisioner`` + v1alpha1 ``AWSNodeTemplate``
(``joiner.convert.v1alpha5``) and v1beta1 ``NodePool`` / ``NodeClaim`` /
``EC2NodeClass`` (``joiner.convert.v1beta1``); the field table is
``joiner.convert.fields``, the report types ``joiner.convert.report``.

    convert_objects(objects, options) -> Conversion

Every input object comes back in order: an old one replaced by its v1 objects (checked
by Joiner's own v1 validation), any other one as it was (pods with the old
do-not-evict / do-not-consolidate annotations or provisioner-name label renamed).
Kubelet settings, on the pool before v1, move to the EC2NodeClass the pool uses when it
is among the objects."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from joiner.api.validation import NOT_CHECKED, validate_object
from joiner.convert import fields as f
from joiner.convert import v1alpha5, v1beta1
from joiner.convert.common import Converted, KubeletMove, Options, source_of
from joiner.convert.fields import is_old_kind
from joiner.convert.report import Conversion, ConversionError, Note, Outcome
from joiner.convert.workloads import rename_old_keys

__all__ = [
    "Conversion",
    "ConversionError",
    "Note",
    "Options",
    "Outcome",
    "conversion_warnings",
    "convert_objects",
    "is_old_kind",
]

_CONVERTERS: dict[tuple[str, str], Callable[[dict[str, Any], Options], Converted]] = {
    f.PROVISIONER: v1alpha5.convert_provisioner,
    f.AWS_NODE_TEMPLATE: v1alpha5.convert_node_template,
    f.NODEPOOL_V1BETA1: v1beta1.convert_nodepool,
    f.NODECLAIM_V1BETA1: v1beta1.convert_nodeclaim,
    f.EC2NODECLASS_V1BETA1: v1beta1.convert_ec2nodeclass,
}


def convert_objects(objects: Iterable[Any], options: Options | None = None) -> Conversion:
    """Convert the old objects among ``objects``; raises ConversionError (naming the
    object and field) when one cannot be converted, before anything is returned."""
    options = options or Options()
    result = Conversion()
    moves: list[KubeletMove] = []
    produced: list[tuple[str, dict[str, Any]]] = []
    for obj in objects:
        if is_old_kind(obj):
            converted = _CONVERTERS[(obj["apiVersion"], obj["kind"])](obj, options)
            produced.extend((source_of(obj), new) for new in converted.objects)
            result.objects.extend(converted.objects)
            result.notes.extend(converted.notes)
            moves.extend(converted.kubelets)
            result.converted += 1
        else:
            renamed, notes = rename_old_keys(obj)
            result.objects.append(renamed)
            result.notes.extend(notes)
    for move in moves:
        result.notes.extend(_place_kubelet(move, result.objects))
    _check_unique(produced)
    for source, new in produced:
        _check(source, new)
    return result


def _check_unique(produced: list[tuple[str, dict[str, Any]]]) -> None:
    """Two old objects that become v1 objects of one kind and name (a Provisioner's
    inline provider and an AWSNodeTemplate named like it) cannot both be written."""
    first: dict[str, str] = {}
    for source, obj in produced:
        name = source_of(obj)
        if name in first:
            raise ConversionError(
                source,
                "metadata.name",
                f"converts to {name}, as {first[name]} does; rename one of them",
            )
        first[name] = source


def _place_kubelet(move: KubeletMove, objects: list[Any]) -> list[Note]:
    """Put a pool's kubelet settings on its EC2NodeClass; a class that two pools give
    different settings cannot hold both."""
    target = next(
        (
            o
            for o in objects
            if (o.get("apiVersion"), o.get("kind")) == f.EC2NODECLASS
            and o["metadata"].get("name") == move.node_class
        ),
        None,
    )
    if target is None:
        return [
            Note(
                move.source,
                move.path,
                Outcome.NO_EQUIVALENT,
                message=f"EC2NodeClass {move.node_class} is not among the input: add "
                f"spec.kubelet {json.dumps(move.kubelet)} to it by hand",
            )
        ]
    current = target["spec"].get("kubelet")
    if current is not None and current != move.kubelet:
        raise ConversionError(
            move.source,
            move.path,
            f"EC2NodeClass {move.node_class} already gets other kubelet settings from "
            "another pool; v1 keeps them on the class, so give each setting its own "
            "AWSNodeTemplate / EC2NodeClass, then convert again",
        )
    target["spec"]["kubelet"] = move.kubelet
    return []


def _check(source: str, obj: dict[str, Any]) -> None:
    """Joiner's own v1 validation of a converted object: what the API server would refuse."""
    errors = [e for e in validate_object(obj) if e.message != NOT_CHECKED]
    if errors:
        raise ConversionError(
            source,
            "",
            f"converted to {source_of(obj)}, which v1 refuses: {errors[0]}",
        )


def conversion_warnings(result: Conversion) -> list[str]:
    """One line per converted object naming its old fields, for the commands that take
    old kinds by converting them (``joiner validate``, ``joiner simulate``)."""
    fields: dict[str, list[str]] = {}
    for note in result.notes:
        paths = fields.setdefault(note.source, [])
        if note.path not in paths:
            paths.append(note.path)
    return [
        f"{source}: converted to v1 (joiner convert shows how): {', '.join(paths)}"
        for source, paths in fields.items()
    ]
