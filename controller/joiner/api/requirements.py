"""The requirements algebra [SPEC 3.6]: label constraints that intersect.

A ``Requirement`` says which nodes satisfy a constraint on one label key: the
values the label may take, written either as a finite set (``In``) or as the
complement of one (``NotIn``, ``Exists``), optionally bounded by ``Gt``/``Lt``
for integer values, plus whether a node *without* the label satisfies it
(``absent``: true for ``NotIn`` and ``DoesNotExist``). ``Gte N`` is ``Gt N-1``
and ``Lte N`` is ``Lt N+1``. Intersection is the logical AND of Kubernetes
node-selector expressions: values intersect and absence is allowed only when
both allow it, so ``Exists`` AND ``NotIn [a]`` still needs the label and
``In [a]`` AND ``In [b]`` is unsatisfiable (not ``DoesNotExist``).
Intersecting two requirements never widens either.

``Requirements`` maps keys to requirements. Two sets of requirements are
*compatible* when every shared key can be satisfied by both (a common value, or
both accept a node without the label), and every custom key the other side
requires is defined on this side (well-known keys, whose values come from
instance types and offerings, may be undefined) [SPEC 3.6].
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from joiner.api import labels as wk
from joiner.identity import IdentityCache

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
GT, LT, GTE, LTE = "Gt", "Lt", "Gte", "Lte"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE)
# Integers as Kubernetes and Go's strconv.Atoi read them (no spaces, underscores or
# non-ASCII digits, which Python's int() would accept).
_INTEGER = re.compile(r"[+-]?[0-9]+")


class RequirementError(ValueError):
    pass


def _as_int(value: str) -> int | None:
    return int(value) if isinstance(value, str) and _INTEGER.fullmatch(value) else None


def _max_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


class Requirement:
    __slots__ = (
        "_has_bounds",
        "absent",
        "complement",
        "greater_than",
        "key",
        "less_than",
        "min_values",
        "values",
    )

    def __init__(
        self,
        key: str,
        complement: bool,
        values: Iterable[str] = (),
        greater_than: int | None = None,
        less_than: int | None = None,
        min_values: int | None = None,
        absent: bool | None = None,
    ) -> None:
        """``absent`` defaults to what the value set alone implies: true for an empty
        finite set (DoesNotExist) and an unbounded, non-empty complement (NotIn)."""
        self.key = key
        self.complement = complement
        self.values = frozenset(values)
        self.greater_than = greater_than
        self.less_than = less_than
        self.min_values = min_values
        self._has_bounds = greater_than is not None or less_than is not None
        if absent is None:
            absent = (not complement and not self.values) or (
                complement and bool(self.values) and not self._has_bounds
            )
        self.absent = absent

    @classmethod
    def new(
        cls, key: str, operator: str, values: Iterable[str] = (), min_values: int | None = None
    ) -> Requirement:
        key = wk.normalize_key(key)
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise RequirementError(f"values of {key!r} must be a list, got {values!r}")
        if min_values is not None and (
            isinstance(min_values, bool) or not isinstance(min_values, int)
        ):
            raise RequirementError(f"minValues of {key!r} must be an integer, got {min_values!r}")
        values = [str(v) for v in values]
        if operator == IN:
            return cls(key, False, values, min_values=min_values, absent=False)
        if operator == NOT_IN:
            # NotIn [] is Exists, as in Karpenter.
            return cls(key, True, values, min_values=min_values, absent=bool(values))
        if operator == EXISTS:
            return cls(key, True, min_values=min_values, absent=False)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, min_values=min_values, absent=True)
        if operator in (GT, LT, GTE, LTE):
            return cls._bounded(key, operator, values, min_values)
        raise RequirementError(f"unknown operator {operator!r} on {key!r}")

    @classmethod
    def _bounded(
        cls, key: str, operator: str, values: list[str], min_values: int | None
    ) -> Requirement:
        bound = _as_int(values[0]) if len(values) == 1 else None
        if bound is None:
            raise RequirementError(
                f"{operator} on {key!r} needs exactly one integer value, got {values!r}"
            )
        greater_than = {GT: bound, GTE: bound - 1}.get(operator)
        less_than = {LT: bound, LTE: bound + 1}.get(operator)
        return cls(key, True, (), greater_than, less_than, min_values, absent=False)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Requirement:
        """From ``{key, operator, values, minValues}``; a malformed entry raises
        RequirementError naming the field."""
        if not isinstance(raw, Mapping):
            raise RequirementError(f"a requirement must be a mapping, got {raw!r}")
        for field in ("key", "operator"):
            if not isinstance(raw.get(field), str) or not raw[field]:
                raise RequirementError(f"requirement {dict(raw)!r} needs a string {field!r}")
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
        """Whether a node whose label has this value satisfies the requirement."""
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
        return self.absent

    def is_empty(self) -> bool:
        """No label value satisfies this (DoesNotExist, or a contradiction)."""
        return not self.complement and not self.values

    def is_unsatisfiable(self) -> bool:
        """No node satisfies this: no value allowed, and the label may not be absent."""
        return self.is_empty() and not self.absent

    @property
    def operator(self) -> str:
        """The operator that best describes the allowed values (bounds read as Exists)."""
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def intersection(self, other: Requirement) -> Requirement:
        greater_than = _max_opt(self.greater_than, other.greater_than)
        less_than = _min_opt(self.less_than, other.less_than)
        min_values = _max_opt(self.min_values, other.min_values)
        absent = self.absent and other.absent
        if greater_than is not None and less_than is not None and greater_than + 1 >= less_than:
            # No integer lies strictly between the bounds.
            return Requirement(self.key, False, min_values=min_values, absent=absent)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        complement = self.complement and other.complement
        if not complement:
            # A finite set absorbs its bounds.
            probe = Requirement(self.key, True, (), greater_than, less_than, absent=False)
            kept = [v for v in values if probe._within_bounds(v)]
            return Requirement(self.key, False, kept, min_values=min_values, absent=absent)
        return Requirement(
            self.key, True, values, greater_than, less_than, min_values, absent=absent
        )

    def any_value(self) -> str | None:
        """A deterministic allowed value for a finite set (the smallest), else None."""
        if self.complement or not self.values:
            return None
        return min(self.values)

    # --- conversion ----------------------------------------------------------

    def to_dicts(self) -> list[dict[str, Any]]:
        """As node selector requirements (ANDed); bounds become Gt/Lt entries, and a
        complement that needs the label gets an Exists entry unless a bound implies it."""
        out: list[dict[str, Any]] = []
        bounded = self.greater_than is not None or self.less_than is not None
        if self.complement:
            if self.values:
                out.append({"key": self.key, "operator": NOT_IN, "values": sorted(self.values)})
            if not self.absent and not bounded:
                out.append({"key": self.key, "operator": EXISTS})
            if self.greater_than is not None:
                out.append({"key": self.key, "operator": GT, "values": [str(self.greater_than)]})
            if self.less_than is not None:
                out.append({"key": self.key, "operator": LT, "values": [str(self.less_than)]})
        elif self.values:
            out.append({"key": self.key, "operator": IN, "values": sorted(self.values)})
        else:
            if not self.absent:
                # Unsatisfiable: the label must exist and must not.
                out.append({"key": self.key, "operator": EXISTS})
            out.append({"key": self.key, "operator": DOES_NOT_EXIST})
        if self.min_values is not None and out:  # out is empty only for "no constraint"
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
            self.absent,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirement) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def describe(self) -> str:
        """As Karpenter prints a requirement: ``key In [a b]``, ``key Exists``, bounds as
        ``>N`` / ``<N``, at most five values."""
        operator = self.operator
        text = f"{self.key} {operator}"
        if operator in (IN, NOT_IN):
            values = sorted(self.values)
            if len(values) > 5:
                values = [*values[:5], f"and {len(values) - 5} others"]
            text += f" [{' '.join(values)}]"
        if self.greater_than is not None:
            text += f" >{self.greater_than}"
        if self.less_than is not None:
            text += f" <{self.less_than}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text

    def __repr__(self) -> str:
        return f"Requirement({self.key}: {_describe(self)})"


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
        """None when every shared key can be satisfied by both sides (a common value, or
        both accept a node without the label), else the first conflict."""
        key = self._first_conflict(other)
        if key is None:
            return None
        # Karpenter's words: "key K, <theirs> not in <ours>"
        return f"key {key}, {other._by_key[key].describe()} not in {self._by_key[key].describe()}"

    def is_intersecting(self, other: Requirements) -> bool:
        """``intersects(other) is None`` without composing a message (hot in scheduling)."""
        mine, theirs = self._by_key, other._by_key
        return all(_jointly_satisfiable(mine[k], theirs[k]) for k in mine.keys() & theirs.keys())

    def _first_conflict(self, other: Requirements) -> str | None:
        mine, theirs = self._by_key, other._by_key
        conflicts = [
            key
            for key in mine.keys() & theirs.keys()
            if not _jointly_satisfiable(mine[key], theirs[key])
        ]
        return min(conflicts, default=None)

    def compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = wk.WELL_KNOWN_LABELS
    ) -> str | None:
        """None when ``other`` can be satisfied here, else why not.

        Custom keys that ``other`` requires must be defined here, unless ``other``
        is satisfied without the label (NotIn / DoesNotExist). Well-known keys may be
        undefined.
        """
        key = self._first_undefined(other, allow_undefined)
        if key is not None:
            return f'label "{key}" does not have known values'
        return self.intersects(other)

    def is_compatible(
        self, other: Requirements, allow_undefined: frozenset[str] = wk.WELL_KNOWN_LABELS
    ) -> bool:
        """``compatible(...) is None`` without composing a message."""
        return self._first_undefined(other, allow_undefined) is None and self.is_intersecting(other)

    def _first_undefined(self, other: Requirements, allow_undefined: frozenset[str]) -> str | None:
        """The first custom key ``other`` needs that is not defined here."""
        missing = [
            key
            for key in other._by_key.keys() - self._by_key.keys()
            if key not in allow_undefined and not other._by_key[key].allows_absence()
        ]
        return min(missing, default=None)

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
        """Node labels implied by the requirements on keys Karpenter may set (not well-known,
        not in a restricted domain): the smallest allowed value of a finite set, and the
        smallest allowed non-negative integer of a complement that needs the label
        (Exists, Gt, Lt; Karpenter picks a random one). NotIn needs no label."""
        out = {}
        for key, requirement in self._by_key.items():
            if wk.is_restricted_node_label(key):
                continue
            value = _label_value(requirement)
            if value is not None:
                out[key] = value
        return out

    def to_dicts(self) -> list[dict[str, Any]]:
        return [d for key in sorted(self._by_key) for d in self._by_key[key].to_dicts()]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._by_key == other._by_key

    def __hash__(self) -> int:
        return hash(frozenset(self._by_key.items()))

    def __repr__(self) -> str:
        return f"Requirements({list(self._by_key.values())!r})"


# Nodes' labels as requirements, by content: every solve reads each existing node's labels
# this way (15% of a simulated day when built afresh each time), and they rarely change.
_NODE_LABELS_KEPT = 20_000
_node_labels: dict[frozenset[tuple[str, str]], Requirements] = {}
# The same, by the identity of the labels dict: a node's labels reach every solve as the
# same dict until the node changes, and keying them by content (a frozenset of 20-odd
# items per node per solve) was 2-3% of a simulated day.
_NODE_LABEL_DICTS_KEPT = 4_096
_node_label_dicts: IdentityCache[Requirements] = IdentityCache(_NODE_LABEL_DICTS_KEPT)


def labels_requirements(labels: Mapping[str, str]) -> Requirements:
    """``Requirements.from_labels(labels)``, shared between callers: never edit it, nor
    ``labels`` once passed (a node's labels as read, e.g. ``ExistingNode.labels``)."""
    found = _node_label_dicts.get((labels,))
    if found is None:
        found = _labels_requirements(labels)
        _node_label_dicts.put((labels,), found)
    return found


def _labels_requirements(labels: Mapping[str, str]) -> Requirements:
    key = frozenset(labels.items())
    found = _node_labels.get(key)
    if found is None:
        if len(_node_labels) >= _NODE_LABELS_KEPT:
            _node_labels.clear()
        found = _node_labels[key] = Requirements.from_labels(labels)
    return found


def node_affinity_required_terms(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def _jointly_satisfiable(a: Requirement, b: Requirement) -> bool:
    """Whether some node satisfies both: a common value, or both accept absence.
    Equivalent to ``not a.intersection(b).is_unsatisfiable()`` without building the
    intersection, because the scheduler asks this for every instance type."""
    if a.absent and b.absent:
        return True
    if a._has_bounds or b._has_bounds:
        if not a.complement or not b.complement:
            finite = a.values if not a.complement else b.values
            return any(a.has(value) and b.has(value) for value in finite)
        return not a.intersection(b).is_unsatisfiable()
    if not a.complement and not b.complement:
        return not a.values.isdisjoint(b.values)
    if not a.complement:
        return not a.values <= b.values
    if not b.complement:
        return not b.values <= a.values
    return True  # two co-finite sets always share a value


def _label_value(requirement: Requirement) -> str | None:
    if not requirement.complement:
        return requirement.any_value()
    if requirement.absent:
        return None  # NotIn: a node without the label satisfies it
    lowest = 0 if requirement.greater_than is None else max(0, requirement.greater_than + 1)
    candidate = lowest
    # Terminates: only finitely many values are excluded.
    while requirement.less_than is None or candidate < requirement.less_than:
        if str(candidate) not in requirement.values:
            return str(candidate)
        candidate += 1
    return None


def _describe(requirement: Requirement) -> str:
    return " & ".join(
        " ".join([entry["operator"], *([str(entry["values"])] if "values" in entry else [])])
        for entry in requirement.to_dicts()
    )
