"""The controllers of kube-controller-manager that the in-memory API server emulates.

On a real cluster the API server only stores; garbage collection, PodDisruptionBudget
status, namespace finalization, pod garbage collection and the node lifecycle's
condition taints are kube-controller-manager's, which reacts to what it watches a
little later. Each emulated controller here is told of every committed change, queues
the work the real one would do, and does it after the real one's delay on the store's
clock: a write returns before its consequences, and they appear in later
resourceVersions, in the same order as on a real cluster.

Delays, measured on kube-apiserver and kube-controller-manager v1.36.2 (envtest on this
2-core machine under a load average of about 12, ``python -m benchmarks kube_controllers``;
medians of 15 runs, two runs, from the answer to the write to the watch event of the
controller's work):

=======================  ==========================================================
garbage collector        ``GC_DELAY`` (3.1 and 4.6 ms; the first use of a resource
                         takes about 1.3 s while its informer starts)
disruption controller    ``DISRUPTION_DELAY`` (3.2 and 2.8 ms) after a pod, budget or
                         scale change
node lifecycle           ``NODE_LIFECYCLE_DELAY`` (15.6 and 3.6 ms) after a Node's
                         Ready condition or cordon changes
namespace controller     ``NAMESPACE_DELAY`` after the deletion (5.01-5.02 s), then pods
                         first and every other kind once no pod is left, a pass each
                         ``NAMESPACE_DELAY`` (the rest: 4.95-5.06 s after the pods went)
pod garbage collector    an orphaned pod (its Node is gone) is deleted at the first
                         check (every ``POD_GC_PERIOD``) once its Node has been gone
                         ``POD_GC_QUARANTINE`` (the controller's constants; measured
                         44 s)
=======================  ==========================================================

The store drives them: ``MemoryKube.run_controllers()`` does the work that is due and
``next_due()`` says when more will be (the simulator jumps its virtual clock there);
a threaded store runs them on its own thread.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from joiner.clock import from_rfc3339, to_rfc3339
from joiner.kube import disruption
from joiner.kube.admission import NOT_READY_TAINT_KEY, UNREACHABLE_TAINT_KEY
from joiner.kube.jsondata import clone
from joiner.kube.resources import ResourceKind
from joiner.kube.selectors import selector_from_label_selector

if TYPE_CHECKING:
    from joiner.kube.memory import Key, MemoryKube

GC_DELAY = 0.004
DISRUPTION_DELAY = 0.003
NODE_LIFECYCLE_DELAY = 0.004
NAMESPACE_DELAY = 5.0
POD_GC_QUARANTINE = 40.0
POD_GC_PERIOD = 20.0

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
SCALED_KINDS = frozenset({"ReplicaSet", "StatefulSet", "Deployment", "ReplicationController"})
# Ready condition status -> the NoSchedule taint the node lifecycle controller keeps.
_CONDITION_TAINTS = {"False": NOT_READY_TAINT_KEY, "Unknown": UNREACHABLE_TAINT_KEY}


@dataclass(frozen=True)
class Committed:
    """A change the store committed, as its controllers are told of it: the object as
    stored (as it was, when ``gone``) and what it replaced."""

    rk: ResourceKind
    key: Key
    obj: dict[str, Any]
    old: dict[str, Any] | None
    gone: bool


class DelayQueue:
    """Keys that are due at a time. A key added again while waiting keeps its earlier
    time (a work queue's de-duplication)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Hashable]] = []
        self._due: dict[Hashable, float] = {}
        self._sequence = itertools.count()

    def add(self, key: Hashable, due: float) -> None:
        if self._due.get(key, math.inf) <= due:
            return
        self._due[key] = due
        heapq.heappush(self._heap, (due, next(self._sequence), key))

    def next_due(self) -> float | None:
        while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # superseded by an earlier time
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> Iterator[Hashable]:
        """The keys due by ``now``, earliest first, including keys added meanwhile."""
        while (due := self.next_due()) is not None and due <= now:
            _, _, key = heapq.heappop(self._heap)
            del self._due[key]
            yield key

    def __len__(self) -> int:
        return len(self._due)


class EmulatedController:
    """Observes committed changes, queues keys, works them off when they are due."""

    def __init__(self, store: MemoryKube) -> None:
        self.store = store
        self.queue = DelayQueue()

    def observe(self, change: Committed) -> None:
        raise NotImplementedError

    def work(self, key: Any) -> None:
        raise NotImplementedError

    def later(self, key: Hashable, delay: float) -> None:
        self.queue.add(key, self.store.clock.now() + delay)


class GarbageCollector(EmulatedController):
    """Owner references: Background, Foreground and Orphan deletion, dangling owners."""

    def observe(self, change: Committed) -> None:
        store = self.store
        ref = (change.rk, change.key)
        old_owners = owner_uids(change.old)
        new_owners = set() if change.gone else owner_uids(change.obj)
        for owner in old_owners - new_owners:
            store._dependents.get(owner, set()).discard(ref)
            if self._waiting(owner):  # a foreground or orphaning owner may now finish
                self.later(("owner", owner), GC_DELAY)
        for owner in new_owners - old_owners:
            store._dependents.setdefault(owner, set()).add(ref)
        uid = change.obj["metadata"]["uid"]
        if change.gone:
            for dependent in sorted(store._dependents.pop(uid, set()), key=_ref_order):
                self.later(("dependent", dependent), GC_DELAY)
        else:
            if new_owners - old_owners and not all(self._standing(o) for o in new_owners):
                self.later(("dependent", ref), GC_DELAY)  # an owner is gone or going
            if change.obj["metadata"].get("deletionTimestamp") and gc_finalizers(change.obj):
                self.later(("owner", uid), GC_DELAY)

    def _waiting(self, owner_uid: str) -> bool:
        """The owner is being deleted and waits on its dependents."""
        owner = self._located(owner_uid)
        return owner is not None and bool(_deleting_gc_finalizers(owner))

    def _located(self, uid: str) -> dict[str, Any] | None:
        located = self.store._by_uid.get(uid)
        return None if located is None else self.store._tables[located[0]].get(located[1])

    def _standing(self, owner_uid: str) -> bool:
        """The owner exists and is not being deleted (a new dependent then needs nothing;
        its owner's deletion will queue it)."""
        owner = self._located(owner_uid)
        return owner is not None and not owner["metadata"].get("deletionTimestamp")

    def work(self, key: Any) -> None:
        what, target = key
        if what == "dependent":
            self._collect_dependent(*target)
        else:
            self._finish_owner(target)

    def _collect_dependent(self, rk: ResourceKind, key: Key) -> None:
        store = self.store
        obj = store._tables[rk].get(key)
        refs = [] if obj is None else obj["metadata"].get("ownerReferences") or []
        if not refs:
            return
        solid, waiting, dangling, orphaning = [], [], [], []
        for ref in refs:
            owner = store._owner(ref)
            finalizers = set() if owner is None else _deleting_gc_finalizers(owner)
            if owner is None:
                dangling.append(ref)
            elif ORPHAN_FINALIZER in finalizers:
                orphaning.append(ref)
            elif FOREGROUND_FINALIZER in finalizers:
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid or (orphaning and not waiting and not dangling):
            if len(solid) != len(refs):
                self._set_owner_references(rk, obj, solid)  # type: ignore[arg-type]
            return
        if not obj["metadata"].get("deletionTimestamp"):  # type: ignore[index]
            store._delete(rk, obj, "Foreground" if waiting else "Background", None)  # type: ignore[arg-type]

    def _set_owner_references(
        self, rk: ResourceKind, obj: dict[str, Any], refs: list[dict[str, Any]]
    ) -> None:
        new = clone(obj)
        if refs:
            new["metadata"]["ownerReferences"] = clone(refs)
        else:
            new["metadata"].pop("ownerReferences", None)
        self.store._write(rk, obj, new)

    def _finish_owner(self, uid: str) -> None:
        """Drop the orphan / foregroundDeletion finalizer once the dependents allow it."""
        store = self.store
        located = store._by_uid.get(uid)
        if located is None:
            return
        rk, owner = located[0], store._tables[located[0]].get(located[1])
        if owner is None or not owner["metadata"].get("deletionTimestamp"):
            return
        finalizers = gc_finalizers(owner)
        dependents = sorted(store._dependents.get(uid, set()), key=_ref_order)
        done = set()
        if ORPHAN_FINALIZER in finalizers:
            if dependents:
                self._queue_dependents(dependents)
            else:
                done.add(ORPHAN_FINALIZER)
        if FOREGROUND_FINALIZER in finalizers:
            if any(self._blocks_owner(d_rk, key, uid) for d_rk, key in dependents):
                self._queue_dependents(dependents)
            else:
                done.add(FOREGROUND_FINALIZER)
        if done:
            new = clone(owner)
            new["metadata"]["finalizers"] = [
                f for f in owner["metadata"]["finalizers"] if f not in done
            ]
            store._write(rk, owner, new)

    def _queue_dependents(self, dependents: list[tuple[ResourceKind, Key]]) -> None:
        for rk, key in dependents:
            obj = self.store._tables[rk].get(key)
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                self.later(("dependent", (rk, key)), GC_DELAY)

    def _blocks_owner(self, rk: ResourceKind, key: Key, owner_uid: str) -> bool:
        obj = self.store._tables[rk].get(key)
        refs = [] if obj is None else obj["metadata"].get("ownerReferences") or []
        return any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") for r in refs)


class PodGarbageCollector(EmulatedController):
    """Pods bound to a Node that does not exist are force-deleted once the Node has
    been missing for the quarantine, at the controller's next periodic check."""

    def __init__(self, store: MemoryKube) -> None:
        super().__init__(store)
        self.started = store.clock.now()

    def observe(self, change: Committed) -> None:
        store = self.store
        if store._is_node(change.rk) and change.gone:
            for pod_key in sorted(store._pods_by_node.get(change.key[1], set())):
                self._quarantine(pod_key)
        elif store._is_pod(change.rk) and not change.gone:
            node_name = (change.obj.get("spec") or {}).get("nodeName")
            newly_bound = change.old is None or not _bound(change.old)
            if node_name and not store._node_exists(node_name) and newly_bound:
                self._quarantine(change.key)

    def _quarantine(self, pod_key: Key) -> None:
        now = self.store.clock.now()
        checks = math.ceil((now + POD_GC_QUARANTINE - self.started) / POD_GC_PERIOD)
        self.queue.add(pod_key, self.started + checks * POD_GC_PERIOD)

    def work(self, key: Any) -> None:
        store = self.store
        pod_kind = store._pod_kind
        pod = store._tables[pod_kind].get(key)
        node_name = None if pod is None else (pod.get("spec") or {}).get("nodeName")
        if node_name and not store._node_exists(node_name):
            store._delete(pod_kind, pod, "Background", 0)  # type: ignore[arg-type]


class NamespaceController(EmulatedController):
    """A deleted Namespace is emptied in order, pods first, then removed."""

    def observe(self, change: Committed) -> None:
        marked = not change.gone and bool(change.obj["metadata"].get("deletionTimestamp"))
        newly = change.old is None or not change.old["metadata"].get("deletionTimestamp")
        if self.store._is_namespace(change.rk) and marked and newly:
            self.later(change.key[1], NAMESPACE_DELAY)

    def work(self, key: Any) -> None:
        store = self.store
        namespace = store._tables[store._namespace_kind].get(("", key))
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return
        if self._delete_contents(key, pods=True) or self._delete_contents(key, pods=False):
            self.later(key, NAMESPACE_DELAY)  # something is left: look again
            return
        finalized = clone(namespace)
        finalized.setdefault("spec", {})["finalizers"] = []
        store._write(store._namespace_kind, namespace, finalized)
        current = store._tables[store._namespace_kind][("", key)]
        store._commit(store._namespace_kind, ("", key), clone(current), "DELETED", current)

    def _delete_contents(self, namespace: str, pods: bool) -> int:
        """Delete the namespace's pods (or everything but pods); the number left."""
        store = self.store
        remaining = 0
        for rk, table in store._tables.items():
            if not rk.namespaced or store._is_pod(rk) != pods:
                continue
            for key in sorted(k for k in table if k[0] == namespace):
                obj = table[key]
                if not obj["metadata"].get("deletionTimestamp"):
                    store._delete(rk, obj, "Background", None)
                remaining += key in table
        return remaining


class DisruptionController(EmulatedController):
    """PodDisruptionBudget status of a namespace, after a change to its pods, budgets or
    the scale of their controllers; again when an admitted eviction's entry expires."""

    def observe(self, change: Committed) -> None:
        kind, namespace, old = change.rk.kind, change.key[0], change.old
        if kind == "PodDisruptionBudget":  # its own status writes do not trigger it
            if old is None or change.gone or old.get("spec") != change.obj.get("spec"):
                self.later(namespace, DISRUPTION_DELAY)
        elif (kind == "Pod" or kind in SCALED_KINDS) and self._has_budgets(namespace):
            self.later(namespace, DISRUPTION_DELAY)

    def _has_budgets(self, namespace: str) -> bool:
        return any(key[0] == namespace for key in self.store._tables[self.store._pdb_kind])

    def work(self, key: Any) -> None:
        store = self.store
        budgets = store._tables[store._pdb_kind]
        for budget_key in sorted(k for k in budgets if k[0] == key):
            self._sync(budgets[budget_key])

    def _sync(self, pdb: dict[str, Any]) -> None:
        store = self.store
        now = store.clock.now()
        status = disruption.compute_status(pdb, self._pods_selected_by(pdb), self._scale_of, now)
        new = clone(pdb)
        new["status"] = status
        store._write(store._pdb_kind, pdb, new)
        expiries = [
            from_rfc3339(stamp) + disruption.DISRUPTED_POD_TIMEOUT
            for stamp in (status.get("disruptedPods") or {}).values()
        ]
        if expiries:
            self.queue.add(pdb["metadata"]["namespace"], min(expiries))

    def _pods_selected_by(self, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        spec = pdb.get("spec") or {}
        if spec.get("selector") is None:
            return []  # policy/v1: a null selector selects no pods
        selector = selector_from_label_selector(spec["selector"])
        namespace = pdb["metadata"].get("namespace", "")
        pods = self.store._tables[self.store._pod_kind]
        return [
            pod
            for key, pod in sorted(pods.items())
            if key[0] == namespace and selector.matches(pod["metadata"].get("labels"))
        ]

    def _scale_of(self, ref: dict[str, Any], namespace: str) -> int | None:
        owner = self.store._owner(ref)
        if owner is None or owner.get("kind") not in SCALED_KINDS:
            return None
        if owner["kind"] == "ReplicaSet":
            refs = owner["metadata"].get("ownerReferences") or []
            deployment = next(
                (r for r in refs if r.get("controller") and r.get("kind") == "Deployment"), None
            )
            if deployment is not None:
                return self._scale_of(deployment, namespace)
        replicas = (owner.get("spec") or {}).get("replicas")
        return 1 if replicas is None else int(replicas)


class NodeLifecycleController(EmulatedController):
    """The NoSchedule taints the node lifecycle controller keeps in line with a Node:
    ``not-ready`` while Ready is False, ``unreachable`` while it is Unknown (none once
    Ready or without the condition), ``unschedulable`` while it is cordoned."""

    def observe(self, change: Committed) -> None:
        node = None if change.gone or not self.store._is_node(change.rk) else change.obj
        if node is not None and _taints_wanted(node) != _taints_held(node):
            self.later(change.key[1], NODE_LIFECYCLE_DELAY)

    def work(self, key: Any) -> None:
        store = self.store
        node = store._tables[store._node_kind].get(("", key))
        if node is None or node["metadata"].get("deletionTimestamp"):
            return
        wanted = _taints_wanted(node)
        if wanted == _taints_held(node):
            return
        new = clone(node)
        spec = new.setdefault("spec", {})
        taints = [
            t
            for t in spec.get("taints") or []
            if t.get("key") not in _MANAGED_TAINTS or t.get("key") in wanted
        ]
        held = {t.get("key") for t in taints}
        added = to_rfc3339(store.clock.now())
        taints += [
            {"key": k, "effect": "NoSchedule", "timeAdded": added} for k in sorted(wanted - held)
        ]
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
        store._write(store._node_kind, node, new)


UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
_MANAGED_TAINTS = frozenset({*_CONDITION_TAINTS.values(), UNSCHEDULABLE_TAINT_KEY})


def _taints_wanted(node: dict[str, Any]) -> set[str]:
    """The managed taints a Node should carry (none for the Ready condition without
    one: a Node that never reported is not tainted here; the real controller marks it
    Unknown after its grace period)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    wanted = set()
    if ready is not None and str(ready.get("status")) in _CONDITION_TAINTS:
        wanted.add(_CONDITION_TAINTS[str(ready.get("status"))])
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.add(UNSCHEDULABLE_TAINT_KEY)
    return wanted


def _taints_held(node: dict[str, Any]) -> set[str]:
    taints = (node.get("spec") or {}).get("taints") or []
    return {t.get("key") for t in taints if t.get("key") in _MANAGED_TAINTS}


def owner_uids(obj: dict[str, Any] | None) -> set[str]:
    if obj is None:
        return set()
    return {r.get("uid", "") for r in obj["metadata"].get("ownerReferences") or []}


def gc_finalizers(obj: dict[str, Any]) -> set[str]:
    finalizers = obj["metadata"].get("finalizers") or []
    return {f for f in finalizers if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)}


def _deleting_gc_finalizers(owner: dict[str, Any]) -> set[str]:
    if not owner["metadata"].get("deletionTimestamp"):
        return set()
    return gc_finalizers(owner)


def _bound(pod: dict[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _ref_order(ref: tuple[ResourceKind, Key]) -> tuple[str, Key]:
    return (ref[0].kind, ref[1])


class ControllerManager:
    """The emulated controllers of one store, in the order the store tells them."""

    def __init__(self, store: MemoryKube) -> None:
        self.controllers: tuple[EmulatedController, ...] = (
            GarbageCollector(store),
            PodGarbageCollector(store),
            NamespaceController(store),
            DisruptionController(store),
            NodeLifecycleController(store),
        )
        self.clock = store.clock

    def observe(self, change: Committed) -> None:
        for controller in self.controllers:
            controller.observe(change)

    def next_due(self) -> float | None:
        dues = [d for c in self.controllers if (d := c.queue.next_due()) is not None]
        return min(dues, default=None)

    def run_due(self) -> int:
        """Work off every key due by now (and what that work makes due by now)."""
        done = 0
        now = self.clock.now()
        while True:
            ran = 0
            for controller in self.controllers:
                for key in controller.queue.pop_due(now):
                    controller.work(key)
                    ran += 1
            if not ran:
                return done
            done += ran
