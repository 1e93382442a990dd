"""Joiner-only: a NodePool's spare capacity, in the annotation ``joiner.sh/spare-capacity``.

The common case of a CapacityBuffer in one line: ``{cpu: "4", memory: 16Gi}`` keeps that
much room free on the pool's nodes (``joiner.buffers.pools`` expands it to a buffer).
Only ``cpu`` and ``memory``, each a quantity above zero; ``parse_spare`` raises
``AnnotationError`` naming each bad field
(``metadata.annotations[joiner.sh/spare-capacity].cpu``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joiner.api import resources as res
from joiner.api.annotations import (
    AnnotationError,
    annotation,
    field_of,
    load_value,
    resource_list,
)
from joiner.api.resources import ResourceList
from joiner.api.validation import FieldError

SPARE_ANNOTATION = "joiner.sh/spare-capacity"
FIELD = field_of(SPARE_ANNOTATION)
RESOURCES = (res.CPU, res.MEMORY)


def parse_spare(text: str | None) -> ResourceList | None:
    """The spare cpu and memory (milli-units) an annotation's value asks for; None when
    the annotation is absent."""
    if text is None:
        return None
    raw = load_value(SPARE_ANNOTATION, text)
    if not isinstance(raw, Mapping) or not raw:
        message = 'expected a mapping of cpu and/or memory like {cpu: "4", memory: 16Gi}'
        raise AnnotationError([FieldError(FIELD, message)])
    spare, errors = resource_list(FIELD, raw)
    for name in spare:
        if name not in RESOURCES:
            message = "only cpu and memory (for another resource, a CapacityBuffer)"
            errors.append(FieldError(f"{FIELD}.{name}", message))
        elif spare[name] <= 0:
            errors.append(FieldError(f"{FIELD}.{name}", "must be more than 0"))
    if errors:
        raise AnnotationError(errors)
    return spare


def spare_errors(obj: Any) -> list[FieldError]:
    """What is wrong with a NodePool's spare capacity annotation (``joiner validate``)."""
    try:
        parse_spare(annotation(obj, SPARE_ANNOTATION))
    except AnnotationError as error:
        return error.errors
    return []
