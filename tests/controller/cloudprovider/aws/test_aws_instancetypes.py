"""Capacity, overhead and allocatable of real EC2 types (moto's catalogue is AWS's data)
[SPEC 5]; expected figures worked by hand from the formulas."""

from __future__ import annotations

import pytest
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.cloudprovider.aws.instancetypes import (
    InstanceTypeCatalogue,
    TypeSettings,
    build_instance_type,
    eni_limited_pods,
    kube_reserved_cpu_milli,
    max_pods,
    validate_kubelet,
)
from joiner.cloudprovider.types import Offering

MI = 2**20 * 1000
GI = 2**30 * 1000


def nodeclass(**spec: object) -> EC2NodeClass:
    return EC2NodeClass.from_dict(
        {
            "metadata": {"name": "default"},
            "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], **spec},
        }
    )


def build(catalogue: InstanceTypeCatalogue, name: str, **spec: object):
    settings = TypeSettings.for_nodeclass(nodeclass(**spec), "us-east-1")
    offerings = [Offering("us-east-1a", wk.CAPACITY_TYPE_ON_DEMAND, 1.0)]
    return build_instance_type(
        catalogue.infos()[name], settings, offerings, {"us-east-1a": "use1-az6"}
    )


# name: (vCPU, memory capacity Mi, pods, kube-reserved cpu m, kube-reserved memory Mi)
REAL_TYPES = {
    "m5.xlarge": (4, 15155, 58, 80, 893),
    "t3.large": (2, 7577, 35, 70, 640),  # burstable
    "t4g.medium": (2, 3724, 17, 70, 442),  # burstable arm64 (64Mi less)
    "m6g.large": (2, 7513, 29, 70, 574),  # arm64
    "c6gd.large": (2, 3724, 29, 70, 574),  # arm64, local NVMe
    "m7i.large": (2, 7577, 29, 70, 574),
    "p4d.24xlarge": (96, 1091174, 737, 310, 8362),  # 8 GPUs, 4 network cards
    "g4dn.xlarge": (4, 15155, 29, 80, 574),  # GPU
    "g5g.xlarge": (4, 7513, 58, 80, 893),  # arm64 GPU
    "m5.metal": (96, 363724, 737, 310, 8362),  # metal
    "trn1.2xlarge": (8, 30310, 58, 90, 893),  # Trainium
    "inf1.xlarge": (4, 7577, 38, 80, 673),  # Inferentia
}


@pytest.mark.parametrize("name", sorted(REAL_TYPES))
def test_capacity_overhead_and_allocatable(catalogue: InstanceTypeCatalogue, name: str) -> None:
    cpus, memory_mi, pods, reserved_cpu, reserved_memory_mi = REAL_TYPES[name]
    it = build(catalogue, name)
    assert it.capacity[res.CPU] == cpus * 1000
    assert it.capacity[res.MEMORY] == memory_mi * MI
    assert it.capacity[res.PODS] == pods * 1000
    assert it.capacity[res.EPHEMERAL_STORAGE] == 20 * GI
    assert it.overhead.kube_reserved == {
        res.CPU: reserved_cpu,
        res.MEMORY: reserved_memory_mi * MI,
        res.EPHEMERAL_STORAGE: GI,
    }
    assert it.overhead.system_reserved == {}
    assert it.overhead.eviction_threshold == {res.MEMORY: 100 * MI, res.EPHEMERAL_STORAGE: 2 * GI}
    assert it.allocatable[res.CPU] == cpus * 1000 - reserved_cpu
    assert it.allocatable[res.MEMORY] == (memory_mi - reserved_memory_mi - 100) * MI
    assert it.allocatable[res.EPHEMERAL_STORAGE] == 17 * GI
    assert it.allocatable[res.PODS] == pods * 1000


def test_m5_xlarge_matches_the_spec_example(catalogue: InstanceTypeCatalogue) -> None:
    it = build(catalogue, "m5.xlarge")
    assert res.format_resource_list(it.overhead.kube_reserved) == {
        "cpu": "80m",
        "ephemeral-storage": "1Gi",
        "memory": "893Mi",
    }
    assert res.format_resource_list(it.allocatable)["memory"] == "14162Mi"


