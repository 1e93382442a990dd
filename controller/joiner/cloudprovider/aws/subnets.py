"""Subnets of an EC2NodeClass: resolved from ``subnetSelectorTerms`` into its status, and
at launch one per zone, the one with the most free IPs [SPEC 4.1, 4.4]."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from joiner.cloudprovider.aws.selectors import ResolutionError, describe_all, term_filters

FIELD = "subnetSelectorTerms"
_TERM_FIELDS = {"id": "subnet-id"}


def resolve_subnets(ec2: Any, terms: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Status entries ``{id, zone, zoneID}`` of every subnet any term selects, ordered by
    zone then id. Raises ResolutionError when nothing matches."""
    if not terms:
        raise ResolutionError(f"spec.{FIELD} is empty: at least one term is required")
    found: dict[str, dict[str, Any]] = {}
    for index, term in enumerate(terms):
        filters = term_filters(term, FIELD, index, _TERM_FIELDS)
        for subnet in describe_all(ec2, "describe_subnets", "Subnets", filters):
            found[subnet["SubnetId"]] = subnet
    if not found:
        raise ResolutionError(f"no subnet matches spec.{FIELD} {list(terms)}")
    return [
        {
            "id": s["SubnetId"],
            "zone": s["AvailabilityZone"],
            "zoneID": s.get("AvailabilityZoneId", ""),
        }
        for s in sorted(found.values(), key=lambda s: (s["AvailabilityZone"], s["SubnetId"]))
    ]


def subnets_by_zone(ec2: Any, status_subnets: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """Zone -> the class subnet with the most free IPv4 addresses there (ties: lowest id),
    read fresh because launches consume addresses."""
    ids = [s["id"] for s in status_subnets]
    if not ids:
        return {}
    subnets = describe_all(
        ec2, "describe_subnets", "Subnets", [{"Name": "subnet-id", "Values": ids}]
    )
    chosen: dict[str, str] = {}
    for subnet in sorted(
        subnets, key=lambda s: (-s.get("AvailableIpAddressCount", 0), s["SubnetId"])
    ):
        chosen.setdefault(subnet["AvailabilityZone"], subnet["SubnetId"])
    return chosen
