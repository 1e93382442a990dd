"""The requirements algebra [SPEC 3.6]: label constraints that intersect.

A ``Requirement`` is a set of allowed values for one label key, written either
as a finite set (``In``; empty means ``DoesNotExist``) or as the complement of
one (``NotIn``; empty complement means ``Exists``), optionally bounded by
``Gt``/``Lt`` for integer values. ``Gte N`` is ``Gt N-1`` and ``Lte N`` is
``Lt N+1``. Intersecting two requirements never widens either.

``Requirements`` maps keys to requirements. Two sets of requirements are
*compatible* when every shared key has a value both allow, and every custom key
the other side requires is defined on this side (well-known keys, whose values
come from instance types and offerings, may be undefined) [SPEC 3.6].
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from joiner.api import labels as wk

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
GT, LT, GTE, LTE = "Gt", "Lt", "Gte", "Lte"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE)
_NEGATIVE = (NOT_IN, DOES_NOT_EXIST)


class RequirementError(ValueError):
    pass


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _max_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


class Requirement:
    __slots__ = ("complement", "greater_than", "key", "less_than", "min_values", "values")

    def __init__(
        self,
        key: str,
        complement: bool,
        values: Iterable[str] = (),
        greater_than: int | None = None,
        less_than: int | None = None,
        min_values: int | None = None,
    ) -> None:
        self.key = key
        self.complement = complement
        self.values = frozenset(values)
        self.greater_than = greater_than
        self.less_than = less_than
        self.min_values = min_values

    @classmethod
    def new(
        cls, key: str, operator: str, values: Iterable[str] = (), min_values: int | None = None
    ) -> Requirement:
        key = wk.normalize_key(key)
        values = [str(v) for v in values]
        if operator == IN:
            return cls(key, False, values, min_values=min_values)
        if operator == NOT_IN:
            return cls(key, True, values, min_values=min_values)
        if operator == EXISTS:
            return cls(key, True, min_values=min_values)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, min_values=min_values)
        if operator in (GT, LT, GTE, LTE):
            bound = _as_int(values[0]) if len(values) == 1 else None
            if bound is None:
                raise RequirementError(f"{operator} on {key!r} needs exactly one integer value")
            if operator == GT:
                return cls(key, True, greater_than=bound, min_values=min_values)
            if operator == GTE:
                return cls(key, True, greater_than=bound - 1, min_values=min_values)
            if operator == LT:
                return cls(key, True, less_than=bound, min_values=min_values)
            return cls(key, True, less_than=bound + 1, min_values=min_values)
        raise RequirementError(f"unknown operator {operator!r} on {key!r}")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Requirement:
        return cls.new(raw["key"], raw["operator"], raw.get("values") or (), raw.get("minValues"))

    # --- set semantics -------------------------------------------------------

    def _within_bounds(self, value: str) -> bool:
        if self.greater_than is None and self.less_than is None:
            return True
        number = _as_int(value)
        if number is None:
            return False
        if self.greater_than is not None and number <= self.greater_than:
            return False
        return self.less_than is None or number < self.less_than

    def has(self, value: str) -> bool:
        if self.complement:
            return value not in self.values and self._within_bounds(value)
        return value in self.values and self._within_bounds(value)

    def __len__(self) -> int:
        """Number of allowed values; complements count as (practically) infinite."""
        if self.complement:
            return sys.maxsize - len(self.values)
        return len(self.values)

    def allows_absence(self) -> bool:
        """Whether a node without the label satisfies this (NotIn, DoesNotExist)."""
        unbounded = self.greater_than is None and self.less_than is None
        return (not self.complement and not self.values) or (
            self.complement and bool(self.values) and unbounded
        )

    def is_empty(self) -> bool:
        return not self.complement and not self.values

    @property
    def operator(self) -> str:
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def intersection(self, other: Requirement) -> Requirement:
        greater_than = _max_opt(self.greater_than, other.greater_than)
        less_than = _min_opt(self.less_than, other.less_than)
        min_values = _max_opt(self.min_values, other.min_values)
        if greater_than is not None and less_than is not None and greater_than + 1 >= less_than:
            return Requirement(self.key, False, min_values=min_values)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        complement = self.complement and other.complement
        result = Requirement(self.key, complement, values, greater_than, less_than, min_values)
        if not complement:
            # A finite set absorbs its bounds.
            kept = [v for v in values if result._within_bounds(v)]
            result = Requirement(self.key, False, kept, min_values=min_values)
        return result

    def any_value(self) -> str | None:
        """A deterministic allowed value for a finite set (the smallest), else None."""
        if self.complement or not self.values:
            return None
        return min(self.values)

    # --- conversion ----------------------------------------------------------

    def to_dicts(self) -> list[dict[str, Any]]:
        """As node selector requirements; bounds become Gt/Lt entries."""
        out: list[dict[str, Any]] = []
        if self.complement:
            if self.values or (self.greater_than is None and self.less_than is None):
                entry = {"key": self.key, "operator": self.operator}
                if self.values:
                    entry["values"] = sorted(self.values)
                out.append(entry)
            if self.greater_than is not None:
                out.append({"key": self.key, "operator": GT, "values": [str(self.greater_than)]})
            if self.less_than is not None:
                out.append({"key": self.key, "operator": LT, "values": [str(self.less_than)]})
        else:
            entry = {"key": self.key, "operator": self.operator}
            if self.values:
                entry["values"] = sorted(self.values)
            out.append(entry)
        if self.min_values is not None:
            out[0]["minValues"] = self.min_values
        return out

    def _identity(self) -> tuple:
        return (
            self.key,
            self.complement,
            self.values,
            self.greater_than,
            self.less_than,
            self.min_values,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirement) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        parts = [f"{d['operator']} {d.get('values', '')}".strip() for d in self.to_dicts()]
        return f"Requirement({self.key}: {' & '.join(parts)})"


class Requirements(Mapping[str, Requirement]):
    """Requirements keyed by label; adding a key twice intersects."""

    __slots__ = ("_by_key",)

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self._by_key: dict[str, Requirement] = {}
        self.add(*requirements)

    # --- construction --------------------------------------------------------

    @classmethod
    def from_node_selector_requirements(
        cls, raw: Iterable[Mapping[str, Any]] | None
    ) -> Requirements:
        """From ``[{key, operator, values, minValues}]`` (NodePool, NodeClaim, node affinity)."""
        return cls(Requirement.from_dict(r) for r in raw or ())

    @classmethod
    def from_labels(cls, labels: Mapping[str, str] | None) -> Requirements:
        return cls(Requirement.new(k, IN, [v]) for k, v in (labels or {}).items())

    @classmethod
    def for_pod(cls, pod: Mapping[str, Any], required_term: int = 0) -> Requirements:
        """nodeSelector plus one term of required node affinity (the first by default;
        the scheduler tries the others when relaxing)."""
        spec = pod.get("spec") or {}
        requirements = cls.from_labels(spec.get("nodeSelector"))
        terms = node_affinity_required_terms(pod)
        if terms and required_term < len(terms):
            requirements.add(
                *cls.from_node_selector_requirements(
                    terms[required_term].get("matchExpressions")
                ).values()
            )
        return requirements

    def copy(self) -> Requirements:
        clone = Requirements()
        clone._by_key = dict(self._by_key)
        return clone

    # --- mapping -------------------------------------------------------------

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def get_requirement(self, key: str) -> Requirement:
        """The requirement on ``key``; an undefined key allows anything (Exists)."""
        found = self._by_key.get(key)
        return found if found is not None else Requirement(key, True)

    # --- algebra -------------------------------------------------------------

    def add(self, *requirements: Requirement) -> Requirements:
        for requirement in requirements:
            existing = self._by_key.get(requirement.key)
            self._by_key[requirement.key] = (
                requirement if existing is None else existing.intersection(requirement)
            )
        return self

    def intersection(self, other: Requirements) -> Requirements:
        return self.copy().add(*other.values())

    def intersects(self, other: Requirements) -> str | None:
        """None when every shared key has a common value, else the first conflict."""
        for key in sorted(self._by_key.keys() & other._by_key.keys()):
            mine, theirs = self._by_key[key], other._by_key[key]
            if len(mine.intersection(theirs)) == 0:
                if theirs.operator in _NEGATIVE and mine.operator in _NEGATIVE:
                    continue
                return f"key {key}: {_describe(theirs)} not in {_describe(mine)}"
        return None

    def compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = wk.WELL_KNOWN_LABELS
    ) -> str | None:
        """None when ``other`` can be satisfied here, else why not.

        Custom keys that ``other`` requires must be defined here, unless ``other``
        only excludes values (NotIn / DoesNotExist). Well-known keys may be undefined.
        """
        for key in sorted(other._by_key.keys() - self._by_key.keys()):
            if key in allow_undefined or other._by_key[key].operator in _NEGATIVE:
                continue
            return f"label {key!r} does not have known values"
        return self.intersects(other)

    def is_compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = wk.WELL_KNOWN_LABELS
    ) -> bool:
        return self.compatible(other, allow_undefined) is None

    def satisfied_by_labels(self, node_labels: Mapping[str, str]) -> bool:
        """True when a node with exactly these labels meets every requirement
        (Kubernetes semantics: a missing label satisfies only NotIn and DoesNotExist)."""
        for key, requirement in self._by_key.items():
            value = node_labels.get(key)
            if value is None:
                if not requirement.allows_absence():
                    return False
            elif not requirement.has(value):
                return False
        return True

    def labels(self) -> dict[str, str]:
        """Node labels implied by finite, non-well-known requirements (smallest value)."""
        out = {}
        for key, requirement in self._by_key.items():
            if key in wk.WELL_KNOWN_LABELS or key == wk.HOSTNAME:
                continue
            value = requirement.any_value()
            if value is not None:
                out[key] = value
        return out

    def to_dicts(self) -> list[dict[str, Any]]:
        return [d for key in sorted(self._by_key) for d in self._by_key[key].to_dicts()]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._by_key == other._by_key

    def __hash__(self) -> int:  # pragma: no cover - mappings are not usually hashed
        return hash(frozenset(self._by_key.items()))

    def __repr__(self) -> str:
        return f"Requirements({list(self._by_key.values())!r})"


def node_affinity_required_terms(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def _describe(requirement: Requirement) -> str:
    d = requirement.to_dicts()
    return " & ".join(f"{x['operator']} {x.get('values', [])}" for x in d)