def test_eni_formula(catalogue: InstanceTypeCatalogue) -> None:
    infos = catalogue.infos()
    assert eni_limited_pods(infos["t3.large"]) == 35
    assert eni_limited_pods(infos["m5.xlarge"]) == 58
    assert eni_limited_pods(infos["m5.xlarge"], reserved_enis=1) == 44  # 3 x 14 + 2
    assert eni_limited_pods(infos["p4d.24xlarge"]) == 737  # default card: 15 ENIs, not 60


def test_kube_reserved_cpu_ranges() -> None:
    assert [kube_reserved_cpu_milli(c * 1000) for c in (1, 2, 3, 4, 5, 8, 96)] == [
        60,
        70,
        75,
        80,
        82,  # 2.5m for the fifth core, rounded down
        90,
        310,
    ]
    assert kube_reserved_cpu_milli(500) == 30


def test_kubelet_overrides(catalogue: InstanceTypeCatalogue) -> None:
    it = build(
        catalogue,
        "m5.xlarge",
        kubelet={
            "maxPods": 20,
            "kubeReserved": {"cpu": "200m"},
            "systemReserved": {"memory": "300Mi"},
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
    )
    assert it.capacity[res.PODS] == 20_000
    # memory reserve follows maxPods: 11 x 20 + 255
    assert it.overhead.kube_reserved == {
        res.CPU: 200,
        res.MEMORY: 475 * MI,
        res.EPHEMERAL_STORAGE: GI,
    }
    assert it.overhead.system_reserved == {res.MEMORY: 300 * MI}
    # hard 5% of 15155Mi = 757.75Mi -> rounded up in bytes; soft 1Gi is larger and wins
    assert it.overhead.eviction_threshold[res.MEMORY] == 1024 * MI
    assert it.allocatable[res.MEMORY] == (15155 - 475 - 300 - 1024) * MI


def test_pods_per_core_caps_max_pods(catalogue: InstanceTypeCatalogue) -> None:
    info = catalogue.infos()["m5.xlarge"]
    assert max_pods(info, {"podsPerCore": 10}) == 40
    assert max_pods(info, {"podsPerCore": 100}) == 58
    assert max_pods(info, {"maxPods": 200, "podsPerCore": 10}) == 40


def test_bottlerocket_ephemeral_storage_is_the_data_volume(
    catalogue: InstanceTypeCatalogue,
) -> None:
    it = build(catalogue, "m5.xlarge", amiSelectorTerms=[{"alias": "bottlerocket@latest"}])
    assert it.capacity[res.EPHEMERAL_STORAGE] == 20 * GI
    raid = build(catalogue, "c6gd.large", instanceStorePolicy="RAID0")
    assert raid.capacity[res.EPHEMERAL_STORAGE] == 118 * 10**9 * 1000


def test_a_root_volume_size_joiner_cannot_read_leaves_ephemeral_storage_unknown(
    catalogue: InstanceTypeCatalogue,
) -> None:
    mappings = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "Ti"}}]
    it = build(catalogue, "m5.xlarge", blockDeviceMappings=mappings)
    assert res.EPHEMERAL_STORAGE not in it.capacity


def test_labels_of_a_gpu_type(catalogue: InstanceTypeCatalogue) -> None:
    it = build(catalogue, "p4d.24xlarge")
    labels = {k: r.any_value() for k, r in it.requirements.items() if len(r) == 1}
    assert labels == {
        wk.INSTANCE_TYPE: "p4d.24xlarge",
        wk.INSTANCE_CATEGORY: "p",
        wk.INSTANCE_FAMILY: "p4d",
        wk.INSTANCE_GENERATION: "4",
        wk.INSTANCE_SIZE: "24xlarge",
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.REGION: "us-east-1",
        wk.INSTANCE_CPU: "96",
        wk.INSTANCE_CPU_MANUFACTURER: "intel",
        wk.INSTANCE_MEMORY: "1179648",
        wk.INSTANCE_HYPERVISOR: "nitro",
        wk.INSTANCE_ENCRYPTION_IN_TRANSIT: "true",
        wk.INSTANCE_NETWORK_BANDWIDTH: "400000",
        wk.INSTANCE_EBS_BANDWIDTH: "19000",
        wk.INSTANCE_LOCAL_NVME: "8000",
        wk.INSTANCE_GPU_NAME: "a100",
        wk.INSTANCE_GPU_MANUFACTURER: "nvidia",
        wk.INSTANCE_GPU_COUNT: "8",
        wk.INSTANCE_GPU_MEMORY: "40960",
        wk.ZONE: "us-east-1a",
        wk.ZONE_ID: "use1-az6",
        wk.CAPACITY_TYPE: wk.CAPACITY_TYPE_ON_DEMAND,
    }
    assert it.capacity[res.NVIDIA_GPU] == 8000
    assert it.requirements[wk.INSTANCE_ACCELERATOR_NAME].is_empty()  # DoesNotExist


