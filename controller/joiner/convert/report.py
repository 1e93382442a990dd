"""What a conversion did: one ``Note`` per old field (converted, added, or with no v1
equivalent and what to do instead), and the error raised for input that cannot be
converted at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Outcome(Enum):
    CONVERTED = "converted"  # the field's value is in the v1 object, at ``target``
    ADDED = "added"  # the converter wrote a v1 field the old object implied (a default)
    NO_EQUIVALENT = "no equivalent"  # v1 has nothing for it; ``message`` says what to do


@dataclass(frozen=True)
class Note:
    """One field of one old object. ``source`` is ``Kind/name`` of the old object, ``path``
    the field in it (``spec.ttlSecondsAfterEmpty``); ``target`` is ``Kind/name field`` of
    the v1 object, when there is one."""

    source: str
    path: str
    outcome: Outcome
    target: str | None = None
    message: str = ""

    def __str__(self) -> str:
        line = f"{self.source}: {self.path}: {self.outcome.value}"
        if self.target:
            line += f" -> {self.target}"
        return f"{line}: {self.message}" if self.message else line


class ConversionError(ValueError):
    """Old input that cannot be converted; ``path`` names the field (``source``: the
    object)."""

    def __init__(self, source: str, path: str, message: str) -> None:
        super().__init__(f"{source}: {path}: {message}" if path else f"{source}: {message}")
        self.source, self.path, self.message = source, path, message


@dataclass
class Conversion:
    """The result: every input object in order (old kinds replaced by their v1 objects,
    other objects as they were, with old pod annotations renamed), and the notes."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    converted: int = 0  # how many old objects were converted
