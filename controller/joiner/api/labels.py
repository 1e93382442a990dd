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
# The capacity reservation a node was launched into (capacity type reserved), and its type
# (default or capacity-block).
CAPACITY_RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = "karpenter.k8s.aws/capacity-reservation-type"

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
        CAPACITY_RESERVATION_ID,
        CAPACITY_RESERVATION_TYPE,
    }
)

# Labels upstream Karpenter's AWS provider derives for instance types (and its CRDs let a
# NodePool name) that Joiner does not derive: a requirement on one is treated like one on
# a label of your own.
# Of those, the capacity reservation, placement group and tenancy keys, which upstream's
# NodeOverlay CRD refuses.
_AWS_RESERVATION_PLACEMENT_TENANCY = frozenset(
    f"{AWS_GROUP}/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "placement-group-id",
        "placement-group-partition",
    )
)
AWS_LABELS_JOINER_DOES_NOT_DERIVE = (
    _AWS_RESERVATION_PLACEMENT_TENANCY
    | frozenset(
        f"{AWS_GROUP}/{name}"
        for name in (
            "nitro-sandbox",
            "instance-cpu-sustained-clock-speed-mhz",
            "instance-capability-flex",
        )
    )
) - {CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE}
# The keys of the karpenter.sh and karpenter.k8s.aws domains upstream's NodePool CRD lets a
# template name (karpenter.sh/nodepool is then refused by a rule of its own).
KARPENTER_LABELS_A_POOL_MAY_USE = frozenset({CAPACITY_TYPE, NODEPOOL})
AWS_LABELS_A_POOL_MAY_USE = (
    frozenset(k for k in AWS_WELL_KNOWN_LABELS if k.startswith(AWS_GROUP + "/"))
    | AWS_LABELS_JOINER_DOES_NOT_DERIVE
)

# The karpenter.k8s.aws keys upstream's NodeOverlay CRD lets a requirement name: a pool's,
# less those of capacity reservations, placement groups and tenancy.
AWS_LABELS_AN_OVERLAY_MAY_USE = AWS_LABELS_A_POOL_MAY_USE - _AWS_RESERVATION_PLACEMENT_TENANCY

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
# Label domains the kubelet forbids or Karpenter reserves, and their allowed sub-domains.
AWS_RESTRICTED_LABEL_DOMAINS = (AWS_GROUP,)
# The kubelet refuses labels of these domains (upstream's CRDs let them through).
KUBELET_RESTRICTED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")
RESTRICTED_LABEL_DOMAINS = (
    *KUBELET_RESTRICTED_LABEL_DOMAINS,
    KARPENTER_GROUP,
    *AWS_RESTRICTED_LABEL_DOMAINS,
)
LABEL_DOMAIN_EXCEPTIONS = ("kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io")

# Annotations
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
EC2NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
EC2NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODECLAIM_TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
# A pod's cost of eviction as the user sets it for consolidation (int32), read before
# POD_DELETION_COST, which Joiner writes itself under gate PodDeletionCostManagement.
DISRUPTION_COST = "karpenter.sh/disruption-cost"

# On a disruption's replacement NodeClaim: the NodeClaims it replaces, comma-separated,
# so that a restarted controller resumes the command instead of launching another.
REPLACES_ANNOTATION = "joiner.sh/replaces"
# The rebalancer's opt-in and churn budget on a NodePool (joiner.api.rebalance), and on a
# NodeClaim a rebalance move launched, when (RFC 3339): it is not moved again within the
# pool's amortisation period.
REBALANCE = "joiner.sh/rebalance"
REBALANCE_EVICTIONS_PER_HOUR = "joiner.sh/rebalance-evictions-per-hour"
REBALANCE_PODS_PER_MOVE = "joiner.sh/rebalance-pods-per-move"
REBALANCE_MIN_SAVING_PER_EVICTION = "joiner.sh/rebalance-min-saving-per-eviction"
REBALANCE_AMORTISATION = "joiner.sh/rebalance-amortisation"
REBALANCE_LAUNCHED = "joiner.sh/rebalance-launched"

# Taints
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
UNREGISTERED_TAINT_KEY = "karpenter.sh/unregistered"
DISRUPTED_TAINT = {"key": DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}
UNREGISTERED_TAINT = {"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}

# Tags Joiner owns on EC2 resources; an EC2NodeClass may not set them [SPEC 1].
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
CLUSTER_TAG_PREFIX = "kubernetes.io/cluster"

# Finalizers
TERMINATION_FINALIZER = "karpenter.sh/termination"
NODECLASS_FINALIZER = "karpenter.k8s.aws/termination"

# Instance-type name -> labels, as the AWS provider derives them: category is the leading
# letters, generation the digits after them (skipping a "-<N>tb" memory tag, so u-6tb1 is
# generation 1), e.g. c6gd.large -> category c, generation 6, family c6gd, size large.
_INSTANCE_TYPE_NAME = re.compile(r"^(?P<category>[a-z]+)(?:-[0-9]+tb)?(?P<generation>[0-9]+).*\.")


def instance_type_labels(name: str) -> dict[str, str]:
    """The labels derivable from an EC2 instance-type name alone."""
    labels = {INSTANCE_TYPE: name}
    parts = name.split(".")
    if len(parts) == 2:
        labels[INSTANCE_FAMILY], labels[INSTANCE_SIZE] = parts
    match = _INSTANCE_TYPE_NAME.match(name)
    if match:
        labels[INSTANCE_CATEGORY] = match["category"]
        labels[INSTANCE_GENERATION] = match["generation"]
    return labels


def normalize_key(key: str) -> str:
    """Map a beta alias to its stable key; other keys are returned unchanged."""
    return BETA_ALIASES.get(key, key)


def is_restricted_label(key: str) -> bool:
    """True for keys a NodePool template should not set (Karpenter's run-time rules; its
    CRDs refuse only some of them, ``joiner validate`` warns about the rest).

    Forbidden: karpenter.sh/nodepool, kubernetes.io/hostname, the karpenter.sh, kubernetes.io,
    k8s.io and karpenter.k8s.aws domains. Allowed within them: the well-known labels (except
    karpenter.sh/nodepool and karpenter.k8s.aws/ec2nodeclass), their beta aliases, and the
    node.kubernetes.io, node-restriction.kubernetes.io and kops.k8s.io sub-domains.
    """
    if key in RESTRICTED_LABELS or key == EC2NODECLASS:
        return True
    if key in WELL_KNOWN_LABELS or key in BETA_ALIASES:
        return False
    return _in_restricted_domain(key)


def is_restricted_node_label(key: str) -> bool:
    """True for labels Karpenter does not put on a node from requirements: well-known labels
    (the cloud provider sets them), kubernetes.io/hostname and reserved domains."""
    return key in WELL_KNOWN_LABELS or key in RESTRICTED_LABELS or _in_restricted_domain(key)


def _in_restricted_domain(key: str) -> bool:
    # Suffix matches on the domain, as Karpenter's validation does.
    domain = key.split("/", 1)[0] if "/" in key else ""
    if any(domain.endswith(allowed) for allowed in LABEL_DOMAIN_EXCEPTIONS):
        return False
    return any(domain.endswith(restricted) for restricted in RESTRICTED_LABEL_DOMAINS)
