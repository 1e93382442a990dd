"""What ``joiner explain`` reads: the cluster's objects as plain dicts (each with its
``kind``), the instant they were read at, and the instance types each NodePool may launch
(with their offerings' prices and availability) as the cloud provider reports them then."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.cloudprovider.types import InstanceType

Object = dict[str, Any]

# The kinds an explanation reads: what the controller's state follows and the solver and
# the disruption pass read (volumes, CSINodes and daemonsets count where pods fit).
KINDS = (
    "Node",
    "NodeClaim",
    "Pod",
    "NodePool",
    "EC2NodeClass",
    "DaemonSet",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
)


@dataclass
class Snapshot:
    objects: list[Object]
    now: float  # seconds since the epoch: budgets' schedules, expiry, do-not-disrupt read it
    instance_types: Mapping[str, Sequence[InstanceType]] = field(default_factory=dict)
    # the controller's SpotToSpotConsolidation gate (consolidation reads it)
    spot_to_spot: bool = False
