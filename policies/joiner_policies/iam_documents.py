"""IAM policy documents as the engine passes them: parsing and wildcard matching.

A document arrives as a JSON string or as an object; ``Statement`` is a list or a single
object; ``Action``/``Resource`` (and ``NotAction``/``NotResource``) are a string or a
list. IAM action names are case-insensitive and both actions and ARNs may use the ``*``
and ``?`` wildcards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from joiner_policies._values import items, mapping, strings


class DocumentError(ValueError):
    """A policy document the checks cannot read (the provider would reject it too)."""


@dataclass(frozen=True)
class Statement:
    """One statement of a document; ``label`` names it in violation messages."""

    label: str
    effect: str
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    principal: Any = None
    condition: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_allow(self) -> bool:
        return self.effect.lower() == "allow"

    @property
    def is_deny(self) -> bool:
        return self.effect.lower() == "deny"

    def grants(self, action: str) -> bool:
        """True when this is an Allow that covers ``action`` (through a wildcard or NotAction)."""
        if not self.is_allow:
            return False
        if self.not_actions:
            return not any(action_matches(p, action) for p in self.not_actions)
        return any(action_matches(p, action) for p in self.actions)

    def covers_resource(self, resource_matches: Callable[[str], bool]) -> bool:
        """True when the statement's resources include one ``resource_matches(pattern)``
        accepts; with NotResource, when the exclusion does not name such resources."""
        if self.not_resources:
            return not any(resource_matches(p) for p in self.not_resources)
        return any(resource_matches(p) for p in self.resources)

    def condition_keys(self) -> list[str]:
        """Every condition key the statement tests, across all operators."""
        return [key for block in self.condition.values() for key in mapping(block)]

    def condition_values(self, operators: tuple[str, ...], key: str) -> list[str] | None:
        """The values ``key`` is compared with under one of ``operators`` (operator names and
        keys compared case-insensitively, as IAM does), or None when it is not tested."""
        wanted = {operator.lower() for operator in operators}
        found: list[str] | None = None
        for operator, block in self.condition.items():
            if operator.lower() not in wanted:
                continue
            for block_key, value in mapping(block).items():
                if block_key.lower() == key.lower():
                    found = [*(found or []), *(_text(v) for v in _scalars(value))]
        return found


def parse_document(raw: Any) -> list[Statement]:
    """The statements of a document given as JSON text or as an object."""
    document = _load(raw)
    if "Statement" not in document:
        raise DocumentError("the policy document has no Statement")
    raw_statements = document["Statement"]
    listed = items(raw_statements) if not isinstance(raw_statements, Mapping) else [raw_statements]
    if not listed:
        raise DocumentError("the policy document's Statement is empty")
    return [_statement(index, raw) for index, raw in enumerate(listed)]


def action_matches(pattern: str, action: str) -> bool:
    """IAM action matching: case-insensitive, ``*`` and ``?`` wildcards."""
    return _wildcard(pattern, ignore_case=True).fullmatch(action) is not None


def arn_matches(pattern: str, arn: str) -> bool:
    """ARN matching with IAM's ``*`` and ``?`` wildcards (case-sensitive)."""
    return _wildcard(pattern, ignore_case=False).fullmatch(arn) is not None


def resource_type_matches(pattern: str, service: str, resource: str) -> bool:
    """True when the Resource ``pattern`` can match an ARN of ``service`` whose resource
    part is ``resource`` (e.g. ``ec2`` / ``launch-template/lt-0``) in any partition,
    region and account."""
    if pattern == "*":
        return True
    parts = pattern.split(":", 5)
    if len(parts) < 6:
        # "arn:aws:ec2:*": a trailing * swallows the remaining fields.
        partition = parts[1] if len(parts) > 1 else "aws"
        probe = f"arn:{partition}:{service}:region:account:{resource}"
        return arn_matches(pattern, probe)
    return arn_matches(parts[2], service) and arn_matches(parts[5], resource)


def is_service_wildcard(pattern: str) -> bool:
    """``*`` or ``service:*``: every action (of a service)."""
    return pattern.strip("*") == "" or pattern.split(":", 1)[-1].strip("*") == ""


def _load(raw: Any) -> Mapping[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as error:
            raise DocumentError(f"the policy document is not valid JSON ({error})") from None
    if not isinstance(raw, Mapping):
        raise DocumentError("the policy document is not a JSON object")
    return raw


def _statement(index: int, raw: Any) -> Statement:
    if not isinstance(raw, Mapping):
        raise DocumentError(f"statement {index} is not an object")
    sid = raw.get("Sid")
    label = f"statement {index}" + (f" ({sid})" if isinstance(sid, str) and sid else "")
    effect = raw.get("Effect")
    if not isinstance(effect, str):
        raise DocumentError(f"{label} has no Effect")
    return Statement(
        label=label,
        effect=effect,
        actions=tuple(strings(raw.get("Action"))),
        not_actions=tuple(strings(raw.get("NotAction"))),
        resources=tuple(strings(raw.get("Resource"))),
        not_resources=tuple(strings(raw.get("NotResource"))),
        principal=raw.get("Principal"),
        condition=mapping(raw.get("Condition")),
    )


def _scalars(value: Any) -> list[Any]:
    return [value] if isinstance(value, str | bool | int | float) else items(value)


def _text(value: Any) -> str:
    # JSON booleans compare like IAM's strings: true -> "true".
    return str(value).lower() if isinstance(value, bool) else str(value)


@lru_cache(maxsize=1024)
def _wildcard(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    regex = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern
    )
    return re.compile(regex, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)
