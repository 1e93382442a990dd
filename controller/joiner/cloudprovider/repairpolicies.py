"""The repair policies of an EKS node [REPAIR-1]: the kubelet's Ready condition and the
conditions the EKS node monitoring agent reports, each with how long upstream Karpenter's
AWS provider tolerates it before node repair replaces the node.

The AWS provider declares these; the fake provider does too, so scenarios repair nodes
as a cluster on EKS would.
"""

from __future__ import annotations

from joiner.cloudprovider.types import RepairPolicy

READY = "Ready"
FALSE, UNKNOWN = "False", "Unknown"
MINUTE = 60.0

EKS_REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    # the kubelet's
    RepairPolicy(READY, FALSE, 30 * MINUTE),
    RepairPolicy(READY, UNKNOWN, 30 * MINUTE),
    # the EKS node monitoring agent's
    RepairPolicy("AcceleratedHardwareReady", FALSE, 10 * MINUTE),
    RepairPolicy("StorageReady", FALSE, 30 * MINUTE),
    RepairPolicy("NetworkingReady", FALSE, 30 * MINUTE),
    RepairPolicy("KernelReady", FALSE, 30 * MINUTE),
    RepairPolicy("ContainerRuntimeReady", FALSE, 30 * MINUTE),
)
