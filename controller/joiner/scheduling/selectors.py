"""Kubernetes label selectors (``matchLabels`` + ``matchExpressions``) compiled once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# (key, operator, values): the canonical, hashable form of a selector.
Expression = tuple[str, str, frozenset[str]]


class SelectorError(ValueError):
    pass


class Selector:
    """A label selector; ``None`` (no selector) matches nothing, ``{}`` matches everything."""

    __slots__ = ("expressions", "matches_nothing")

    def __init__(self, expressions: tuple[Expression, ...], matches_nothing: bool = False):
        self.expressions = expressions
        self.matches_nothing = matches_nothing

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any] | None, extra: Mapping[str, str] | None = None
    ) -> Selector:
        """``extra`` adds ``key In [value]`` terms (``matchLabelKeys``)."""
        if raw is None:
            return cls((), matches_nothing=True)
        expressions = [
            (k, "In", frozenset([str(v)])) for k, v in (raw.get("matchLabels") or {}).items()
        ]
        for expression in raw.get("matchExpressions") or ():
            operator = expression.get("operator")
            if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
                raise SelectorError(f"labelSelector operator {operator!r} is not supported")
            values = frozenset(str(v) for v in expression.get("values") or ())
            expressions.append((expression.get("key", ""), operator, values))
        expressions.extend((k, "In", frozenset([v])) for k, v in (extra or {}).items())
        return cls(tuple(sorted(expressions, key=lambda e: (e[0], e[1], sorted(e[2])))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        for key, operator, values in self.expressions:
            value = labels.get(key)
            if operator == "In":
                if value is None or value not in values:
                    return False
            elif operator == "NotIn":
                if value is not None and value in values:
                    return False
            elif operator == "Exists":
                if value is None:
                    return False
            elif value is not None:  # DoesNotExist
                return False
        return True

    def identity(self) -> tuple:
        return (
            self.matches_nothing,
            tuple((k, o, tuple(sorted(v))) for k, o, v in self.expressions),
        )
