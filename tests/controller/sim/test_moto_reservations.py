"""The capacity reservations Joiner's emulation adds to moto (``joiner.sim.moto_reservations``),
driven through boto3 against the session's moto server as the controller and the tests call
EC2: created, described by id and by filters, launched into by CreateFleet until full,
given back on termination."""

from __future__ import annotations

import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from joiner.cloudprovider.aws.clients import AWSClients
from joiner.sim.moto_reservations import (
    CapacityReservation,
    add_reservation,
    hold_outside,
    new_reservation_id,
)
from moto.core import DEFAULT_ACCOUNT_ID

REGION = "us-east-1"


@pytest.fixture
def ec2(moto_url: str) -> Any:
    request = urllib.request.Request(f"{moto_url}/moto-api/reset", data=b"", method="POST")
    urllib.request.urlopen(request, timeout=30).read()
    keys = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    return AWSClients.create(REGION, keys, moto_url, max_attempts=1, with_pricing=False).ec2


def reserve(ec2: Any, count: int = 2, **extra: Any) -> str:
    return ec2.create_capacity_reservation(
        InstanceType="m5.large",
        InstancePlatform="Linux/UNIX",
        AvailabilityZone="us-east-1a",
        InstanceCount=count,
        **extra,
    )["CapacityReservation"]["CapacityReservationId"]


