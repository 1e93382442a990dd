"""ClusterState: the controller's in-memory view of the cluster, fed by watches.

Every controller reads it; only watch events (``apply``) and the controller's
own bookkeeping (nominations, marks for deletion) change it. ``snapshot()``
turns it into the scheduler's input.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.clock import Clock
from joiner.jsoncopy import deep_copy
from joiner.scheduling.model import ClusterSnapshot, DaemonSet, ExistingNode, VolumeCatalog
from joiner.state.node import StateNode

T = TypeVar("T")

# A nomination holds twice the provisioning batch's longest wait, at least 10 s, as
# upstream's nominationWindow: the pods' next batch must still see the node taken.
# 20 s with the default BATCH_MAX_DURATION [SPEC 3.11].
MIN_NOMINATION_WINDOW = 10.0
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
NO_NODES: frozenset[str] = frozenset()

# Kinds the state follows; provisioning waits until each has been listed once.
WATCHED_KINDS = (
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
    "NodeOverlay",  # applied behind the NodeOverlay gate (joiner.controllers.nodeoverlay)
    "CapacityBuffer",  # held by joiner.buffers
)


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else meta.get("name", "")


def with_own_status(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of one of the state's objects for a status write: the status is the copy's
    own to change, the rest is shared with the state and must stay as it is."""
    return {**obj, "status": deep_copy(obj.get("status") or {})}


def is_terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_provisionable(pod: dict[str, Any]) -> bool:
    """[SPEC 3.1] kube-scheduler found no node, it is not bound, not preempting,
    not a daemonset or mirror pod, and not going away."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or status.get("nominatedNodeName") or meta.get("deletionTimestamp"):
        return False
    if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}) or is_terminal(pod):
        return False
    if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or ()):
        return False
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or ()
    )


def _node_provider(node: dict[str, Any] | None) -> str | None:
    return (node.get("spec") or {}).get("providerID") if node is not None else None


def _reindex(index: dict[str, list[str]], key: str, before: str | None, after: str | None) -> None:
    """Move ``key`` from the providerID it had to the one it has. Each ID lists its
    holders in the order they took it: the first is what a scan in order would find."""
    if before == after:
        return
    if before:
        holders = index.get(before, [])
        if key in holders:
            holders.remove(key)
        if not holders:
            index.pop(before, None)
    if after:
        index.setdefault(after, []).append(key)


def nomination_window(batch_max: float) -> float:
    """Seconds a nomination holds for a provisioning batch of at most ``batch_max``."""
    return max(2 * batch_max, MIN_NOMINATION_WINDOW)


def is_reschedulable(pod: Mapping[str, Any]) -> bool:
    """Whether the pod must find a new home when its node goes: not a daemonset's, mirror
    or already terminating pod."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp") or MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
        return False
    return not any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or ())


