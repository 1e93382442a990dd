"""Would this identity policy allow this request? A small evaluator of IAM policy
documents, for the documents Joiner ships: Allow and Deny statements, ``Action`` and
``Resource`` with ``*``/``?`` wildcards (an ARN compared segment by segment), and the
condition operators those documents use. An operator it does not know raises, so a new
condition can never pass unexamined.

A request is an action, one resource ARN (``*`` for actions without resource-level
permissions), for a resource policy (a queue's) the calling principal, and its request
context (``aws:RequestedRegion``, ``aws:RequestTag/<key>``,
``aws:ResourceTag/<key>``, ``aws:TagKeys``, ``ec2:CreateAction``, ``iam:PassedToService``,
``aws:SourceAccount``, ``aws:SourceArn``, ...). As in IAM, an explicit Deny wins, and
without an Allow the request is denied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

ContextValue = str | Sequence[str]


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: Mapping[str, ContextValue] = field(default_factory=dict)
    principal: tuple[str, str] | None = None  # ("Service", "events.amazonaws.com"), ("AWS", arn)


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _matches(pattern: str, value: str) -> bool:
    return fnmatchcase(value.lower(), pattern.lower())  # actions are case-insensitive


def arn_matches(pattern: str, arn: str) -> bool:
    """An ARN pattern against an ARN, segment by segment (the resource part may hold /)."""
    if pattern == "*":
        return True
    pattern_parts, arn_parts = pattern.split(":", 5), arn.split(":", 5)
    return len(pattern_parts) == len(arn_parts) and all(
        fnmatchcase(a, p) for p, a in zip(pattern_parts, arn_parts, strict=True)
    )


def _string_equals(expected: list[str], value: str) -> bool:
    return value in expected


def _string_like(expected: list[str], value: str) -> bool:
    return any(fnmatchcase(value, p) for p in expected)


def _arn_like(expected: list[str], value: str) -> bool:
    return any(arn_matches(p, value) for p in expected)


def _bool(expected: list[str], value: str) -> bool:
    return str(value).lower() in [str(e).lower() for e in expected]


_OPERATORS: dict[str, Callable[[list[str], str], bool]] = {
    "StringEquals": _string_equals,
    "StringLike": _string_like,
    "ArnEquals": _string_equals,
    "ArnLike": _arn_like,
    "Bool": _bool,
}


def condition_holds(operator: str, key: str, expected: Any, context: Mapping) -> bool:
    """One ``operator: {key: expected}`` entry of a Condition block."""
    expected = as_list(expected)
    if operator.startswith(("ForAllValues:", "ForAnyValue:")):
        qualifier, _, base = operator.partition(":")
        test = _OPERATORS.get(base)
        if test is None:
            raise ValueError(f"condition operator {operator!r} is not known to the evaluator")
        values = as_list(context.get(key, []))
        if qualifier == "ForAllValues":
            return all(test(expected, v) for v in values)
        return any(test(expected, v) for v in values)
    base = operator.removesuffix("IfExists")
    test = _OPERATORS.get(base)
    if test is None:
        raise ValueError(f"condition operator {operator!r} is not known to the evaluator")
    if key not in context:
        return operator.endswith("IfExists")
    return any(test(expected, v) for v in as_list(context[key]))


def _principal_matches(statement: Mapping[str, Any], request: Request) -> bool:
    if "Principal" not in statement:  # an identity policy: the caller is its holder
        return True
    principal = statement["Principal"]
    if principal == "*":
        return True
    if request.principal is None:
        return False
    kind, name = request.principal
    return name in as_list(principal.get(kind, []))


def _statement_applies(statement: Mapping[str, Any], request: Request) -> bool:
    if not _principal_matches(statement, request):
        return False
    if not any(_matches(a, request.action) for a in as_list(statement.get("Action", []))):
        return False
    if not any(arn_matches(r, request.resource) for r in as_list(statement.get("Resource", "*"))):
        return False
    return all(
        condition_holds(operator, key, expected, request.context)
        for operator, pairs in statement.get("Condition", {}).items()
        for key, expected in pairs.items()
    )


def allowed(policy: Mapping[str, Any], request: Request) -> bool:
    """IAM's answer for one policy: allowed by a statement and denied by none."""
    applying = [s for s in as_list(policy["Statement"]) if _statement_applies(s, request)]
    if any(s["Effect"] == "Deny" for s in applying):
        return False
    return any(s["Effect"] == "Allow" for s in applying)


def granted_actions(policy: Mapping[str, Any]) -> set[str]:
    """Every action an Allow statement names."""
    return {
        action
        for statement in as_list(policy["Statement"])
        if statement["Effect"] == "Allow"
        for action in as_list(statement["Action"])
    }
