"""Label and field selectors with the API server's syntax and matching rules.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``,
``a``, ``!a``, ``a>3``, ``a<3``, comma-separated (AND). The structured form
(``matchLabels`` / ``matchExpressions`` of a LabelSelector) converts to the same
matcher. Field selectors: ``path=value``, ``path==value``, ``path!=value`` over the
fields the API server supports for each kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joiner.kube.api import BadRequest

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET_TERM = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*(?:(notin|in)\s*\(([^)]*)\)\s*)?$")
_CMP_TERM = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|=|!=|<|>)\s*([^\s!=<>(),]*)\s*$")


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            actual, bound = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return actual > bound if self.operator == "Gt" else actual < bound


class LabelSelector:
    """A conjunction of label requirements; the empty selector matches everything."""

    def __init__(self, requirements: list[LabelRequirement]) -> None:
        self.requirements = requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside an ``in (...)`` value set."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return [t for t in terms if t.strip()]


def _check_key(key: str, selector: str) -> None:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise BadRequest(f'unable to parse requirement: invalid label key "{key}" in "{selector}"')


def _check_value(value: str, selector: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise BadRequest(f'unable to parse requirement: invalid label value "{value}" ({selector})')


def _parse_term(term: str, selector: str) -> LabelRequirement:
    cmp = _CMP_TERM.match(term)
    if cmp:
        key, op, value = cmp.groups()
        _check_key(key, selector)
        if op in ("<", ">"):
            if not re.fullmatch(r"-?\d+", value):
                raise BadRequest(f'unable to parse requirement: "{value}" is not an integer')
            return LabelRequirement(key, "Gt" if op == ">" else "Lt", (value,))
        _check_value(value, selector)
        return LabelRequirement(key, "NotIn" if op == "!=" else "In", (value,))
    set_term = _SET_TERM.match(term)
    if not set_term:
        raise BadRequest(f'unable to parse label selector "{selector}" at "{term.strip()}"')
    negated, key, op, values = set_term.groups()
    _check_key(key, selector)
    if op is None:
        return LabelRequirement(key, "DoesNotExist" if negated else "Exists")
    if negated:
        raise BadRequest(f'unable to parse label selector "{selector}": "!" with "{op}"')
    parsed = tuple(v.strip() for v in values.split(",") if v.strip())
    for value in parsed:
        _check_value(value, selector)
    return LabelRequirement(key, "NotIn" if op == "notin" else "In", parsed)


def parse_label_selector(selector: str | None) -> LabelSelector:
    """Parse the string form; raises BadRequest (400) naming the bad term."""
    if not selector or not selector.strip():
        return LabelSelector([])
    return LabelSelector([_parse_term(t, selector) for t in _split_terms(selector)])


def selector_from_label_selector(spec: Mapping[str, Any] | None) -> LabelSelector:
    """The structured LabelSelector (matchLabels + matchExpressions) as a matcher."""
    spec = spec or {}
    requirements = [
        LabelRequirement(k, "In", (str(v),)) for k, v in (spec.get("matchLabels") or {}).items()
    ]
    for expr in spec.get("matchExpressions") or []:
        requirements.append(
            LabelRequirement(
                str(expr.get("key", "")),
                str(expr.get("operator", "")),
                tuple(str(v) for v in expr.get("values") or []),
            )
        )
    return LabelSelector(requirements)


def label_selector_to_string(spec: Mapping[str, Any] | None) -> str:
    """Render a structured LabelSelector in the query-string form."""
    spec = spec or {}
    terms = [f"{k}={v}" for k, v in sorted((spec.get("matchLabels") or {}).items())]
    for expr in spec.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], ",".join(expr.get("values") or [])
        terms.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return ",".join(terms)


# Fields each kind can be selected on (every kind: metadata.name, metadata.namespace).
_FIELDS_BY_KIND: dict[str, frozenset[str]] = {
    "Pod": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "Node": frozenset({"spec.unschedulable"}),
    "Event": frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    "Namespace": frozenset({"status.phase"}),
    "Secret": frozenset({"type"}),
}
_COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form the API server compares: missing -> "", booleans lower-case."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return ""
        value = value[part]
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    equal: bool
    value: str


class FieldSelector:
    def __init__(self, requirements: list[FieldRequirement]) -> None:
        self.requirements = requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, r.path) == r.value) == r.equal for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact(self, path: str) -> str | None:
        """The value an equality requirement pins ``path`` to, if any (for indexed lookups)."""
        for r in self.requirements:
            if r.path == path and r.equal:
                return r.value
        return None


def parse_field_selector(selector: str | None, kind: str) -> FieldSelector:
    """Parse ``a=b,c!=d``; unsupported fields are a 400 as on the API server."""
    if not selector or not selector.strip():
        return FieldSelector([])
    allowed = _COMMON_FIELDS | _FIELDS_BY_KIND.get(kind, frozenset())
    requirements = []
    for term in selector.split(","):
        match = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*", term)
        if not match:
            raise BadRequest(f'invalid field selector "{selector}" at "{term}"')
        path, op, value = match.groups()
        if path not in allowed:
            raise BadRequest(f'field label not supported: "{path}" for kind {kind}')
        requirements.append(FieldRequirement(path, op != "!=", value))
    return FieldSelector(requirements)


Matcher = Callable[[Mapping[str, Any]], bool]


def object_matcher(label: LabelSelector, fields: FieldSelector) -> Matcher:
    """One predicate over whole objects for both selectors."""
    if label.empty and fields.empty:
        return lambda _obj: True

    def matches(obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        return label.matches(metadata.get("labels")) and fields.matches(obj)

    return matches