class ClusterState:
    def __init__(
        self, clock: Clock, deletion_cost_managed: bool = False, batch_max: float = 10.0
    ) -> None:
        self.clock = clock
        self.nomination_window = nomination_window(batch_max)
        # Whether this controller writes controller.kubernetes.io/pod-deletion-cost itself
        # (gate PodDeletionCostManagement): the annotation is then its own ranking, not a
        # user's word, and consolidation does not read it [PDC-6].
        self.deletion_cost_managed = deletion_cost_managed
        self.objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in WATCHED_KINDS}
        self.nodeclaims: dict[str, NodeClaim] = {}
        self.nodepools: dict[str, NodePool] = {}
        self.nodeclasses: dict[str, EC2NodeClass] = {}
        self._pods_by_node: dict[str, set[str]] = {}
        # Keys of the pods not bound to a node, in the order of ``objects["Pod"]`` (a pod
        # is bound once, and never unbound): only these can be provisionable, and a scan
        # of every pod for them on each NodeClaim deletion and batch was 3% of a
        # simulated day with thousands of pods running.
        self._unbound: dict[str, None] = {}
        # node name -> its bound pods as one tuple, rebuilt only when one of them changes:
        # a disruption pass asks for every node's pods every 10 seconds, and most nodes'
        # pods stay the same while others' change.
        self._bound: dict[str, tuple[dict[str, Any], ...]] = {}
        self._nominations: dict[str, tuple[str, float]] = {}  # pod key -> (node, until)
        self._node_nominated_until: dict[str, float] = {}
        self._last_pod_event: dict[str, float] = {}  # node name -> time a pod came or went
        self.nominations = 0  # bumps on every nomination, which is not a watched change
        # kind (Node, NodeClaim) -> providerID -> keys: every pod event looks its node's
        # NodeClaim up, so the lookup must not scan a thousand of them.
        self.marked_for_deletion: set[str] = set()
        self._listed: set[str] = set()
        self.generation = 0  # bumps on every change, so callers can cache derived views
        self._machines_generation = 0  # bumps on Node and NodeClaim changes only
        self._joined: tuple[int, list[StateNode], dict[str, StateNode]] | None = None
        self._memo: tuple[int, dict[Hashable, Any]] = (-1, {})
        # node name -> (joined node, its pods, its CSINode, the ExistingNode made of them)
        self._existing: dict[str, tuple[StateNode, tuple, Any, ExistingNode]] = {}
        # providerID -> Node key / NodeClaim name, kept as events arrive: every pod event
        # asks for its node's NodeClaim (a providerID, once set, does not change)
        self._node_by_provider: dict[str, list[str]] = {}
        self._claim_by_provider: dict[str, list[str]] = {}

    # --- feeding ---------------------------------------------------------------

    def mark_listed(self, kind: str) -> None:
        self._listed.add(kind)

    @property
    def synced(self) -> bool:
        return self._listed.issuperset(WATCHED_KINDS)

    def apply(self, event_type: str, obj: dict[str, Any]) -> frozenset[str]:
        """Take one watch event (ADDED, MODIFIED, DELETED) for a watched kind; returns the
        nodes a pod came to or left with it."""
        kind = obj.get("kind")
        if kind not in self.objects:
            return NO_NODES
        key = object_key(obj)
        previous = self.objects[kind].get(key)
        if event_type == "DELETED":
            self.objects[kind].pop(key, None)
        else:
            self.objects[kind][key] = obj
        current = None if event_type == "DELETED" else obj
        self._update_typed(kind, key, current)
        moved = NO_NODES
        if kind == "Node":
            _reindex(self._node_by_provider, key, _node_provider(previous), _node_provider(current))
        if kind == "Pod":
            moved = self._index_pod(key, previous, current)
        elif kind in ("Node", "NodeClaim"):
            self._machines_generation += 1
        self.generation += 1
        return moved

    def _update_typed(self, kind: str, key: str, obj: dict[str, Any] | None) -> None:
        typed = {
            "NodeClaim": (self.nodeclaims, NodeClaim),
            "NodePool": (self.nodepools, NodePool),
            "EC2NodeClass": (self.nodeclasses, EC2NodeClass),
        }.get(kind)
        if typed is None:
            return
        store, model = typed
        previous = store.get(key)
        if obj is None:
            store.pop(key, None)
            self.marked_for_deletion.discard(key)
        else:
            store[key] = model.from_dict(obj)
        if kind == "NodeClaim":
            _reindex(
                self._claim_by_provider,
                key,
                previous.status.provider_id if previous is not None else None,
                store[key].status.provider_id if obj is not None else None,
            )

    def _index_pod(
        self, key: str, previous: dict[str, Any] | None, current: dict[str, Any] | None
    ) -> frozenset[str]:
        old_node = self._bound_node(previous)
        new_node = self._bound_node(current)
        moved = set()
        self._bound.pop(old_node or "", None)
        self._bound.pop(new_node or "", None)
        if old_node and old_node != new_node:
            self._pods_by_node.get(old_node, set()).discard(key)
            self._last_pod_event[old_node] = self.clock.now()
            moved.add(old_node)
        if new_node and new_node != old_node:
            self._last_pod_event[new_node] = self.clock.now()
            moved.add(new_node)
        if new_node:
            self._pods_by_node.setdefault(new_node, set()).add(key)
        if new_node or current is None:
            self._nominations.pop(key, None)
        if current is None or (current.get("spec") or {}).get("nodeName"):
            self._unbound.pop(key, None)
        else:
            self._unbound[key] = None
        return frozenset(moved) if moved else NO_NODES

    @staticmethod
    def _bound_node(pod: dict[str, Any] | None) -> str | None:
        """The node a pod occupies: bound and not finished."""
        if pod is None or is_terminal(pod):
            return None
        return (pod.get("spec") or {}).get("nodeName")

    # --- nominations and marks ------------------------------------------------------

    def nominate(self, pod_key: str, node_name: str) -> None:
        until = self.clock.now() + self.nomination_window
        self._nominations[pod_key] = (node_name, until)
        self._node_nominated_until[node_name] = until
        self.nominations += 1

    def nomination(self, pod_key: str) -> str | None:
        found = self._nominations.get(pod_key)
        return found[0] if found and found[1] > self.clock.now() else None

    def last_pod_event(self, node_name: str) -> float | None:
        """When a pod was last bound to or left this node (None: never seen)."""
        return self._last_pod_event.get(node_name)

    def recently_nominated(self, node_name: str) -> bool:
        return self.nominated_until(node_name) > self.clock.now()

    def nominated_until(self, node_name: str) -> float:
        """When the node's last nomination for pending pods runs out (0: never had one)."""
        return self._node_nominated_until.get(node_name, 0.0)

    # --- views -------------------------------------------------------------------

    @property
    def pods(self) -> dict[str, dict[str, Any]]:
        return self.objects["Pod"]

    @property
    def nodes(self) -> dict[str, dict[str, Any]]:
        return self.objects["Node"]

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, remembered until the next watch event changes the state: for
        views derived from the state alone, which passes ask for again and again. The
        caller must not change what it gets back."""
        generation, values = self._memo
        if generation != self.generation:
            values = {}
            self._memo = (self.generation, values)
        if key not in values:
            values[key] = compute()
        return values[key]

    def pods_on(self, node_name: str) -> list[dict[str, Any]]:
        """The pods bound to the node, by key."""
        return list(self.bound_pods(node_name))

    def bound_pods(self, node_name: str) -> tuple[dict[str, Any], ...]:
        """The pods bound to the node, by key: the same tuple object until one of them
        changes, so that callers can remember what they work out from it by identity."""
        pods = self._bound.get(node_name)
        if pods is None:
            keys = sorted(self._pods_by_node.get(node_name, ()))
            pods = self._bound[node_name] = tuple(self.pods[k] for k in keys if k in self.pods)
        return pods

    def provisionable_pods(self) -> list[dict[str, Any]]:
        pods = self.pods
        return [pods[key] for key in self._unbound if is_provisionable(pods[key])]

    def state_nodes(self) -> list[StateNode]:
        """Every NodeClaim (joined with its Node by providerID) and every unmanaged Node."""
        return list(self._join()[1])

    def node_by_provider_id(self, provider_id: str | None) -> dict[str, Any] | None:
        """The Node registered for an instance (None before registration)."""
        keys = self._node_by_provider.get(provider_id) if provider_id else None
        return self.nodes[keys[0]] if keys else None

    def nodeclaim_by_provider_id(self, provider_id: str | None) -> NodeClaim | None:
        """The NodeClaim that launched an instance."""
        names = self._claim_by_provider.get(provider_id) if provider_id else None
        return self.nodeclaims[names[0]] if names else None

    def state_node(self, name: str) -> StateNode | None:
        return self._join()[2].get(name)

    def _join(self) -> tuple[int, list[StateNode], dict[str, StateNode]]:
        """The joined view, rebuilt only when a Node or NodeClaim changed: controllers ask
        for it many times per pass, and pod events (thousands a second) do not touch it."""
        if self._joined is None or self._joined[0] != self._machines_generation:
            joined = self._build_state_nodes()
            by_name: dict[str, StateNode] = {}
            for sn in joined:
                by_name.setdefault(sn.name, sn)  # the first, as a scan in order would find
            self._joined = (self._machines_generation, joined, by_name)
        return self._joined

    def _build_state_nodes(self) -> list[StateNode]:
        by_provider = {
            (n.get("spec") or {}).get("providerID"): n
            for n in self.nodes.values()
            if (n.get("spec") or {}).get("providerID")
        }
        joined: list[StateNode] = []
        claimed: set[str] = set()
        for name in sorted(self.nodeclaims):
            claim = self.nodeclaims[name]
            node = by_provider.get(claim.status.provider_id) if claim.status.provider_id else None
            if node is not None:
                claimed.add(node["metadata"]["name"])
            joined.append(StateNode(nodeclaim=claim, node=node))
        joined.extend(
            StateNode(node=node) for name, node in sorted(self.nodes.items()) if name not in claimed
        )
        return joined

    def nodepool_usage(self, nodepool: str) -> res.ResourceList:
        """Sum of the capacity of a pool's nodes (in flight included), plus a node count."""
        usage: res.ResourceList = {}
        count = 0
        for sn in self.state_nodes():
            if sn.nodepool == nodepool and sn.managed:
                usage = res.add(usage, sn.capacity)
                count += 1
        usage[res.NODES] = count * 1000
        return usage

    def leaving(self, sn: StateNode) -> bool:
        """The node is going away: being deleted, or marked for deletion (by its own name or
        its NodeClaim's) by a disruption command."""
        marked = self.marked_for_deletion
        claim_marked = sn.nodeclaim is not None and sn.nodeclaim.name in marked
        return sn.deleting or sn.name in marked or claim_marked

    def leaving_pods(self) -> list[dict[str, Any]]:
        """The reschedulable pods of the nodes going away (see ``leaving``): they need a
        home too, so both the provisioner and the disruption simulations place them, as
        Karpenter's do. A pod evicted from such a node is terminating, so it is no longer
        one of them; its replacement is pending: counted once either way."""
        marks = frozenset(self.marked_for_deletion)
        return self.memo(
            ("leaving-pods", marks),
            lambda: self.reschedulable_pods(
                sn.name for sn in self.state_nodes() if self.leaving(sn)
            ),
        )

    def reschedulable_pods(self, node_names: Iterable[str]) -> list[dict[str, Any]]:
        """Pods that must find a new home if these nodes go: not daemonset, mirror,
        terminal or already terminating pods."""
        return [pod for name in node_names for pod in self.pods_on(name) if is_reschedulable(pod)]

    def snapshot(self, exclude: Iterable[str] = ()) -> ClusterSnapshot:
        """The scheduler's view: nodes that can take pods (not deleting, not marked,
        not in ``exclude``) with the pods bound to them."""
        excluded = set(exclude)
        nodes = [
            node
            for sn, node in self._existing_nodes()
            if sn.name not in excluded
            and (sn.nodeclaim is None or sn.nodeclaim.name not in self.marked_for_deletion)
        ]
        return ClusterSnapshot(
            pool_usage=self.pool_usage(),
            nodes=nodes,
            daemonsets=[
                DaemonSet(key, ((ds.get("spec") or {}).get("template")) or {})
                for key, ds in sorted(self.objects["DaemonSet"].items())
            ],
            volumes=VolumeCatalog(
                claims=self.objects["PersistentVolumeClaim"],
                volumes=self.objects["PersistentVolume"],
                storage_classes=self.objects["StorageClass"],
            ),
        )

    def pool_usage(self) -> dict[str, res.ResourceList]:
        """What each NodePool's nodes hold against its limits: every node of the pool
        that still exists, counted once each, those being deleted or disrupted included
        (they hold their capacity until they are gone), so that no replacement takes a
        pool over its limits."""

        def compute() -> dict[str, res.ResourceList]:
            usage: dict[str, res.ResourceList] = {}
            for sn in self.state_nodes():
                if sn.nodepool is not None and sn.managed:
                    used = res.add(sn.capacity or sn.allocatable, {res.NODES: 1000})
                    usage[sn.nodepool] = res.add(usage.get(sn.nodepool, {}), used)
            return usage

        return self.memo("pool-usage", compute)

    def _existing_nodes(self) -> list[tuple[StateNode, ExistingNode]]:
        """Every node not being deleted, as the scheduler sees it: built once per state
        change, since the disruption pass takes a snapshot for every simulation. The
        scheduler does not change what it is given."""

        def compute() -> list[tuple[StateNode, ExistingNode]]:
            made = [(sn, self._existing_node(sn)) for sn in self.state_nodes() if not sn.deleting]
            self._existing = {node.name: self._existing[node.name] for _, node in made}
            return made

        return self.memo("existing-nodes", compute)

    def _existing_node(self, sn: StateNode) -> ExistingNode:
        """The same object as last time while what it is made from is the same objects
        (the joined node, its pods, its CSINode): most state changes are one pod's status,
        and solvers remember per-node facts by the identity of what they are given."""
        pods = self.bound_pods(sn.name)
        csinode = self.objects["CSINode"].get(sn.name)
        last = self._existing.get(sn.name)
        if last is not None and last[0] is sn and last[1] is pods and last[2] is csinode:
            return last[3]
        existing = ExistingNode(
            name=sn.name,
            labels=dict(sn.labels),
            allocatable=sn.allocatable,
            taints=copy.deepcopy(sn.taints),
            pods=list(pods),
            initialized=sn.initialized,
            startup_taints=sn.startup_taints,
            capacity=sn.capacity or None,
            volume_limits=self._volume_limits(sn.name),
        )
        self._existing[sn.name] = (sn, pods, csinode, existing)
        return existing

    def _volume_limits(self, node_name: str) -> dict[str, int]:
        csinode = self.objects["CSINode"].get(node_name)
        if not csinode:
            return {}
        return {
            d["name"]: int((d.get("allocatable") or {}).get("count"))
            for d in (csinode.get("spec") or {}).get("drivers") or ()
            if (d.get("allocatable") or {}).get("count") is not None
        }

    def managed_nodes(self) -> list[StateNode]:
        return [sn for sn in self.state_nodes() if sn.managed]

    def nodepool_of_node(self, node: dict[str, Any]) -> str | None:
        return ((node.get("metadata") or {}).get("labels") or {}).get(wk.NODEPOOL)
