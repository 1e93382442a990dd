"""EC2 instance types: the raw catalogue, and the scheduler's view of one type [SPEC 5].

``InstanceTypeCatalogue`` holds what DescribeInstanceTypes, DescribeInstanceTypeOfferings
and DescribeAvailabilityZones return, refreshed on a clock (moto's unfiltered
DescribeInstanceTypes takes seconds, AWS's pages through ~900 types: never per call).

``build_instance_type`` turns one DescribeInstanceTypes entry into a ``InstanceType``:
well-known labels as requirements, capacity and the overhead reserved on the node,
with the EC2NodeClass's kubelet settings applied. Offerings (zone x capacity type,
priced) are passed in; ``offerings.py`` builds them.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.compatibility import readable_kubelet
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.requirements import DOES_NOT_EXIST, IN, Requirement, Requirements
from joiner.api.resources import ResourceList
from joiner.clock import Clock
from joiner.cloudprovider.types import (
    RESERVATION_LABELS,
    CloudProviderError,
    InstanceType,
    Offering,
    Overhead,
)

log = logging.getLogger(__name__)

CATALOGUE_REFRESH_SECONDS = 12 * 3600
DEFAULT_VM_MEMORY_OVERHEAD_PERCENT = 0.075
DEFAULT_MAX_PODS = 110
MIB = 2**20
ARM64_MEMORY_ADJUST_MIB = 64  # [SPEC 5] firmware-reserved memory on Graviton
KUBE_RESERVED_EPHEMERAL = 2**30  # 1Gi
DEFAULT_EVICTION_HARD = {"memory.available": "100Mi", "nodefs.available": "10%"}
EVICTION_SIGNALS = {"memory.available": res.MEMORY, "nodefs.available": res.EPHEMERAL_STORAGE}
RESERVABLE_RESOURCES = (res.CPU, res.MEMORY, res.EPHEMERAL_STORAGE)

# EC2 architecture -> kubernetes.io/arch. Others (i386, x86_64_mac, arm64_mac) are not
# Kubernetes node architectures and are left out of the catalogue.
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
SUPPORTED_CAPACITY_TYPES = {"spot": wk.CAPACITY_TYPE_SPOT, "on-demand": wk.CAPACITY_TYPE_ON_DEMAND}

# kube-reserved CPU per core range [SPEC 5]: (from millicores, to millicores, share as
# numerator / denominator, kept integral so the rounding is exact).
_KUBE_RESERVED_CPU_RANGES = (
    (0, 1000, 6, 100),
    (1000, 2000, 1, 100),
    (2000, 4000, 5, 1000),
    (4000, None, 25, 10000),
)


class InstanceTypeCatalogue:
    """The region's instance types and where they are offered, cached for
    ``refresh_seconds`` of the injected clock. Share one catalogue between providers
    (tests share one per session)."""

    def __init__(
        self, ec2: Any, clock: Clock, refresh_seconds: float = CATALOGUE_REFRESH_SECONDS
    ) -> None:
        self._ec2 = ec2
        self._clock = clock
        self._refresh_seconds = refresh_seconds
        self._loaded_at: float | None = None
        self._infos: dict[str, dict[str, Any]] = {}
        self._type_zones: dict[str, frozenset[str]] = {}
        self._zone_ids: dict[str, str] = {}
        self.generation = 0

    def infos(self) -> dict[str, dict[str, Any]]:
        """Instance-type name -> DescribeInstanceTypes entry (Kubernetes-capable types)."""
        self._refresh_if_due()
        return self._infos

    def type_zones(self) -> dict[str, frozenset[str]]:
        """Instance-type name -> the zones that offer it."""
        self._refresh_if_due()
        return self._type_zones

    def zone_ids(self) -> dict[str, str]:
        """Zone name -> zone id (us-east-1a -> use1-az6)."""
        self._refresh_if_due()
        return self._zone_ids

    def refresh(self) -> None:
        """Reload everything; on failure keep what was loaded (raise if nothing was)."""
        try:
            infos = self._describe_instance_types()
            type_zones = self._describe_offerings()
            zone_ids = {
                z["ZoneName"]: z["ZoneId"]
                for z in self._ec2.describe_availability_zones()["AvailabilityZones"]
            }
        except (BotoCoreError, ClientError) as error:
            if not self._infos:
                raise CloudProviderError(f"cannot describe EC2 instance types: {error}") from error
            log.warning("instance type refresh failed, keeping the previous catalogue: %s", error)
            self._loaded_at = self._clock.now()
            return
        self._infos, self._type_zones, self._zone_ids = infos, type_zones, zone_ids
        self._loaded_at = self._clock.now()
        self.generation += 1

    def export(self) -> dict[str, Any]:
        """What was loaded, as plain JSON-able data (for a cache on disk)."""
        self._refresh_if_due()
        return {
            "infos": self._infos,
            "typeZones": {name: sorted(zones) for name, zones in self._type_zones.items()},
            "zoneIds": self._zone_ids,
        }

    def preload(self, exported: Mapping[str, Any]) -> None:
        """Start from an ``export()`` instead of describing (the simulator's disk cache);
        the refresh interval then counts from now."""
        self._infos = dict(exported["infos"])
        self._type_zones = {n: frozenset(z) for n, z in exported["typeZones"].items()}
        self._zone_ids = dict(exported["zoneIds"])
        self._loaded_at = self._clock.now()
        self.generation += 1

    def _refresh_if_due(self) -> None:
        if self._loaded_at is None or self._clock.now() - self._loaded_at >= self._refresh_seconds:
            self.refresh()

    def _describe_instance_types(self) -> dict[str, dict[str, Any]]:
        infos: dict[str, dict[str, Any]] = {}
        for page in self._ec2.get_paginator("describe_instance_types").paginate():
            for info in page["InstanceTypes"]:
                if architecture(info) is not None:
                    infos[info["InstanceType"]] = info
        return infos

    def _describe_offerings(self) -> dict[str, frozenset[str]]:
        zones: dict[str, set[str]] = {}
        paginator = self._ec2.get_paginator("describe_instance_type_offerings")
        for page in paginator.paginate(LocationType="availability-zone"):
            for offering in page["InstanceTypeOfferings"]:
                zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        return {name: frozenset(z) for name, z in zones.items()}


@dataclass(frozen=True)
class TypeSettings:
    """What, besides the EC2 entry, shapes a type's capacity and overhead: the
    controller settings and the node class (kubelet, volumes, AMI family)."""

    region: str
    kubelet: Mapping[str, Any]
    ami_family: str
    block_device_mappings: tuple[Mapping[str, Any], ...]
    instance_store_policy: str | None = None
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT
    reserved_enis: int = 0

    @classmethod
    def for_nodeclass(
        cls,
        nodeclass: EC2NodeClass,
        region: str,
        vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
        reserved_enis: int = 0,
    ) -> TypeSettings:
        return cls(
            region=region,
            kubelet=readable_kubelet(nodeclass.kubelet),
            ami_family=nodeclass.resolved_ami_family(),
            block_device_mappings=tuple(nodeclass.effective_block_device_mappings()),
            instance_store_policy=nodeclass.instance_store_policy,
            vm_memory_overhead_percent=vm_memory_overhead_percent,
            reserved_enis=reserved_enis,
        )


# --- labels --------------------------------------------------------------------------


def architecture(info: Mapping[str, Any]) -> str | None:
    """kubernetes.io/arch of a type, None when it has no Kubernetes architecture."""
    for arch in info.get("ProcessorInfo", {}).get("SupportedArchitectures", ()):
        if arch in ARCHITECTURES:
            return ARCHITECTURES[arch]
    return None


def vcpus(info: Mapping[str, Any]) -> int:
    return int(info["VCpuInfo"]["DefaultVCpus"])


def type_labels(info: Mapping[str, Any], region: str, os: str = "linux") -> dict[str, str]:
    """Every well-known label a node of this type carries (zone/capacity type excluded)."""
    name = info["InstanceType"]
    labels = wk.instance_type_labels(name)
    labels.update(
        {
            wk.ARCH: architecture(info) or "",
            wk.OS: os,
            wk.REGION: region,
            wk.INSTANCE_CPU: str(vcpus(info)),
            wk.INSTANCE_MEMORY: str(info["MemoryInfo"]["SizeInMiB"]),
            wk.INSTANCE_HYPERVISOR: info.get("Hypervisor") or "",
            wk.INSTANCE_ENCRYPTION_IN_TRANSIT: str(
                bool(info.get("NetworkInfo", {}).get("EncryptionInTransitSupported"))
            ).lower(),
        }
    )
    manufacturer = info.get("ProcessorInfo", {}).get("Manufacturer")
    if manufacturer:
        labels[wk.INSTANCE_CPU_MANUFACTURER] = manufacturer.lower()
    labels.update(_bandwidth_labels(info))
    labels.update(_storage_labels(info))
    labels.update(_gpu_labels(info))
    labels.update(_accelerator_labels(info))
    return labels


def _bandwidth_labels(info: Mapping[str, Any]) -> dict[str, str]:
    labels = {}
    cards = info.get("NetworkInfo", {}).get("NetworkCards") or []
    gbps = sum(card.get("BaselineBandwidthInGbps") or 0 for card in cards)
    if gbps:
        labels[wk.INSTANCE_NETWORK_BANDWIDTH] = str(round(gbps * 1000))
    ebs = info.get("EbsInfo", {}).get("EbsOptimizedInfo", {}).get("MaximumBandwidthInMbps")
    if ebs:
        labels[wk.INSTANCE_EBS_BANDWIDTH] = str(ebs)
    return labels


def _storage_labels(info: Mapping[str, Any]) -> dict[str, str]:
    storage = info.get("InstanceStorageInfo") or {}
    if storage.get("NvmeSupport", "unsupported") != "unsupported" and storage.get("TotalSizeInGB"):
        return {wk.INSTANCE_LOCAL_NVME: str(storage["TotalSizeInGB"])}
    return {}


def _gpu_labels(info: Mapping[str, Any]) -> dict[str, str]:
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    if not gpus:
        return {}
    gpu = gpus[0]
    return {
        wk.INSTANCE_GPU_NAME: gpu["Name"].lower(),
        wk.INSTANCE_GPU_MANUFACTURER: gpu["Manufacturer"].lower(),
        wk.INSTANCE_GPU_COUNT: str(sum(g["Count"] for g in gpus)),
        wk.INSTANCE_GPU_MEMORY: str(gpu["MemoryInfo"]["SizeInMiB"]),
    }


def _accelerators(info: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """(name, manufacturer, device count) of Inferentia/Trainium-style accelerators."""
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    if neuron:
        return neuron[0]["Name"].lower(), "aws", sum(d["Count"] for d in neuron)
    inference = (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
    if inference:
        first = inference[0]
        return (
            first["Name"].lower(),
            first["Manufacturer"].lower(),
            sum(a["Count"] for a in inference),
        )
    return None


def _accelerator_labels(info: Mapping[str, Any]) -> dict[str, str]:
    found = _accelerators(info)
    if found is None:
        return {}
    name, manufacturer, count = found
    return {
        wk.INSTANCE_ACCELERATOR_NAME: name,
        wk.INSTANCE_ACCELERATOR_MANUFACTURER: manufacturer,
        wk.INSTANCE_ACCELERATOR_COUNT: str(count),
    }


# Labels the offerings decide (with_offerings), or the class.
_SET_BY_OFFERINGS = frozenset({wk.EC2NODECLASS, wk.ZONE_ID, *RESERVATION_LABELS})


def type_requirements(labels: Mapping[str, str]) -> Requirements:
    """One value per label; AWS well-known labels the type lacks are DoesNotExist, so a
    pod asking for a GPU never matches a type without one."""
    requirements = Requirements(Requirement.new(k, IN, [v]) for k, v in labels.items())
    for key in sorted(wk.AWS_WELL_KNOWN_LABELS - set(labels) - _SET_BY_OFFERINGS):
        requirements.add(Requirement.new(key, DOES_NOT_EXIST))
    return requirements


# --- capacity ------------------------------------------------------------------------


def memory_capacity_mib(info: Mapping[str, Any], overhead_percent: float) -> int:
    """MiB reported by EC2, minus 64 on arm64, minus ceil(overhead% of the reported MiB)
    that the hypervisor keeps [SPEC 5]."""
    reported = int(info["MemoryInfo"]["SizeInMiB"])
    adjust = ARM64_MEMORY_ADJUST_MIB if architecture(info) == "arm64" else 0
    overhead = math.ceil(Fraction(str(overhead_percent)) * reported)
    return reported - adjust - overhead


def eni_limited_pods(info: Mapping[str, Any], reserved_enis: int = 0) -> int | None:
    """``(ENIs - reserved) x (IPv4 per ENI - 1) + 2`` with the ENIs of the default network
    card (t3.large 35, m5.xlarge 58); None when EC2 does not say."""
    network = info.get("NetworkInfo") or {}
    per_eni = network.get("Ipv4AddressesPerInterface")
    enis = network.get("MaximumNetworkInterfaces")
    default_card = network.get("DefaultNetworkCardIndex", 0)
    for card in network.get("NetworkCards") or ():
        if card.get("NetworkCardIndex") == default_card:
            enis = card.get("MaximumNetworkInterfaces", enis)
    if not per_eni or not enis:
        return None
    return max(0, enis - reserved_enis) * (per_eni - 1) + 2


def max_pods(info: Mapping[str, Any], kubelet: Mapping[str, Any], reserved_enis: int = 0) -> int:
    """kubelet.maxPods, else the ENI limit, else 110; podsPerCore caps it [SPEC 5]."""
    if kubelet.get("maxPods") is not None:
        pods = int(kubelet["maxPods"])
    else:
        eni = eni_limited_pods(info, reserved_enis)
        pods = eni if eni is not None else DEFAULT_MAX_PODS
    per_core = kubelet.get("podsPerCore")
    if per_core:
        pods = min(pods, int(per_core) * vcpus(info))
    return pods


def ephemeral_storage_bytes(info: Mapping[str, Any], settings: TypeSettings) -> int | None:
    """The kubelet's filesystem: the RAID0 of local NVMe disks when the class asks for
    it, else the root volume of the block device mappings."""
    storage = info.get("InstanceStorageInfo") or {}
    if settings.instance_store_policy == "RAID0" and storage.get("TotalSizeInGB"):
        return int(storage["TotalSizeInGB"]) * 10**9
    volume = root_volume(settings.block_device_mappings, settings.ami_family)
    size = volume_size_bytes(((volume or {}).get("ebs") or {}).get("volumeSize"))
    return int(size) if size is not None else None


def volume_size_bytes(size: str | None) -> Fraction | None:
    """An EBS volumeSize in bytes; None when absent or unreadable (the API server accepts
    "Ti" without a number): EC2 then sizes the volume from its snapshot or AMI."""
    try:
        return parse_quantity(size).value if size else None
    except QuantityError:
        return None


def root_volume(
    mappings: tuple[Mapping[str, Any], ...] | list[Mapping[str, Any]], ami_family: str
) -> Mapping[str, Any] | None:
    """The mapping marked ``rootVolume``, else the family's data volume (Bottlerocket
    /dev/xvdb), else /dev/xvda, else the first."""
    for mapping in mappings:
        if mapping.get("rootVolume"):
            return mapping
    wanted = "/dev/xvdb" if ami_family == "Bottlerocket" else "/dev/xvda"
    for mapping in mappings:
        if mapping.get("deviceName") == wanted:
            return mapping
    return mappings[0] if mappings else None


def extended_resources(info: Mapping[str, Any]) -> ResourceList:
    """GPUs and accelerators as device plugins advertise them."""
    out: ResourceList = {}
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    by_manufacturer = {"nvidia": res.NVIDIA_GPU, "amd": res.AMD_GPU, "habana": res.HABANA_GAUDI}
    for gpu in gpus:
        name = by_manufacturer.get(gpu["Manufacturer"].lower())
        if name:
            out[name] = out.get(name, 0) + gpu["Count"] * 1000
    accelerators = _accelerators(info)
    if accelerators is not None and accelerators[1] == "aws":
        out[res.AWS_NEURON] = accelerators[2] * 1000
    return out


def capacity(info: Mapping[str, Any], settings: TypeSettings) -> ResourceList:
    """cpu, memory, pods, ephemeral-storage and extended resources, in milli-units."""
    out: ResourceList = {
        res.CPU: vcpus(info) * 1000,
        res.MEMORY: memory_capacity_mib(info, settings.vm_memory_overhead_percent) * MIB * 1000,
        res.PODS: max_pods(info, settings.kubelet, settings.reserved_enis) * 1000,
    }
    storage = ephemeral_storage_bytes(info, settings)
    if storage is not None:
        out[res.EPHEMERAL_STORAGE] = storage * 1000
    out.update(extended_resources(info))
    return out


# --- overhead ------------------------------------------------------------------------


def kube_reserved_cpu_milli(cpu_milli: int) -> int:
    """6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of the rest
    (each range rounded down to a millicore, as the kubelet bootstrap scripts do)."""
    total = 0
    for start, end, numerator, denominator in _KUBE_RESERVED_CPU_RANGES:
        if cpu_milli <= start:
            break
        span = (min(cpu_milli, end) if end is not None else cpu_milli) - start
        total += span * numerator // denominator
    return total


def default_kube_reserved(cpu_milli: int, pods: int) -> ResourceList:
    return {
        res.CPU: kube_reserved_cpu_milli(cpu_milli),
        res.MEMORY: (11 * pods + 255) * MIB * 1000,
        res.EPHEMERAL_STORAGE: KUBE_RESERVED_EPHEMERAL * 1000,
    }


def _reserved(raw: Mapping[str, Any] | None) -> ResourceList:
    return res.parse_resource_list(
        {k: v for k, v in (raw or {}).items() if k in RESERVABLE_RESOURCES}
    )


def eviction_threshold(
    capacity_milli: Mapping[str, int], kubelet: Mapping[str, Any]
) -> ResourceList:
    """Hard thresholds (defaults 100Mi memory, 10% nodefs, overridable), raised to any
    larger soft threshold; percentages are of capacity, rounded up."""
    hard = {**DEFAULT_EVICTION_HARD, **(kubelet.get("evictionHard") or {})}
    out = _signal_amounts(hard, capacity_milli)
    for name, amount in _signal_amounts(kubelet.get("evictionSoft") or {}, capacity_milli).items():
        out[name] = max(out.get(name, 0), amount)
    return out


def _signal_amounts(signals: Mapping[str, Any], capacity_milli: Mapping[str, int]) -> ResourceList:
    out: ResourceList = {}
    for signal, value in signals.items():
        resource = EVICTION_SIGNALS.get(signal)
        if resource is None or resource not in capacity_milli:
            continue
        text = str(value)
        if text.endswith("%"):
            units = math.ceil(capacity_milli[resource] / 1000 * Fraction(text[:-1]) / 100)
            out[resource] = units * 1000
        else:
            out[resource] = res.milli(text)
    return out


def overhead(capacity_milli: Mapping[str, int], kubelet: Mapping[str, Any]) -> Overhead:
    """kube-reserved, system-reserved and eviction threshold [SPEC 5]."""
    kube_reserved = default_kube_reserved(capacity_milli[res.CPU], capacity_milli[res.PODS] // 1000)
    kube_reserved.update(_reserved(kubelet.get("kubeReserved")))
    return Overhead(
        kube_reserved=kube_reserved,
        system_reserved=_reserved(kubelet.get("systemReserved")),
        eviction_threshold=eviction_threshold(capacity_milli, kubelet),
    )


# --- the scheduler's view ----------------------------------------------------------


def os_for_family(ami_family: str) -> str:
    return "windows" if ami_family.startswith("Windows") else "linux"


@dataclass(frozen=True)
class TypeShape:
    """What a type is under given settings, before offerings: labels as requirements,
    capacity and overhead. Offerings change with prices and capacity; shapes do not."""

    name: str
    requirements: Requirements
    capacity: ResourceList
    overhead: Overhead


def type_shape(info: Mapping[str, Any], settings: TypeSettings) -> TypeShape:
    labels = type_labels(info, settings.region, os_for_family(settings.ami_family))
    cap = capacity(info, settings)
    return TypeShape(
        info["InstanceType"], type_requirements(labels), cap, overhead(cap, settings.kubelet)
    )


def with_offerings(
    shape: TypeShape, offerings: list[Offering], zone_ids: Mapping[str, str]
) -> InstanceType:
    """The InstanceType of a shape; zone, zone-id, capacity-type and capacity reservation
    requirements span the offerings (a type in no reservation has no reservation labels)."""
    zones = sorted({o.zone for o in offerings})
    requirements = shape.requirements.copy().add(
        Requirement.new(wk.ZONE, IN, zones),
        Requirement.new(wk.ZONE_ID, IN, sorted(zone_ids[z] for z in zones if z in zone_ids)),
        Requirement.new(wk.CAPACITY_TYPE, IN, sorted({o.capacity_type for o in offerings})),
    )
    for key in RESERVATION_LABELS:
        values = sorted({v for o in offerings if (v := o.reservation_labels().get(key))})
        requirements.add(
            Requirement.new(key, IN, values) if values else Requirement.new(key, DOES_NOT_EXIST)
        )
    return InstanceType(
        name=shape.name,
        requirements=requirements,
        offerings=offerings,
        capacity=shape.capacity,
        overhead=shape.overhead,
    )


def build_instance_type(
    info: Mapping[str, Any],
    settings: TypeSettings,
    offerings: list[Offering],
    zone_ids: Mapping[str, str],
) -> InstanceType:
    """The InstanceType of one catalogue entry under the settings, with its offerings."""
    return with_offerings(type_shape(info, settings), offerings, zone_ids)


def validate_kubelet(kubelet: Mapping[str, Any]) -> list[str]:
    """Problems with ``spec.kubelet``, each naming its field (empty when valid)."""
    problems = []
    for field in ("maxPods", "podsPerCore"):
        value = kubelet.get(field)
        minimum = 1 if field == "maxPods" else 0
        if value is not None and (not isinstance(value, int) or value < minimum):
            problems.append(f"spec.kubelet.{field} must be an integer >= {minimum}, got {value!r}")
    for field in ("kubeReserved", "systemReserved"):
        for key, value in (kubelet.get(field) or {}).items():
            if key not in (*RESERVABLE_RESOURCES, "pid"):
                problems.append(f"spec.kubelet.{field}: unknown resource {key!r}")
            elif key != "pid" and not _is_quantity(value):
                problems.append(f"spec.kubelet.{field}.{key}: invalid quantity {value!r}")
    for field in ("evictionHard", "evictionSoft"):
        for signal, value in (kubelet.get(field) or {}).items():
            text = str(value)
            ok = _is_quantity(text[:-1]) if text.endswith("%") else _is_quantity(text)
            if not ok:
                problems.append(f"spec.kubelet.{field}.{signal}: invalid threshold {value!r}")
    return problems


def _is_quantity(value: Any) -> bool:
    try:
        parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return False
    return True