def test_labels_of_accelerator_metal_and_arm(catalogue: InstanceTypeCatalogue) -> None:
    trn = build(catalogue, "trn1.2xlarge")
    assert trn.requirements[wk.INSTANCE_ACCELERATOR_NAME].any_value() == "trainium"
    assert trn.requirements[wk.INSTANCE_ACCELERATOR_MANUFACTURER].any_value() == "aws"
    assert trn.requirements[wk.INSTANCE_ACCELERATOR_COUNT].any_value() == "1"
    assert trn.capacity[res.AWS_NEURON] == 1000
    assert trn.requirements[wk.INSTANCE_GPU_COUNT].is_empty()
    metal = build(catalogue, "m5.metal")
    assert metal.requirements[wk.INSTANCE_HYPERVISOR].any_value() == ""
    arm = build(catalogue, "c6gd.large")
    assert arm.requirements[wk.ARCH].any_value() == "arm64"
    assert arm.requirements[wk.INSTANCE_CPU_MANUFACTURER].any_value() == "aws"
    assert arm.requirements[wk.INSTANCE_LOCAL_NVME].any_value() == "118"
    assert arm.requirements[wk.INSTANCE_NETWORK_BANDWIDTH].any_value() == "750"


def test_catalogue_keeps_only_kubernetes_architectures(catalogue: InstanceTypeCatalogue) -> None:
    infos = catalogue.infos()
    assert "mac1.metal" not in infos
    assert {"m5.xlarge", "m6g.large", "t3.large"} <= set(infos)
    assert "us-east-1a" in catalogue.type_zones()["m5.xlarge"]
    assert catalogue.zone_ids()["us-east-1a"] == "use1-az6"


def test_kubelet_settings_joiner_cannot_use_are_ignored(catalogue: InstanceTypeCatalogue) -> None:
    """Upstream's CRD keeps kubelet free-form: whatever the API server took, the types are
    built as if the unusable settings were absent [docs/compatibility.md, kubelet]."""
    plain = build(catalogue, "m5.xlarge")
    odd = build(
        catalogue,
        "m5.xlarge",
        kubelet={
            "maxPods": "lots",
            "kubeReserved": ["cpu"],
            "systemReserved": {"cpu": "-100m"},
            "evictionHard": {"memory.free": "5%"},
            "evictionSoft": {"memory.available": "1Gi"},  # no grace period
            "shutdownGracePeriod": "30s",
        },
    )
    assert (odd.capacity, odd.overhead, odd.allocatable) == (
        plain.capacity,
        plain.overhead,
        plain.allocatable,
    )
    half = build(catalogue, "m5.xlarge", kubelet={"maxPods": 20, "kubeReserved": ["cpu"]})
    assert half.capacity[res.PODS] == 20_000


def test_kubelet_validation_names_the_field() -> None:
    assert validate_kubelet({"maxPods": 0}) == [
        "spec.kubelet.maxPods must be an integer >= 1, got 0"
    ]
    assert validate_kubelet(
        {"kubeReserved": {"gpu": "1"}, "evictionHard": {"memory.available": "lots"}}
    ) == [
        "spec.kubelet.kubeReserved: unknown resource 'gpu'",
        "spec.kubelet.evictionHard.memory.available: invalid threshold 'lots'",
    ]
    assert validate_kubelet({"maxPods": 110, "evictionHard": {"nodefs.available": "15%"}}) == []
