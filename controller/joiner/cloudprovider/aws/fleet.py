"""One instance through ``CreateFleet`` type ``instant`` [SPEC 4.5, 4.6].

Overrides are (instance type, subnet) pairs, cheapest first, with priority = price:
spot uses ``price-capacity-optimized``, on-demand ``lowest-price``. Errors that mean "no
capacity for this offering" come back per override; the caller marks those offerings
unavailable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.cloudprovider.aws.tags import as_tag_list

# Fleet error codes meaning the offering has no capacity now.
CAPACITY_ERROR_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "UnfulfillableCapacity",
        "MaxSpotInstanceCountExceeded",
        "ReservationCapacityExceeded",  # the targeted capacity reservation is full
        "SpotMaxPriceTooLow",
        "Unsupported",
    }
)


@dataclass(frozen=True)
class Override:
    instance_type: str
    subnet_id: str
    zone: str
    price: float
    launch_template: str


@dataclass
class FleetError:
    code: str
    message: str
    instance_type: str | None
    zone: str | None

    @property
    def is_capacity_error(self) -> bool:
        return self.code in CAPACITY_ERROR_CODES


@dataclass
class FleetResult:
    instance_id: str | None
    errors: list[FleetError] = field(default_factory=list)
    # What was launched, as CreateFleet answers it (None when nothing was).
    instance_type: str | None = None
    zone: str | None = None


def fleet_request(
    capacity_type: str,
    overrides: Sequence[Override],
    tags: Mapping[str, str],
    prioritized: bool = False,
) -> dict[str, Any]:
    """The CreateFleet arguments: one launch template config per template, in the order
    of each template's cheapest override (moto takes the first override it sees). With
    ``prioritized`` (NodeOverlay prices) on-demand goes by the overrides' priorities."""
    configs: dict[str, list[dict[str, Any]]] = {}
    for override in sorted(overrides, key=lambda o: o.price):
        configs.setdefault(override.launch_template, []).append(
            {
                "InstanceType": override.instance_type,
                "SubnetId": override.subnet_id,
                "Priority": override.price,
            }
        )
    # EC2 has no "reserved" target: a reserved launch is on-demand into the reservation
    # its launch template targets.
    spot = capacity_type == wk.CAPACITY_TYPE_SPOT
    target = wk.CAPACITY_TYPE_SPOT if spot else wk.CAPACITY_TYPE_ON_DEMAND
    request: dict[str, Any] = {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": target,
        },
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": items,
            }
            for name, items in configs.items()
        ],
        "TagSpecifications": [
            {"ResourceType": resource, "Tags": as_tag_list(tags)}
            for resource in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == wk.CAPACITY_TYPE_SPOT:
        request["SpotOptions"] = {"AllocationStrategy": "price-capacity-optimized"}
    else:  # prices from NodeOverlays: in their order, as upstream, not EC2's list prices
        strategy = "prioritized" if prioritized else "lowest-price"
        request["OnDemandOptions"] = {"AllocationStrategy": strategy}
    return request


def create_fleet(
    ec2: Any,
    capacity_type: str,
    overrides: Sequence[Override],
    tags: Mapping[str, str],
    prioritized: bool = False,
) -> FleetResult:
    response = ec2.create_fleet(**fleet_request(capacity_type, overrides, tags, prioritized))
    zones = {o.subnet_id: o.zone for o in overrides}
    errors = [_error(e, zones) for e in response.get("Errors", ())]
    for instance in response.get("Instances", ()):
        if instance.get("InstanceIds"):
            override = (instance.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            zone = override.get("AvailabilityZone") or zones.get(override.get("SubnetId", ""))
            return FleetResult(
                instance["InstanceIds"][0], errors, instance.get("InstanceType"), zone
            )
    return FleetResult(None, errors)


def _error(raw: Mapping[str, Any], zones: Mapping[str, str]) -> FleetError:
    override = (raw.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
    zone = override.get("AvailabilityZone") or zones.get(override.get("SubnetId", ""))
    return FleetError(
        code=raw.get("ErrorCode", ""),
        message=raw.get("ErrorMessage", ""),
        instance_type=override.get("InstanceType"),
        zone=zone,
    )