def launch_into(ec2: Any, reservation_id: str, instance_type: str = "m5.large") -> dict[str, Any]:
    """One instance through an instant fleet whose template targets the reservation."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20", AvailabilityZone="us-east-1a")
    image = ec2.register_image(Name="node")["ImageId"]
    name = f"lt-{uuid.uuid4().hex}"
    ec2.create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={
            "ImageId": image,
            "CapacityReservationSpecification": {
                "CapacityReservationTarget": {"CapacityReservationId": reservation_id}
            },
        },
    )
    return ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": "on-demand",
        },
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [
                    {"InstanceType": instance_type, "SubnetId": subnet["Subnet"]["SubnetId"]}
                ],
            }
        ],
    )


def available(ec2: Any, reservation_id: str) -> int:
    described = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    return described["CapacityReservations"][0]["AvailableInstanceCount"]


def test_a_reservation_is_described_as_created(ec2: Any) -> None:
    end = datetime(2030, 1, 1, tzinfo=UTC)
    reservation_id = reserve(
        ec2,
        EndDate=end,
        EndDateType="limited",
        InstanceMatchCriteria="targeted",
        TagSpecifications=[
            {"ResourceType": "capacity-reservation", "Tags": [{"Key": "team", "Value": "ml"}]}
        ],
    )
    [described] = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])[
        "CapacityReservations"
    ]
    assert {k: described[k] for k in ("InstanceType", "AvailabilityZone", "OwnerId", "State")} == {
        "InstanceType": "m5.large",
        "AvailabilityZone": "us-east-1a",
        "OwnerId": DEFAULT_ACCOUNT_ID,
        "State": "active",
    }
    assert (described["TotalInstanceCount"], described["AvailableInstanceCount"]) == (2, 2)
    assert described["InstanceMatchCriteria"] == "targeted"
    assert described["ReservationType"] == "default"
    assert described["EndDate"] == end
    assert described["Tags"] == [{"Key": "team", "Value": "ml"}]


def test_filters_select_by_tag_owner_state_and_match_criteria(ec2: Any) -> None:
    tagged = reserve(
        ec2,
        TagSpecifications=[
            {"ResourceType": "capacity-reservation", "Tags": [{"Key": "team", "Value": "ml"}]}
        ],
    )
    targeted = reserve(ec2, InstanceMatchCriteria="targeted")
    cancelled = reserve(
        ec2,
        TagSpecifications=[
            {"ResourceType": "capacity-reservation", "Tags": [{"Key": "team", "Value": "web"}]}
        ],
    )
    ec2.cancel_capacity_reservation(CapacityReservationId=cancelled)

    def ids(*filters: tuple[str, list[str]]) -> set[str]:
        found = ec2.describe_capacity_reservations(
            Filters=[{"Name": name, "Values": values} for name, values in filters]
        )["CapacityReservations"]
        return {r["CapacityReservationId"] for r in found}

    assert ids(("tag:team", ["ml"])) == {tagged}
    assert ids(("tag-key", ["team"]), ("state", ["active"])) == {tagged}
    assert ids(("instance-match-criteria", ["targeted"])) == {targeted}
    assert ids(("owner-id", [DEFAULT_ACCOUNT_ID]), ("state", ["active"])) == {tagged, targeted}
    assert ids(("owner-id", ["111122223333"])) == set()
    assert ids(("state", ["cancelled"])) == {cancelled}


def test_outside_instances_hold_the_free_slots_until_released(ec2: Any) -> None:
    reservation_id = reserve(ec2, count=2)
    launch_into(ec2, reservation_id)
    hold_outside(DEFAULT_ACCOUNT_ID, REGION, "m5.large", "us-east-1a", held=True)
    assert available(ec2, reservation_id) == 0
    full = launch_into(ec2, reservation_id)
    assert [e["ErrorCode"] for e in full["Errors"]] == ["ReservationCapacityExceeded"]
    hold_outside(DEFAULT_ACCOUNT_ID, REGION, "m5.large", None, held=False)
    assert available(ec2, reservation_id) == 1


def test_an_unknown_id_or_filter_is_refused(ec2: Any) -> None:
    with pytest.raises(ClientError) as unknown:
        ec2.describe_capacity_reservations(CapacityReservationIds=["cr-0000000000000000"])
    assert unknown.value.response["Error"]["Code"] == "InvalidCapacityReservationId.NotFound"
    with pytest.raises(ClientError) as bad_filter:
        ec2.describe_capacity_reservations(Filters=[{"Name": "colour", "Values": ["red"]}])
    assert bad_filter.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_fleet_launches_take_slots_until_full_and_termination_gives_one_back(ec2: Any) -> None:
    reservation_id = reserve(ec2, count=1)
    first = launch_into(ec2, reservation_id)
    [instance_id] = first["Instances"][0]["InstanceIds"]
    assert available(ec2, reservation_id) == 0
    described = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    assert described["CapacityReservationId"] == reservation_id

    full = launch_into(ec2, reservation_id)
    assert full["Instances"] == []
    assert [e["ErrorCode"] for e in full["Errors"]] == ["ReservationCapacityExceeded"]
    assert (
        full["Errors"][0]["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] == "m5.large"
    )

    ec2.terminate_instances(InstanceIds=[instance_id])
    assert available(ec2, reservation_id) == 1


def test_a_launch_of_another_type_does_not_fit_the_reservation(ec2: Any) -> None:
    reservation_id = reserve(ec2, count=3)
    answer = launch_into(ec2, reservation_id, instance_type="c5.large")
    assert answer["Instances"] == []
    assert [e["ErrorCode"] for e in answer["Errors"]] == ["ReservationCapacityExceeded"]
    assert available(ec2, reservation_id) == 3


def test_a_capacity_block_is_described_with_its_type_and_end(ec2: Any) -> None:
    end = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=6)
    block = add_reservation(
        DEFAULT_ACCOUNT_ID,
        REGION,
        CapacityReservation(
            new_reservation_id(),
            "p5.48xlarge",
            "us-east-1b",
            2,
            match_criteria="targeted",
            reservation_type="capacity-block",
            end=end,
        ),
    )
    [described] = ec2.describe_capacity_reservations(
        Filters=[{"Name": "reservation-type", "Values": ["capacity-block"]}]
    )["CapacityReservations"]
    assert (described["CapacityReservationId"], described["EndDate"]) == (block, end)
    assert described["InstanceMatchCriteria"] == "targeted"
