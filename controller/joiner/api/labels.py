"""Every well-known label, annotation, taint and finalizer, in one place [SPEC 1]."""

from __future__ import annotations

import re

# API groups
KARPENTER_GROUP = "karpenter.sh"
AWS_GROUP = "karpenter.k8s.aws"
API_VERSION = "karpenter.sh/v1"
AWS_API_VERSION = "karpenter.k8s.aws/v1"

# Kubernetes well-known labels
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"

# Karpenter labels
NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODE_REGISTERED = "karpenter.sh/registered"
NODE_INITIALIZED = "karpenter.sh/initialized"
CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_RESERVED = "reserved"
CAPACITY_TYPES = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)

# AWS provider labels
EC2NODECLASS = "karpenter.k8s.aws/ec2nodeclass"
ZONE_ID = "topology.k8s.aws/zone-id"
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_GENERATION = "karpenter.k8s.aws/instance-generation"
INSTANCE_SIZE = "karpenter.k8s.aws/instance-size"
INSTANCE_CPU = "karpenter.k8s.aws/instance-cpu"
INSTANCE_CPU_MANUFACTURER = "karpenter.k8s.aws/instance-cpu-manufacturer"
INSTANCE_MEMORY = "karpenter.k8s.aws/instance-memory"
INSTANCE_NETWORK_BANDWIDTH = "karpenter.k8s.aws/instance-network-bandwidth"
INSTANCE_EBS_BANDWIDTH = "karpenter.k8s.aws/instance-ebs-bandwidth"
INSTANCE_LOCAL_NVME = "karpenter.k8s.aws/instance-local-nvme"
INSTANCE_HYPERVISOR = "karpenter.k8s.aws/instance-hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
INSTANCE_GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = "karpenter.k8s.aws/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
INSTANCE_GPU_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = "karpenter.k8s.aws/instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = "karpenter.k8s.aws/instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = "karpenter.k8s.aws/instance-accelerator-count"

AWS_WELL_KNOWN_LABELS = frozenset(
    {
        EC2NODECLASS,
        ZONE_ID,
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_CPU,
        INSTANCE_CPU_MANUFACTURER,
        INSTANCE_MEMORY,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_EBS_BANDWIDTH,
        INSTANCE_LOCAL_NVME,
        INSTANCE_HYPERVISOR,
        INSTANCE_ENCRYPTION_IN_TRANSIT,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
    }
)

# Labels whose values come from the cloud (instance types and offerings); a pod
# may select them even when a NodePool does not mention them.
WELL_KNOWN_LABELS = (
    frozenset({NODEPOOL, CAPACITY_TYPE, INSTANCE_TYPE, ZONE, REGION, ARCH, OS, WINDOWS_BUILD})
    | AWS_WELL_KNOWN_LABELS
)

# Deprecated keys a pod may still use, and the stable key they mean.
BETA_ALIASES = {
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": REGION,
}

# Label keys a NodePool template may not set [SPEC 1].
RESTRICTED_LABELS = frozenset({NODEPOOL, HOSTNAME, NODE_REGISTERED, NODE_INITIALIZED})
RESTRICTED_LABEL_DOMAINS = ("karpenter.sh",)
AWS_RESTRICTED_LABEL_DOMAINS = ("karpenter.k8s.aws",)

# Annotations
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
EC2NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
EC2NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODECLAIM_TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# Taints
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"
DISRUPTED_TAINT = {"key": DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}
UNREGISTERED_TAINT = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}

# Finalizers
TERMINATION_FINALIZER = "karpenter.sh/termination"

# Instance-type name -> labels, e.g. c6gd.large -> category c, generation 6,
# family c6gd, size large. Letters after the generation are attributes (g, d, n...).
_INSTANCE_TYPE_NAME = re.compile(r"^(?P<category>[a-z]+?)(?P<generation>[0-9]+)[a-z0-9-]*$")


def instance_type_labels(name: str) -> dict[str, str]:
    """The labels derivable from an EC2 instance-type name alone."""
    family, _, size = name.partition(".")
    labels = {INSTANCE_TYPE: name, INSTANCE_FAMILY: family}
    if size:
        labels[INSTANCE_SIZE] = size
    match = _INSTANCE_TYPE_NAME.match(family)
    if match:
        labels[INSTANCE_CATEGORY] = match["category"]
        labels[INSTANCE_GENERATION] = match["generation"]
    return labels


def normalize_key(key: str) -> str:
    """Map a beta alias to its stable key; other keys are returned unchanged."""
    return BETA_ALIASES.get(key, key)


def is_restricted_label(key: str) -> bool:
    """True for keys a NodePool template may not set (karpenter.sh/capacity-type is allowed,
    and so are the well-known karpenter.k8s.aws/* keys)."""
    if key in RESTRICTED_LABELS:
        return True
    domain = _domain(key)
    if key != CAPACITY_TYPE and any(_within(domain, d) for d in RESTRICTED_LABEL_DOMAINS):
        return True
    return key not in AWS_WELL_KNOWN_LABELS and any(
        _within(domain, d) for d in AWS_RESTRICTED_LABEL_DOMAINS
    )


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def _within(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)
