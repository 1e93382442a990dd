"""What ``joiner explain`` reads: the cluster's objects as plain dicts (each with its
``kind``), the instant they were read at, and the instance types each NodePool may launch
(with their offerings' prices and availability) as the cloud provider reports them then."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from joiner.buffers.resolution import READ_KINDS
from joiner.cloudprovider.types import InstanceType
from joiner.kube.api import NotFound
from joiner.state.cluster import WATCHED_KINDS

Object = dict[str, Any]

# The kinds an explanation reads: those the controller's state follows, and those a
# CapacityBuffer is resolved from (its PodTemplate or workload, which the controller gets
# one at a time). NodeOverlays are left out: the instance types of a snapshot carry them
# already where they apply (a simulation reads its types through the controller's
# overlays).
KINDS = (*(kind for kind in WATCHED_KINDS if kind != "NodeOverlay"), *READ_KINDS)


@dataclass
class Snapshot:
    objects: list[Object]
    now: float  # seconds since the epoch: budgets' schedules, expiry, do-not-disrupt read it
    instance_types: Mapping[str, Sequence[InstanceType]] = field(default_factory=dict)
    # the controller's SpotToSpotConsolidation gate (consolidation reads it)
    spot_to_spot: bool = False

    def get(self, kind: str, name: str, namespace: str) -> Object:
        """One object, as the controller's get would return it (NotFound names it)."""
        for obj in self.objects:
            meta = obj.get("metadata") or {}
            if (obj["kind"], meta.get("name"), meta.get("namespace")) == (kind, name, namespace):
                return obj
        raise NotFound(f"{kind} {namespace}/{name} not found")
