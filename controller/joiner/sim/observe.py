"""What the simulation reports: snapshots of the cluster, the life of every
NodeClaim, the events, and the totals integrated over virtual time."""

from __future__ import annotations

from typing import Any

from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import resources as res
from joiner.api.conditions import get_condition, is_true
from joiner.api.nodeclaim import NodeClaim
from joiner.buffers.provisioning import holding_of
from joiner.buffers.resolution import Resolved
from joiner.clock import Clock
from joiner.kube.api import KubeAPI
from joiner.operator import Operator
from joiner.scheduling.model import VolumeCatalog, pod_key
from joiner.scheduling.occupancy import occupancy
from joiner.sim.cloud import SimCloud
from joiner.sim.podindex import PodIndex
from joiner.sim.result import (
    BufferView,
    EventRecord,
    NodeClaimRecord,
    NodeView,
    PendingPod,
    Snapshot,
    Totals,
    cost_per_hour,
    resource_view,
)

_STAGES = (
    (nc.LAUNCHED, "launched_at"),
    (nc.REGISTERED, "registered_at"),
    (nc.INITIALIZED, "initialized_at"),
)


# (node object, its pod list, its NodeClaim, the view built from them)
_KnownView = tuple[dict[str, Any], list[dict[str, Any]], str | None, NodeView]


