"""Wiring: one ClusterState, the controllers, and the routing of watch events to
their queues. The same ``Operator`` runs in production (``joiner controller``),
in tests and in the simulator; only the feed, the cloud and the clock differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api.annotations import annotation
from joiner.api.sparecapacity import SPARE_ANNOTATION
from joiner.buffers import controller as buffercontroller
from joiner.buffers.controller import BufferController
from joiner.buffers.holding import Buffers
from joiner.buffers.pools import pool_key
from joiner.buffers.signals import BufferSignals
from joiner.clock import Clock
from joiner.cloudprovider.overlays import OverlaidCloudProvider
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers import costmetrics, deletioncost, garbagecollection, nodeoverlay
from joiner.controllers.capacityblock import CapacityBlockExpiration, in_capacity_block
from joiner.controllers.context import ControllerContext
from joiner.controllers.costmetrics import CostMetrics
from joiner.controllers.deletioncost import PodDeletionCost
from joiner.controllers.disruption import controller as disruption
from joiner.controllers.disruption.conditions import DisruptionConditions
from joiner.controllers.disruption.expiration import Expiration
from joiner.controllers.disruption.methods import ConsolidationOptions
from joiner.controllers.disruption.orchestration import Orchestrator
from joiner.controllers.garbagecollection import GarbageCollection
from joiner.controllers.health import NodeHealth
from joiner.controllers.interruption import controller as interruption
from joiner.controllers.interruption import instancestatus
from joiner.controllers.lifecycle import NodeClaimLifecycle
from joiner.controllers.nodeclass import NodeClassStatus, Resolver
from joiner.controllers.nodeoverlay import NodeOverlays
from joiner.controllers.nodepool import NodePoolStatus
from joiner.controllers.podmetrics import PodStartupMetrics
from joiner.controllers.provisioning import BATCH_KEY, Provisioner
from joiner.controllers.runtime import Manager
from joiner.controllers.static import StaticCapacity
from joiner.controllers.termination import NodeFinalizer, Termination
from joiner.events import EventRecorder
from joiner.kube.api import KubeAPI
from joiner.metrics import Metrics
from joiner.settings import Settings
from joiner.state.cluster import WATCHED_KINDS, ClusterState, object_key

# NodePool status sums over all of a pool's nodes: coalesce the NodeClaim changes of a
# burst (hundreds in one second) into one recount.
NODEPOOL_STATUS_DELAY = 1.0
# Pods binding in a burst: one check of where the buffers' chunks are held, not one each.
BUFFER_HOLD_DELAY = 1.0


@dataclass(frozen=True)
class OperatorOptions:
    batch_idle: float = 1.0
    batch_max: float = 10.0
    events_namespace: str = "default"
    spot_to_spot_consolidation: bool = False
    node_repair: bool = False  # gate NodeRepair
    static_capacity: bool = False  # gate StaticCapacity
    node_overlay: bool = False  # gate NodeOverlay
    pod_deletion_cost: bool = False  # gate PodDeletionCostManagement
    replace_on_rebalance: bool = False  # INTERRUPTION_REPLACE_ON_REBALANCE
    nodeclaim_creates_at_once: int = 1  # see Provisioner

    @classmethod
    def from_settings(cls, settings: Settings) -> OperatorOptions:
        return cls(
            batch_idle=settings.batch_idle_duration,
            batch_max=settings.batch_max_duration,
            spot_to_spot_consolidation=settings.feature_gates.spot_to_spot_consolidation,
            node_repair=settings.feature_gates.node_repair,
            static_capacity=settings.feature_gates.static_capacity,
            node_overlay=settings.feature_gates.node_overlay,
            pod_deletion_cost=settings.feature_gates.pod_deletion_cost_management,
            replace_on_rebalance=settings.interruption_replace_on_rebalance,
        )


def validate_nothing(obj: dict) -> list:
    return []


class Operator:
    def __init__(
        self,
        kube: KubeAPI,
        cloud: CloudProvider,
        clock: Clock,
        resolve_nodeclass: Resolver,
        options: OperatorOptions | None = None,
        metrics: Metrics | None = None,
        validate: Callable[[dict], list] = validate_nothing,
        interruption_feed: interruption.InterruptionFeed | None = None,
    ) -> None:
        options = options or OperatorOptions()
        # every controller reads instance types through the overlays [OVERLAY-2]
        overlaid = OverlaidCloudProvider(cloud) if options.node_overlay else None
        cloud = overlaid or cloud
        self.kube, self.cloud, self.clock = kube, cloud, clock
        self.metrics = metrics or Metrics()
        self.state = ClusterState(
            clock, deletion_cost_managed=options.pod_deletion_cost, batch_max=options.batch_max
        )
        self.recorder = EventRecorder(kube, clock, options.events_namespace)
        self.feed: Any = None
        self._pool_generations: dict[str, int | None] = {}
        self._pool_spares: dict[str, str | None] = {}  # joiner.sh/spare-capacity, by pool
        self.manager = Manager(clock, pump=self.pump)
        ctx = ControllerContext(kube, self.state, cloud, clock, self.recorder, self.metrics)
        self.ctx = ctx
        self.buffers = Buffers(self.state, changed=self._recheck_buffers)
        self.provisioner = Provisioner(
            ctx,
            batch_idle=options.batch_idle,
            batch_max=options.batch_max,
            creates_at_once=options.nodeclaim_creates_at_once,
            buffers=self.buffers,
        )
        self.lifecycle = NodeClaimLifecycle(ctx)
        self.termination = Termination(ctx)
        self.node_finalizer = NodeFinalizer(kube, self.state)
        self.nodepool_status = NodePoolStatus(kube, self.state, clock, self.metrics, validate)
        self.nodeclass_status = NodeClassStatus(
            kube, self.state, clock, resolve_nodeclass, cloud.finalize_nodeclass
        )
        self.gc = GarbageCollection(kube, self.state, cloud, clock)
        self.pod_startup = PodStartupMetrics(clock, self.metrics)
        self.cost_metrics = CostMetrics(self.state, cloud, self.metrics)
        self.expiration = Expiration(ctx)
        self.capacity_blocks = CapacityBlockExpiration(ctx)
        self.disruption_conditions = DisruptionConditions(kube, self.state, cloud, clock)
        self.orchestrator = Orchestrator(ctx)
        self.disruption = disruption.Disruption(
            self.state,
            cloud,
            clock,
            self.provisioner,
            self.orchestrator,
            lambda key: self.manager.enqueue(self.orchestrator.name, key),
            ConsolidationOptions(spot_to_spot=options.spot_to_spot_consolidation),
            self.recorder,
            self.metrics,
            self.buffers,
        )
        self.buffer_controller = BufferController(
            kube,
            self.state,
            clock,
            self.buffers,
            self._request_buffer_capacity,
            lambda key: self.manager.enqueue(self.buffer_controller.name, key),
            BufferSignals(self.metrics, self.recorder),
        )
        for reconciler in (
            self.expiration,
            self.capacity_blocks,
            self.disruption_conditions,
            self.orchestrator,
            self.provisioner,
            self.lifecycle,
            self.termination,
            self.node_finalizer,
            self.nodepool_status,
            self.nodeclass_status,
        ):
            self.manager.register(reconciler)
        self.manager.register(self.gc, initial_keys=[garbagecollection.KEY])
        self.manager.register(self.cost_metrics, initial_keys=[costmetrics.KEY])
        self.manager.register(self.disruption, initial_keys=[disruption.KEY])
        self.manager.register(self.buffer_controller, initial_keys=[buffercontroller.HOLD_KEY])
        self.health: NodeHealth | None = None
        if options.node_repair:
            self.health = NodeHealth(ctx)
            self.manager.register(self.health)
        self.static: StaticCapacity | None = None
        if options.static_capacity:
            self.static = StaticCapacity(ctx, self.provisioner.is_ready)
            self.manager.register(self.static)
        self.overlays: NodeOverlays | None = None
        if overlaid is not None:
            self.overlays = NodeOverlays(kube, self.state, overlaid, clock, self._reprovision)
            self.manager.register(self.overlays, initial_keys=[nodeoverlay.KEY])
        self.deletion_cost: PodDeletionCost | None = None
        if options.pod_deletion_cost:
            self.deletion_cost = PodDeletionCost(kube, self.state, clock)
            self.manager.register(self.deletion_cost, initial_keys=[deletioncost.KEY])
        self.interruption: interruption.Interruption | None = None
        if interruption_feed is not None:  # INTERRUPTION_QUEUE set
            self._register_interruption(interruption_feed, options.replace_on_rebalance)

    def _register_interruption(
        self, feed: interruption.InterruptionFeed, replace_on_rebalance: bool
    ) -> None:
        self.interruption = interruption.Interruption(
            self.ctx,
            feed.receiver,
            feed.queue,
            interruption.InterruptionOptions(
                feed.poll_interval, feed.workers, replace_on_rebalance
            ),
        )
        self.manager.register(self.interruption, initial_keys=[interruption.KEY])
        if feed.ec2 is not None:
            poller = instancestatus.InstanceStatusPoller(feed.ec2, self.interruption)
            self.manager.register(poller, initial_keys=[instancestatus.KEY])

    # --- feeding -------------------------------------------------------------

    def attach(self, feed_factory: Callable[..., Any]) -> None:
        """Create the feed: ``feed_factory(kube, kinds, handler, listed)``."""
        self.feed = feed_factory(self.kube, WATCHED_KINDS, self.handle, self._listed)

    def pump(self) -> int:
        return self.feed.pump() if self.feed is not None else 0

    def _listed(self, kind: str) -> None:
        self.state.mark_listed(kind)
        self.metrics.cluster_state_synced.set(1 if self.state.synced else 0)

    def handle(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        """Update the state, then wake the controllers that care."""
        moved = self.state.apply(event_type, obj)
        if self.deletion_cost is not None and kind in ("Pod", "Node", "NodeClaim", "NodePool"):
            self.manager.enqueue(self.deletion_cost.name, deletioncost.KEY)  # at most 1/min
        if kind == "Pod":
            self._on_pod(event_type, obj, moved)
            return
        route = getattr(self, f"_on_{kind.lower()}", None)
        if route is not None:
            route(event_type, obj)

    def _on_pod(self, event_type: str, obj: dict[str, Any], moved: frozenset[str]) -> None:
        self.pod_startup.on_pod(event_type, obj)
        if event_type != "DELETED" and self.provisioner.on_pod(obj):
            self.manager.enqueue(self.provisioner.name, BATCH_KEY)
        # Only a pod coming to or leaving a node changes its NodeClaim's conditions
        # (lastPodEventTime, Consolidatable); a label or status change does not.
        for node_name in moved:
            node = self.state.nodes.get(node_name) or {}
            claim = self.state.nodeclaim_by_provider_id((node.get("spec") or {}).get("providerID"))
            if claim is not None:
                self.manager.enqueue(self.disruption_conditions.name, claim.name)
        if moved:  # a real pod may have taken the room a buffer chunk held
            self._recheck_buffers(BUFFER_HOLD_DELAY)

    def _on_nodeclaim(self, event_type: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        self._recheck_buffers(BUFFER_HOLD_DELAY)  # capacity came, changed or went
        pool = (obj["metadata"].get("labels") or {}).get(wk.NODEPOOL)
        if pool:  # one status write per pool and second, not one per NodeClaim change
            self.manager.enqueue(self.nodepool_status.name, pool, NODEPOOL_STATUS_DELAY)
            if self.static is not None:
                self.manager.enqueue(self.static.name, pool)
        if event_type == "DELETED":
            self._reprovision()
            return
        if obj["metadata"].get("deletionTimestamp"):
            self.manager.enqueue(self.termination.name, name)
        else:
            self.manager.enqueue(self.lifecycle.name, name)
            self.manager.enqueue(self.expiration.name, name)
            if in_capacity_block(obj["metadata"].get("labels") or {}):
                self.manager.enqueue(self.capacity_blocks.name, name)
            self.manager.enqueue(self.disruption_conditions.name, name)

    def _on_node(self, event_type: str, obj: dict[str, Any]) -> None:
        if event_type == "DELETED":
            return
        if self.provisioner.on_node(obj):
            self.manager.enqueue(self.provisioner.name, BATCH_KEY)
        if self.health is not None:
            self.manager.enqueue(self.health.name, obj["metadata"]["name"])
        if obj["metadata"].get("deletionTimestamp"):
            self.manager.enqueue(self.node_finalizer.name, obj["metadata"]["name"])
        claim = self.state.nodeclaim_by_provider_id((obj.get("spec") or {}).get("providerID"))
        if claim is not None:
            deleting = claim.metadata.get("deletionTimestamp")
            self.manager.enqueue(
                (self.termination if deleting else self.lifecycle).name, claim.name
            )

    def _on_nodepool(self, event_type: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        # Only a new, deleted or re-specified pool changes what can be provisioned and
        # its status; its status writes (one a second in a burst) must start neither a
        # scheduling pass each nor another status write.
        generation = None if event_type == "DELETED" else obj["metadata"].get("generation")
        respecified = self._pool_generations.get(name) != generation or generation is None
        self._pool_generations[name] = generation
        self._on_pool_spare(name, None if event_type == "DELETED" else obj, respecified)
        if not respecified:
            return
        self._reweigh_overlays()
        if event_type != "DELETED":
            self.manager.enqueue(self.nodepool_status.name, name)
            if self.static is not None:
                self.manager.enqueue(self.static.name, name)
        for claim in self.state.nodeclaims.values():
            if claim.nodepool == name:  # drift and consolidateAfter follow the pool
                self.manager.enqueue(self.disruption_conditions.name, claim.name)
        self._reprovision()

    def _on_pool_spare(self, name: str, obj: dict[str, Any] | None, respecified: bool) -> None:
        """A pool's joiner.sh/spare-capacity is expanded again when it changes (which no
        generation says) or the pool, its taints, do; not on each status write."""
        spare = annotation(obj, SPARE_ANNOTATION) if obj is not None else None
        if spare != self._pool_spares.get(name) or (spare is not None and respecified):
            self._pool_spares[name] = spare
            self.manager.enqueue(self.buffer_controller.name, pool_key(name))

    def _on_ec2nodeclass(self, event_type: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if event_type != "DELETED":
            self.manager.enqueue(self.nodeclass_status.name, name)
        for pool in self.state.nodepools.values():
            if pool.template.node_class_ref.name == name:
                self.manager.enqueue(self.nodepool_status.name, pool.name)
        for claim in self.state.nodeclaims.values():
            if claim.node_class_ref.name == name:  # drift, and the end of capacity blocks
                self.manager.enqueue(self.disruption_conditions.name, claim.name)
                if in_capacity_block(claim.labels):
                    self.manager.enqueue(self.capacity_blocks.name, claim.name)
        self._reweigh_overlays()  # the pools' instance types may differ
        self._reprovision()

    def _on_nodeoverlay(self, event_type: str, obj: dict[str, Any]) -> None:
        self._reweigh_overlays()

    def _on_capacitybuffer(self, event_type: str, obj: dict[str, Any]) -> None:
        self.manager.enqueue(self.buffer_controller.name, object_key(obj))

    def _recheck_buffers(self, delay: float = 0.0) -> None:
        """Nodes or pods changed: are the buffers' chunks still held?"""
        if self.buffers.resolutions:
            self.manager.enqueue(self.buffer_controller.name, buffercontroller.HOLD_KEY, delay)

    def _request_buffer_capacity(self) -> None:
        if self.provisioner.on_buffers():
            self.manager.enqueue(self.provisioner.name, BATCH_KEY)

    def _reweigh_overlays(self) -> None:
        """Overlays or pools changed: which overlay changes what is worked out again."""
        if self.overlays is not None:
            self.manager.enqueue(self.overlays.name, nodeoverlay.KEY)

    def _reprovision(self) -> None:
        """Capacity or pools changed: pending pods get another batch, and the buffers'
        chunks another look."""
        self._recheck_buffers()
        for pod in self.state.provisionable_pods():
            if self.provisioner.on_pod(pod):
                self.manager.enqueue(self.provisioner.name, BATCH_KEY)
                return
