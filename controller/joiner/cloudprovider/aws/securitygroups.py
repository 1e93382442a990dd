"""Security groups of an EC2NodeClass, resolved from ``securityGroupSelectorTerms``
(tags, id, name) into its status [SPEC 4.1]."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from joiner.cloudprovider.aws.selectors import ResolutionError, describe_all, term_filters

FIELD = "securityGroupSelectorTerms"
_TERM_FIELDS = {"id": "group-id", "name": "group-name"}


def resolve_security_groups(ec2: Any, terms: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Status entries ``{id, name}`` ordered by id. Raises ResolutionError when nothing
    matches."""
    if not terms:
        raise ResolutionError(f"spec.{FIELD} is empty: at least one term is required")
    found: dict[str, str] = {}
    for index, term in enumerate(terms):
        filters = term_filters(term, FIELD, index, _TERM_FIELDS)
        for group in describe_all(ec2, "describe_security_groups", "SecurityGroups", filters):
            found[group["GroupId"]] = group.get("GroupName", "")
    if not found:
        raise ResolutionError(f"no security group matches spec.{FIELD} {list(terms)}")
    return [{"id": group_id, "name": found[group_id]} for group_id in sorted(found)]
