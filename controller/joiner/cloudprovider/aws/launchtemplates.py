"""Launch templates created and owned by the controller [SPEC 4.4].

One template per distinct configuration (AMI, user data, security groups, instance
profile, block devices, metadata options, tags); its name is a hash of that
configuration, so an identical configuration reuses the template and any change makes a
new one. Templates carry the cluster and nodepool tags the controller's IAM policy
requires. A template unused for ``UNUSED_TTL_SECONDS`` (or whose class is deleted) is
deleted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import RESERVATION_TYPE_CAPACITY_BLOCK, EC2NodeClass
from joiner.clock import Clock
from joiner.cloudprovider.aws.instancetypes import volume_size_bytes
from joiner.cloudprovider.aws.tags import as_tag_list, cluster_tag
from joiner.cloudprovider.types import Offering

log = logging.getLogger(__name__)

UNUSED_TTL_SECONDS = 3600.0
NAME_PREFIX = "joiner"
NOT_FOUND_CODES = (
    "InvalidLaunchTemplateName.NotFoundException",
    "InvalidLaunchTemplateId.NotFound",
)
_EBS_FIELDS = {
    "volumeType": "VolumeType",
    "encrypted": "Encrypted",
    "deleteOnTermination": "DeleteOnTermination",
    "iops": "Iops",
    "throughput": "Throughput",
    "kmsKeyID": "KmsKeyId",
    "snapshotID": "SnapshotId",
}
_METADATA_FIELDS = {
    "httpEndpoint": "HttpEndpoint",
    "httpProtocolIPv6": "HttpProtocolIpv6",
    "httpPutResponseHopLimit": "HttpPutResponseHopLimit",
    "httpTokens": "HttpTokens",
}


@dataclass(frozen=True)
class LaunchTemplate:
    name: str
    data: dict[str, Any]
    tags: dict[str, str]


def block_device_mappings(mappings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """EC2NodeClass blockDeviceMappings in the EC2 form (sizes in whole GiB, rounded up).
    EC2 needs a device name: a mapping without one (the API server accepts it) is left out."""
    out = []
    for mapping in mappings:
        if not mapping.get("deviceName"):
            continue
        ebs_in = mapping.get("ebs") or {}
        ebs: dict[str, Any] = {
            ec2: ebs_in[ours] for ours, ec2 in _EBS_FIELDS.items() if ours in ebs_in
        }
        size_bytes = volume_size_bytes(ebs_in.get("volumeSize"))
        if size_bytes is not None:
            ebs["VolumeSize"] = math.ceil(size_bytes / 2**30)
        ebs.setdefault("DeleteOnTermination", True)
        out.append({"DeviceName": mapping["deviceName"], "Ebs": ebs})
    return out


def metadata_options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {ec2: options[ours] for ours, ec2 in _METADATA_FIELDS.items() if ours in options}


def build_launch_template(
    cluster_name: str,
    nodeclass: EC2NodeClass,
    image_id: str,
    user_data: str,
    tags: Mapping[str, str],
    reservation: Offering | None = None,
) -> LaunchTemplate:
    """The template for one configuration; ``tags`` go on the template and on the network
    interfaces and volumes it creates. A reserved offering's template targets its
    capacity reservation (a Capacity Block's is bought as market type capacity-block)."""
    security_groups = [g["id"] for g in nodeclass.status.get("securityGroups", [])]
    data: dict[str, Any] = {
        "ImageId": image_id,
        "UserData": base64.b64encode(user_data.encode()).decode(),
        "IamInstanceProfile": {"Name": nodeclass.status.get("instanceProfile", "")},
        "BlockDeviceMappings": block_device_mappings(nodeclass.effective_block_device_mappings()),
        "MetadataOptions": metadata_options(nodeclass.metadata_options),
        "Monitoring": {"Enabled": bool(nodeclass.detailed_monitoring)},
        "TagSpecifications": [
            {"ResourceType": resource, "Tags": as_tag_list(tags)}
            for resource in ("network-interface", "volume")
        ],
    }
    if nodeclass.associate_public_ip_address is not None:
        data["NetworkInterfaces"] = [
            {
                "DeviceIndex": 0,
                "AssociatePublicIpAddress": nodeclass.associate_public_ip_address,
                "Groups": security_groups,
            }
        ]
    else:
        data["SecurityGroupIds"] = security_groups
    if reservation is not None and reservation.reservation_id is not None:
        target = {"CapacityReservationId": reservation.reservation_id}
        data["CapacityReservationSpecification"] = {"CapacityReservationTarget": target}
        if reservation.reservation_type == RESERVATION_TYPE_CAPACITY_BLOCK:
            data["InstanceMarketOptions"] = {"MarketType": RESERVATION_TYPE_CAPACITY_BLOCK}
    digest = hashlib.sha256(
        json.dumps({"data": data, "tags": dict(tags)}, sort_keys=True).encode()
    ).hexdigest()[:20]
    return LaunchTemplate(f"{NAME_PREFIX}/{cluster_name}/{digest}", data, dict(tags))


class LaunchTemplateProvider:
    """Creates templates on first use and remembers when each was last used."""

    def __init__(self, ec2: Any, clock: Clock, cluster_name: str) -> None:
        self._ec2 = ec2
        self._clock = clock
        self._cluster = cluster_name
        self._last_used: dict[str, float] = {}

    def ensure(self, template: LaunchTemplate) -> str:
        """The template's name, creating it when it does not exist yet."""
        if template.name not in self._last_used and not self._exists(template.name):
            self._ec2.create_launch_template(
                LaunchTemplateName=template.name,
                LaunchTemplateData=template.data,
                TagSpecifications=[
                    {"ResourceType": "launch-template", "Tags": as_tag_list(template.tags)}
                ],
            )
        self._last_used[template.name] = self._clock.now()
        return template.name

    def forget(self, name: str) -> None:
        """Drop a template from the cache (it was deleted behind our back)."""
        self._last_used.pop(name, None)

    def owned(self) -> list[dict[str, Any]]:
        """The cluster's templates, as DescribeLaunchTemplates returns them: owned by the
        cluster and made for a NodePool, as the controller policy requires to delete one
        (a template with only the cluster tag is not the controller's to touch)."""
        filters = [
            {"Name": f"tag:{cluster_tag(self._cluster)}", "Values": ["owned"]},
            {"Name": "tag-key", "Values": [wk.NODEPOOL]},
        ]
        templates: list[dict[str, Any]] = []
        for page in self._ec2.get_paginator("describe_launch_templates").paginate(Filters=filters):
            templates.extend(page["LaunchTemplates"])
        return templates

    def delete_unused(self, ttl_seconds: float = UNUSED_TTL_SECONDS) -> list[str]:
        """Delete owned templates not used for ``ttl_seconds`` (templates found but never
        used by this process count from when they were first seen)."""
        now = self._clock.now()
        doomed = []
        for template in self.owned():
            name = template["LaunchTemplateName"]
            last = self._last_used.setdefault(name, now)
            if now - last >= ttl_seconds:
                doomed.append(name)
        return self._delete(doomed)

    def delete_for_nodeclass(self, nodeclass_name: str) -> list[str]:
        """Delete every owned template of a deleted class."""
        names = [
            t["LaunchTemplateName"]
            for t in self.owned()
            if any(
                tag["Key"] == wk.EC2NODECLASS and tag["Value"] == nodeclass_name
                for tag in t.get("Tags", [])
            )
        ]
        return self._delete(names)

    def _delete(self, names: list[str]) -> list[str]:
        deleted = []
        for name in names:
            try:
                self._ec2.delete_launch_template(LaunchTemplateName=name)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") not in NOT_FOUND_CODES:
                    raise
            self.forget(name)
            deleted.append(name)
        return deleted

    def _exists(self, name: str) -> bool:
        try:
            self._ec2.describe_launch_templates(LaunchTemplateNames=[name])
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in NOT_FOUND_CODES:
                return False
            raise
        return True
