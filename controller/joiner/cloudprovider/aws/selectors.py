"""Selector terms (subnets, security groups, AMIs) as EC2 Describe* filters.

Terms are ORed, the fields of one term ANDed [SPEC 1]. A tag value ``*`` means "the tag
is present, any value".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class ResolutionError(Exception):
    """A class's selection cannot be resolved; the message names the field and is shown
    in the class's status condition."""


def check_term(term: Any, where: str) -> None:
    """A term must be a map, and its ``tags`` (when present) a map too."""
    if not isinstance(term, Mapping):
        raise ResolutionError(f"{where} must be a map, got {term!r}")
    if not isinstance(term.get("tags") or {}, Mapping):
        raise ResolutionError(f"{where}.tags must be a map of tag keys to values")


def tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    filters = []
    for key, value in sorted(tags.items()):
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [str(value)]})
    return filters


def term_filters(
    term: Mapping[str, Any], field: str, index: int, fields: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Filters for one term. ``fields`` maps the term's scalar keys (id, name) to EC2
    filter names; ``tags`` is always allowed. Raises ResolutionError for empty or
    unknown keys, naming ``spec.<field>[index]``."""
    where = f"spec.{field}[{index}]"
    check_term(term, where)
    unknown = sorted(set(term) - set(fields) - {"tags"})
    if unknown:
        raise ResolutionError(f"{where}: unknown key(s) {', '.join(unknown)}")
    filters = [
        {"Name": filter_name, "Values": [str(term[key])]}
        for key, filter_name in fields.items()
        if term.get(key)
    ]
    filters.extend(tag_filters(term.get("tags") or {}))
    if not filters:
        allowed = ", ".join(sorted([*fields, "tags"]))
        raise ResolutionError(f"{where} selects nothing: set one of {allowed}")
    return filters


def describe_all(
    ec2: Any, operation: str, result_key: str, filters: Sequence[Mapping[str, Any]], **kwargs: Any
) -> list[dict[str, Any]]:
    """Every item of a paginated Describe* call."""
    items: list[dict[str, Any]] = []
    paginator = ec2.get_paginator(operation)
    for page in paginator.paginate(Filters=list(filters), **kwargs):
        items.extend(page[result_key])
    return items
