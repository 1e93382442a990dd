"""Joiner-only annotations: settings upstream's API has no field for, read from an
annotation so a manifest stays valid (and means the same) with upstream's CRDs, Karpenter
and Cluster Autoscaler, which ignore it. Their values are small YAML (or JSON) documents;
a bad one raises ``AnnotationError`` with one ``FieldError`` per problem, each naming its
field as ``metadata.annotations[NAME]...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joiner import yamlio
from joiner.api.quantity import QuantityError
from joiner.api.resources import ResourceList, milli
from joiner.api.schema import QUANTITY_HINT
from joiner.api.validation import FieldError


class AnnotationError(ValueError):
    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(str(error) for error in errors))
        self.errors = errors


def field_of(name: str) -> str:
    """``metadata.annotations[joiner.sh/capacity-windows]``."""
    return f"metadata.annotations[{name}]"


def annotation(obj: Any, name: str) -> str | None:
    """An object's annotation (a manifest as written: anything may be missing)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(name) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else None


def load_value(name: str, text: str) -> Any:
    try:
        return yamlio.load(text)
    except yamlio.YAMLInputError as error:
        raise AnnotationError([FieldError(field_of(name), f"not YAML: {error}")]) from None


def resource_list(path: str, raw: Any) -> tuple[ResourceList, list[FieldError]]:
    """A resource list as written (``{cpu: "2", memory: 4Gi}``), with an error naming each
    bad entry as the API server would (``...limits.cpu``)."""
    if not isinstance(raw, Mapping):
        return {}, [FieldError(path, "expected a mapping of resource names to quantities")]
    parsed, errors = {}, []
    for name, value in raw.items():
        try:
            parsed[str(name)] = milli(value)
        except (QuantityError, TypeError):
            errors.append(FieldError(f"{path}.{name}", f"invalid value {value!r}: {QUANTITY_HINT}"))
    return parsed, errors
