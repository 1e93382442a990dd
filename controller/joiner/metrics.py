"""Prometheus metrics [SPEC 11]. Names follow Karpenter's so dashboards port.

Each ``Metrics`` has its own registry, so several controllers (tests, the
simulator) can live in one process without colliding.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.nodeclaims_created = Counter(
            "karpenter_nodeclaims_created",
            "NodeClaims created.",
            ["nodepool", "reason"],
            registry=r,
        )
        self.nodeclaims_terminated = Counter(
            "karpenter_nodeclaims_terminated", "NodeClaims terminated.", ["nodepool"], registry=r
        )
        self.nodeclaims_disrupted = Counter(
            "karpenter_nodeclaims_disrupted",
            "NodeClaims disrupted, by reason.",
            ["nodepool", "reason"],
            registry=r,
        )
        self.nodeclaims_unhealthy_disrupted = Counter(
            "karpenter_nodeclaims_unhealthy_disrupted",
            "Unhealthy NodeClaims node repair replaced, by the node condition, the pool, the "
            "capacity type and the image.",
            ["condition", "nodepool", "capacity_type", "image_id"],
            registry=r,
        )
        self.node_repair_blocked = Counter(
            "karpenter_node_repair_blocked",
            "Node repairs deferred because too many of a pool's nodes are unhealthy; every "
            "deferral counts, repeated ones too.",
            ["nodepool", "gate"],
            registry=r,
        )
        self.node_repair_unhealthy_duration = Histogram(
            "karpenter_node_repair_unhealthy_duration_seconds",
            "Time from the unhealthy condition's transition to the NodeClaim's deletion.",
            ["nodepool", "condition"],
            buckets=(60, 300, 600, 900, 1200, 1800, 2400, 3600, 7200, 14400),
            registry=r,
        )
        self.pods_startup_duration = Histogram(
            "karpenter_pods_startup_duration_seconds",
            "Time from pod creation to running.",
            buckets=(1, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600),
            registry=r,
        )
        self.scheduling_duration = Histogram(
            "karpenter_scheduler_scheduling_duration_seconds",
            "Compute time of one scheduling simulation.",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.unschedulable_pods = Gauge(
            "karpenter_scheduler_unschedulable_pods_count",
            "Pods the last scheduling pass could not place.",
            registry=r,
        )
        self.pending_pods = Gauge(
            "karpenter_pods_pending", "Provisionable pods waiting for capacity.", registry=r
        )
        self.nodepool_usage = Gauge(
            "karpenter_nodepools_usage",
            "Resources used by a NodePool's nodes.",
            ["nodepool", "resource_type"],
            registry=r,
        )
        self.nodepool_limit = Gauge(
            "karpenter_nodepools_limit",
            "A NodePool's resource limits.",
            ["nodepool", "resource_type"],
            registry=r,
        )
        self.cluster_state_synced = Gauge(
            "karpenter_cluster_state_synced",
            "1 when the controller's view of the cluster is complete.",
            registry=r,
        )
        self.interruption_messages = Counter(
            "karpenter_interruption_received_messages",
            "Interruption queue messages received, by kind.",
            ["message_type"],
            registry=r,
        )
        self.interruption_actions = Counter(
            "karpenter_interruption_actions_performed",
            "Actions taken on interruption messages.",
            ["action_type"],
            registry=r,
        )
        self.offering_price = Gauge(
            "karpenter_cloudprovider_instance_type_offering_price_estimate",
            "Price estimate of an instance type offering (USD per hour).",
            ["instance_type", "capacity_type", "zone"],
            registry=r,
        )
        self.disruption_decisions = Counter(
            "karpenter_voluntary_disruption_decisions",
            "Disruption decisions, by decision and reason.",
            ["decision", "reason"],
            registry=r,
        )
        self.consolidation_score = Histogram(
            "karpenter_consolidation_score",
            "Scores of the consolidation moves of Balanced pools, by decision.",
            ["decision", "nodepool", "policy"],
            buckets=(0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0),
            registry=r,
        )
        self.consolidation_moves = Counter(
            "karpenter_consolidation_moves",
            "Consolidation moves of every policy, by decision (only Balanced rejects).",
            ["decision", "nodepool", "policy"],
            registry=r,
        )
        self.rebalance_moves = Counter(
            "joiner_rebalance_moves",
            "Rebalancer moves carried out, by NodePool.",
            ["nodepool"],
            registry=r,
        )
        self.rebalance_evictions = Counter(
            "joiner_rebalance_evictions",
            "Pods the rebalancer's moves evicted, by NodePool.",
            ["nodepool"],
            registry=r,
        )
        self.rebalance_saving = Counter(
            "joiner_rebalance_saving_dollars_per_hour",
            "What the rebalancer's moves saved, $/hour at the worst launch price, summed over "
            "moves, by NodePool.",
            ["nodepool"],
            registry=r,
        )
        self.background_failures = Counter(
            "joiner_background_loop_failures",
            "Failures of a background loop (the watches, the interruption queue poller, "
            "leader election), by loop; each is logged and retried after a backoff.",
            ["loop"],
            registry=r,
        )
        self.buffer_chunks_wanted = Gauge(
            "joiner_capacitybuffers_chunks_wanted",
            "The chunks a CapacityBuffer resolved to (absent while it does not resolve).",
            ["namespace", "name"],
            registry=r,
        )
        self.buffer_chunks_held = Gauge(
            "joiner_capacitybuffers_chunks_held",
            "The chunks of a CapacityBuffer the cluster's nodes hold.",
            ["namespace", "name"],
            registry=r,
        )
        self.cluster_cost = Gauge(
            "joiner_cluster_cost_per_hour",
            "Price of the managed nodes, USD per hour.",
            registry=r,
        )

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)