class Observer:
    def __init__(
        self,
        kube: KubeAPI,
        clock: Clock,
        cloud: SimCloud,
        operator: Operator,
        start: float,
        pods: PodIndex,
    ) -> None:
        self.kube, self.clock, self.cloud, self.operator = kube, clock, cloud, operator
        self.pods = pods  # fed by the world's watch
        self.start = start
        self.nodeclaims: dict[str, NodeClaimRecord] = {}
        self.events: list[EventRecord] = []
        self.totals = Totals()
        self.static_prices: dict[str, float | None] = {}
        # What account() and snapshots need besides the pods, kept up to date from the
        # watch instead of listing at every clock jump: the Nodes, and the providerID of
        # each NodeClaim (a Node is managed when a NodeClaim has its ID).
        self._nodes: dict[str, dict[str, Any]] = {}
        self._views: dict[str, _KnownView] = {}  # by node name, see _node_view
        self._claim_providers: dict[str, str] = {}
        # the record of each (kind, name, reason, message), and what each Event object
        # (by uid) has counted so far
        self._event_records: dict[tuple[str, str, str, str], EventRecord] = {}
        self._event_counts: dict[str, int] = {}

    def elapsed(self) -> float:
        return self.clock.now() - self.start

    # --- fed by the world's watch -------------------------------------------------------

    def on_nodeclaim(self, event_type: str, claim: dict[str, Any]) -> None:
        name = claim["metadata"]["name"]
        record = self.nodeclaims.get(name)
        if record is None:
            record = NodeClaimRecord(
                name=name,
                nodepool=(claim["metadata"].get("labels") or {}).get(wk.NODEPOOL, ""),
                created_at=self.elapsed(),
                instance_types=NodeClaim.from_dict(claim).instance_type_candidates(),
            )
            self.nodeclaims[name] = record
            self.totals.nodeclaims_created += 1
        provider_id = (claim.get("status") or {}).get("providerID")
        if event_type == "DELETED" or not provider_id:
            self._claim_providers.pop(name, None)
        else:
            self._claim_providers[name] = provider_id
        if event_type == "DELETED":
            if record.deleted_at is None:
                record.deleted_at = self.elapsed()
                self.totals.nodeclaims_deleted += 1
            return
        self._update_record(record, claim)

    def _update_record(self, record: NodeClaimRecord, claim: dict[str, Any]) -> None:
        conditions = (claim.get("status") or {}).get("conditions")
        for type_, attr in _STAGES:
            if getattr(record, attr) is None and is_true(conditions, type_):
                setattr(record, attr, self.elapsed())
        labels = claim["metadata"].get("labels") or {}
        provider_id = (claim.get("status") or {}).get("providerID")
        if provider_id and record.instance_type is None:
            record.instance_type = labels.get(wk.INSTANCE_TYPE)
            record.zone = labels.get(wk.ZONE)
            record.capacity_type = labels.get(wk.CAPACITY_TYPE)
            record.price = self.cloud.instance_price(provider_id)
        # Follows the condition: an abandoned disruption clears it again.
        reason = get_condition(conditions, nc.DISRUPTION_REASON)
        record.disruption_reason = reason.get("reason") if reason is not None else None

    def on_node(self, event_type: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if event_type == "DELETED":
            self._nodes.pop(name, None)
            self._views.pop(name, None)
        else:
            self._nodes[name] = node

    def unclaimed_instances(self) -> list[str]:
        """Provider IDs of the cloud's instances that no NodeClaim names: leaked, or a
        launch whose NodeClaim status is not written yet."""
        claimed = set(self._claim_providers.values())
        launched = (c.status.provider_id for c in self.cloud.provider.list())
        return sorted(p for p in launched if p and p not in claimed)

    def has_node(self, name: str) -> bool:
        return name in self._nodes

    def nodes(self) -> list[dict[str, Any]]:
        """The Nodes as the watch last delivered them, in list order. Do not change them."""
        return [self._nodes[name] for name in sorted(self._nodes)]

    def on_event(self, event_type: str, event: dict[str, Any]) -> None:
        """Record an Event as it is created and as its count goes up. Repeats of the
        same object, reason and message fold into the first record with a count, as the
        API server's event aggregation does, so the log grows with what happened, not
        with how often a controller said it again."""
        uid = event["metadata"].get("uid", "")
        if event_type == "DELETED":  # expired (the API server's event TTL): told already
            self._event_counts.pop(uid, None)
            return
        count = int(event.get("count") or 1)
        added = count - self._event_counts.get(uid, 0)
        self._event_counts[uid] = count
        if added <= 0:
            return
        involved = event.get("involvedObject") or {}
        reason, message = event.get("reason", ""), event.get("message", "")
        key = (involved.get("kind", ""), involved.get("name", ""), reason, message)
        record = self._event_records.get(key)
        if record is None:
            record = EventRecord(self.elapsed(), *key, count=added)
            self._event_records[key] = record
            self.events.append(record)
        else:
            record.count += added
            record.last_time = self.elapsed()
        if reason == "Evicted":
            self.totals.evictions += added

    def operator_restarted(self, operator: Operator) -> None:
        """Pending reasons now come from the fresh operator; the restart is an event."""
        self.operator = operator
        self.totals.restarts += 1
        self._operator_event("Restarted", "operator restarted: every in-memory structure dropped")

    def leader_lost(self, loss: str) -> None:
        """The leading replica crashed (a fresh one replaces it) or paused."""
        what = "crashed, a fresh replica takes its place" if loss == "crash" else "paused"
        reason = "LeaderCrashed" if loss == "crash" else "LeaderPaused"
        self._operator_event(reason, f"the leading controller replica {what}")

    def leader_elected(self, operator: Operator, identity: str) -> None:
        """Another replica took the Lease: pending reasons now come from it."""
        self.operator = operator
        self._operator_event("LeaderElected", f"replica {identity} took the Lease")

    def _operator_event(self, reason: str, message: str) -> None:
        self.record_event("Operator", "joiner", reason, message)

    def record_event(self, kind: str, name: str, reason: str, message: str) -> None:
        """An event of the run that is not a Kubernetes Event (the operator's restarts,
        EC2's doings)."""
        self.events.append(
            EventRecord(time=self.elapsed(), kind=kind, name=name, reason=reason, message=message)
        )

    # --- integration over time ------------------------------------------------------------

    def account(self, seconds: float) -> None:
        """The cluster stayed as it is for ``seconds``: add its cost and pending time."""
        if seconds <= 0:
            return
        self.totals.cost += self.cost_per_hour() * seconds / 3600
        self.totals.pod_pending_seconds += self.pods.pending_count() * seconds

    def cost_per_hour(self) -> float:
        """What ``snapshot().cost_per_hour`` says, from the watched facts alone."""
        managed = set(self._claim_providers.values())
        prices = []
        for node in self.nodes():  # the order a snapshot sums in
            name = node["metadata"]["name"]
            provider_id = (node.get("spec") or {}).get("providerID")
            if provider_id and provider_id in managed:
                prices.append(self.cloud.instance_price(provider_id))
            else:
                prices.append(self.static_prices.get(name))
        return round(sum(p for p in prices if p is not None), 6)

    # --- snapshots -----------------------------------------------------------------------

    def snapshot(self, with_reasons: bool = True) -> Snapshot:
        claims_by_provider = {pid: name for name, pid in self._claim_providers.items()}
        nodes = [
            self._node_view(n, self.pods.on_node(n["metadata"]["name"]), claims_by_provider)
            for n in self.nodes()
        ]
        pending = [
            PendingPod(pod_key(p), self._pending_reason(p) if with_reasons else "")
            for p in self.pods.pending()
        ]
        return Snapshot(
            time=self.elapsed(),
            cost_per_hour=round(cost_per_hour(nodes), 6),
            nodes=nodes,
            pending_pods=sorted(pending, key=lambda p: p.name),
            buffers=self._buffers(),
        )

    def _buffers(self) -> list[BufferView]:
        """Each CapacityBuffer as the controller holds it now, by name."""
        buffers = self.operator.buffers
        if not buffers.resolutions:
            return []
        placement = buffers.placement()
        views = []
        for key, resolution in sorted(buffers.resolutions.items()):
            if isinstance(resolution, Resolved):
                holding = holding_of(resolution, placement, buffers.unplaceable)
                views.append(
                    BufferView(key, holding.wanted, holding.held, holding.reason, holding.why)
                )
            else:
                views.append(BufferView(key, None, 0, resolution.reason, resolution.message))
        return views

    def _node_view(
        self,
        node: dict[str, Any],
        pods: list[dict[str, Any]],
        claims_by_provider: dict[str | None, str],
    ) -> NodeView:
        """The node's view, remembered while the node object, its pod list (the index
        keeps the same list until a pod changes) and its NodeClaim stay the same."""
        provider_id = (node.get("spec") or {}).get("providerID")
        claim = claims_by_provider.get(provider_id) if provider_id else None
        known = self._views.get(node["metadata"]["name"])
        if known is None or known[0] is not node or known[1] is not pods or known[2] != claim:
            known = (node, pods, claim, self._new_node_view(node, pods, claim))
            self._views[node["metadata"]["name"]] = known
        return known[3]

    def _new_node_view(
        self, node: dict[str, Any], pods: list[dict[str, Any]], claim: str | None
    ) -> NodeView:
        meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
        labels = meta.get("labels") or {}
        provider_id = spec.get("providerID")
        requested = occupancy(pods, {}, VolumeCatalog()).requests
        return NodeView(
            name=meta["name"],
            managed=claim is not None,
            nodepool=labels.get(wk.NODEPOOL) if claim else None,
            nodeclaim=claim,
            instance_type=labels.get(wk.INSTANCE_TYPE),
            zone=labels.get(wk.ZONE),
            capacity_type=labels.get(wk.CAPACITY_TYPE),
            price=self.cloud.instance_price(provider_id)
            if claim
            else self.static_prices.get(meta["name"]),
            ready=is_true(status.get("conditions"), "Ready"),
            labels=dict(labels),
            taints=list(spec.get("taints") or []),
            allocatable=resource_view(res.parse_resource_list(status.get("allocatable"))),
            requested=resource_view(requested),
            pods=sorted(pod_key(p) for p in pods),
        )

    def _pending_reason(self, pod: dict[str, Any]) -> str:
        key = pod_key(pod)
        plan = self.operator.provisioner.last_plan
        if plan is not None and key in plan.unplaceable:
            why = plan.unplaceable[key]
            return f"{why.constraint}: {why.message}"
        nominated = self.operator.state.nomination(key)
        if nominated:
            return f"waiting for {nominated} to become ready"
        scheduled = get_condition((pod.get("status") or {}).get("conditions"), "PodScheduled")
        if scheduled and scheduled.get("message"):
            return scheduled["message"]
        return "not yet considered by the scheduler"
