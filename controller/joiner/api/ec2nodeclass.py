"""EC2NodeClass (karpenter.k8s.aws/v1): how nodes are launched on AWS."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api.serialize import manifest, optional_fields, stable_hash

KIND = "EC2NodeClass"
AMI_FAMILIES = (
    "AL2",
    "AL2023",
    "Bottlerocket",
    "Custom",
    "Windows2019",
    "Windows2022",
    "Windows2025",
)
AMI_ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}

# Condition types
AMIS_READY = "AMIsReady"
SUBNETS_READY = "SubnetsReady"
SECURITY_GROUPS_READY = "SecurityGroupsReady"
INSTANCE_PROFILE_READY = "InstanceProfileReady"
CAPACITY_RESERVATIONS_READY = "CapacityReservationsReady"
VALIDATION_SUCCEEDED = "ValidationSucceeded"
READY = "Ready"

# Capacity reservations (status.capacityReservations), as upstream names them.
RESERVATION_TYPE_DEFAULT = "default"
RESERVATION_TYPE_CAPACITY_BLOCK = "capacity-block"
RESERVATION_TYPES = (RESERVATION_TYPE_DEFAULT, RESERVATION_TYPE_CAPACITY_BLOCK)
RESERVATION_STATE_ACTIVE = "active"
RESERVATION_STATE_EXPIRING = "expiring"  # a Capacity Block within 40 minutes of its end
RESERVATION_STATES = (RESERVATION_STATE_ACTIVE, RESERVATION_STATE_EXPIRING)

DEFAULT_METADATA_OPTIONS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def default_block_device_mappings(ami_family: str | None) -> list[dict[str, Any]]:
    """Root volumes when the class names none: 20Gi gp3 encrypted; Bottlerocket has a
    4Gi OS volume plus a 20Gi data volume."""

    def volume(device: str, size: str) -> dict[str, Any]:
        return {
            "deviceName": device,
            "ebs": {"volumeSize": size, "volumeType": "gp3", "encrypted": True},
        }

    if ami_family == "Bottlerocket":
        return [volume("/dev/xvda", "4Gi"), volume("/dev/xvdb", "20Gi")]
    if ami_family and ami_family.startswith("Windows"):
        return [volume("/dev/sda1", "50Gi")]
    return [volume("/dev/xvda", "20Gi")]


@dataclass
class EC2NodeClass:
    metadata: dict[str, Any]
    subnet_selector_terms: list[dict[str, Any]] = field(default_factory=list)
    security_group_selector_terms: list[dict[str, Any]] = field(default_factory=list)
    ami_selector_terms: list[dict[str, Any]] = field(default_factory=list)
    capacity_reservation_selector_terms: list[dict[str, Any]] = field(default_factory=list)
    ami_family: str | None = None
    role: str | None = None
    instance_profile: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    user_data: str | None = None
    kubelet: dict[str, Any] = field(default_factory=dict)
    block_device_mappings: list[dict[str, Any]] | None = None
    metadata_options: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_METADATA_OPTIONS))
    associate_public_ip_address: bool | None = None
    detailed_monitoring: bool | None = None
    instance_store_policy: str | None = None
    status: dict[str, Any] = field(default_factory=dict)

    _OPTIONAL = (
        ("ami_family", "amiFamily"),
        ("role", "role"),
        ("instance_profile", "instanceProfile"),
        ("user_data", "userData"),
        ("associate_public_ip_address", "associatePublicIPAddress"),
        ("detailed_monitoring", "detailedMonitoring"),
        ("instance_store_policy", "instanceStorePolicy"),
    )

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> EC2NodeClass:
        spec = raw.get("spec") or {}
        nodeclass = cls(
            metadata=copy.deepcopy(raw.get("metadata") or {}),
            subnet_selector_terms=copy.deepcopy(list(spec.get("subnetSelectorTerms") or [])),
            security_group_selector_terms=copy.deepcopy(
                list(spec.get("securityGroupSelectorTerms") or [])
            ),
            ami_selector_terms=copy.deepcopy(list(spec.get("amiSelectorTerms") or [])),
            capacity_reservation_selector_terms=copy.deepcopy(
                list(spec.get("capacityReservationSelectorTerms") or [])
            ),
            tags=dict(spec.get("tags") or {}),
            kubelet=copy.deepcopy(spec.get("kubelet") or {}),
            block_device_mappings=copy.deepcopy(spec.get("blockDeviceMappings")),
            metadata_options={**DEFAULT_METADATA_OPTIONS, **(spec.get("metadataOptions") or {})},
            status=copy.deepcopy(raw.get("status") or {}),
        )
        for attr, key in cls._OPTIONAL:
            setattr(nodeclass, attr, spec.get(key))
        return nodeclass

    def to_dict(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "subnetSelectorTerms": copy.deepcopy(self.subnet_selector_terms),
            "securityGroupSelectorTerms": copy.deepcopy(self.security_group_selector_terms),
            "metadataOptions": dict(self.metadata_options),
        }
        if self.ami_selector_terms:
            spec["amiSelectorTerms"] = copy.deepcopy(self.ami_selector_terms)
        if self.capacity_reservation_selector_terms:
            spec["capacityReservationSelectorTerms"] = copy.deepcopy(
                self.capacity_reservation_selector_terms
            )
        for attr, key in self._OPTIONAL:
            if getattr(self, attr) is not None:
                spec[key] = getattr(self, attr)
        optional_fields(spec, tags=self.tags, kubelet=self.kubelet)
        if self.block_device_mappings is not None:  # an explicit [] is kept
            spec["blockDeviceMappings"] = copy.deepcopy(self.block_device_mappings)
        return manifest(wk.AWS_API_VERSION, KIND, self.metadata, spec, self.status)

    @property
    def name(self) -> str:
        return self.metadata.get("name", "")

    def static_hash(self) -> str:
        """Static drift hash (``karpenter.k8s.aws/ec2nodeclass-hash``) over the spec fields
        that change how a node is launched; selector results are compared separately."""
        spec = self.to_dict()["spec"]
        for dynamic in (
            "subnetSelectorTerms",
            "securityGroupSelectorTerms",
            "amiSelectorTerms",
            "capacityReservationSelectorTerms",
        ):
            spec.pop(dynamic, None)
        return stable_hash(spec)

    def resolved_ami_family(self) -> str:
        """amiFamily, else the family of the alias term, else AL2023."""
        if self.ami_family:
            return self.ami_family
        for term in self.ami_selector_terms:
            alias = term.get("alias")
            if alias:
                return AMI_ALIAS_FAMILIES.get(alias.split("@", 1)[0], "Custom")
        return "AL2023" if not self.ami_selector_terms else "Custom"

    def effective_block_device_mappings(self) -> list[dict[str, Any]]:
        if self.block_device_mappings is not None:
            return copy.deepcopy(self.block_device_mappings)
        return default_block_device_mappings(self.resolved_ami_family())
