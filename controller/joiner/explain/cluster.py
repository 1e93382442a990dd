"""The controller's own state, solver and disruption pass over a ``Snapshot``.

The objects go into a ``ClusterState`` as watch events would; each CapacityBuffer is
resolved from the snapshot's PodTemplates and workloads into ``Buffers`` as the buffer
controller resolves it; a ``Provisioner`` and a ``Disruption`` are built on them exactly
as the operator builds them, with a cloud provider that answers with the snapshot's
instance types. Nothing here writes: the Kubernetes API they are given is an empty
in-memory one no answer reads back.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from joiner.api.capacitybuffer import KIND as CAPACITY_BUFFER
from joiner.api.capacitybuffer import CapacityBuffer
from joiner.api.nodepool import NodePool
from joiner.buffers.holding import Buffers
from joiner.buffers.pools import expand, pool_key
from joiner.buffers.resolution import resolve
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.context import ControllerContext
from joiner.controllers.disruption.controller import Disruption
from joiner.controllers.disruption.methods import ConsolidationOptions
from joiner.controllers.disruption.orchestration import Orchestrator
from joiner.controllers.provisioning import Provisioner
from joiner.events import EventRecorder
from joiner.explain.snapshot import KINDS, Snapshot
from joiner.kube.memory import MemoryKube
from joiner.metrics import Metrics
from joiner.state.cluster import ClusterState


class SnapshotCloud(FakeCloudProvider):
    """The instance types the snapshot recorded for each pool, as the provider gave them."""

    def __init__(self, snapshot: Snapshot, clock: FakeClock) -> None:
        super().__init__([], clock)
        self._by_pool = snapshot.instance_types

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        return self._by_pool.get(nodepool.name, ())


class Cluster:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.clock = FakeClock(snapshot.now)
        self.state = ClusterState(self.clock)
        for obj in snapshot.objects:
            self.state.apply("ADDED", obj)
        for kind in KINDS:
            self.state.mark_listed(kind)
        self.cloud = SnapshotCloud(snapshot, self.clock)
        kube = MemoryKube(self.clock)
        self._ctx = ControllerContext(
            kube, self.state, self.cloud, self.clock, EventRecorder(kube, self.clock), Metrics()
        )
        self.buffers = Buffers(self.state)
        for key, raw in self.state.objects[CAPACITY_BUFFER].items():
            self.buffers.set(
                key, resolve(CapacityBuffer.from_dict(raw), snapshot.get, snapshot.now)
            )
        for pool in self.state.nodepools.values():  # their joiner.sh/spare-capacity
            self.buffers.set(pool_key(pool.name), expand(pool))
        self.provisioner = Provisioner(self._ctx, buffers=self.buffers)

    @cached_property
    def disruption(self) -> Disruption:
        return Disruption(
            self.state,
            self.cloud,
            self.clock,
            self.provisioner,
            Orchestrator(self._ctx),
            lambda key: None,
            ConsolidationOptions(spot_to_spot=self.snapshot.spot_to_spot),
            self._ctx.recorder,
            self._ctx.metrics,
            self.buffers,
        )

    @cached_property
    def decision(self) -> tuple:
        """(command, method, why each node was passed over) of a pass now."""
        return self.disruption.decide_now()

    def instance_types(self, pool: NodePool) -> Sequence[InstanceType]:
        return self.cloud.get_instance_types(pool)
