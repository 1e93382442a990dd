"""The memory adapter: an in-process Kubernetes API store with API server semantics.

What it keeps faithful (the simulator and the tests stand on these):
resourceVersion on every write and list; optimistic concurrency (409 Conflict on a
stale resourceVersion); uid, creationTimestamp, generateName; generation bumped by
spec writes only; the status subresource; label and field selectors; watches that
resume from a resourceVersion (410 Gone once compacted); finalizers and
deletionTimestamp; graceful pod deletion (a bound pod stays Terminating until
deleted with grace 0, as the kubelet does); owner-reference garbage collection
(Background, Foreground, Orphan); eviction checked against PodDisruptionBudgets;
the pod binding subresource.

Time comes from the injected Clock. uids and generated names come from a seeded
random source, so a simulation replays identically.

Two ways to drive it:
* Threaded (production-style manager, HTTP server): ``garbage_collection="immediate"``
  (the default). The garbage collector's work runs inside the write that caused it,
  after the write itself is committed, so dependents disappear in a later
  resourceVersion than their owner, exactly as background propagation orders them.
  Watches block in ``for event in watch`` with a timeout; the store is guarded by
  one re-entrant lock.
* Discrete-event simulator: ``garbage_collection="manual"``; the loop calls
  ``collect_garbage()`` (and ``sync_disruption_budgets()``) at the virtual times it
  chooses, and pumps watches with the non-blocking ``MemoryWatch.drain()``.

The garbage collector here also stands in for two more controllers of
kube-controller-manager: pod GC (pods bound to a Node that was deleted are
force-deleted) and the namespace controller (a deleted Namespace is Terminating,
its objects are deleted, and it goes once it is empty; creating in it is a 403).

The disruption controller is emulated lazily: PodDisruptionBudget status is
brought up to date before a PDB is read (get, list, watch start), before every
eviction and by ``sync_disruption_budgets()``.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Iterator
from typing import Any, Literal

from joiner.clock import Clock, RealClock, to_rfc3339
from joiner.kube import disruption
from joiner.kube.api import (
    AlreadyExists,
    BadRequest,
    Cause,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    NotFound,
    ObjectList,
    PatchType,
    PropagationPolicy,
    TooManyRequests,
    UnsupportedMediaType,
    WatchEvent,
    WatchEventType,
)
from joiner.kube.jsondata import clone, freeze, thaw
from joiner.kube.patch import json_merge_patch, json_patch, strategic_merge_patch
from joiner.kube.resources import Registry, ResourceKind, default_registry
from joiner.kube.selectors import (
    Matcher,
    object_matcher,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector,
)
from joiner.kube.validation import admit_create, admit_update, check_name, invalid

Key = tuple[str, str]  # (namespace or "", name)
GarbageCollection = Literal["immediate", "manual"]

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_POD_GRACE_SECONDS = 30
SHARED_OBJECTS_KEPT = 4096  # watch objects kept for the other watches, see _watched
# Kinds whose status is reset on create (the API server ignores a client's status).
_STATUS_ON_CREATE: dict[str, dict[str, Any]] = {
    "Pod": {"phase": "Pending"},
    "PersistentVolume": {"phase": "Pending"},
    "PersistentVolumeClaim": {"phase": "Pending"},
    "Namespace": {"phase": "Active"},
}
_KEEPS_STATUS_ON_CREATE = frozenset({"Node", "Event"})
_SCALED_KINDS = frozenset({"ReplicaSet", "StatefulSet", "Deployment", "ReplicationController"})
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything a spec write changes: the object minus metadata, status and type."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _resource_name(rk: ResourceKind) -> str:
    return f"{rk.plural}.{rk.group}" if rk.group else rk.plural


class _Change:
    """One committed write, kept in the watch history in frozen form only (bytes are
    compact and invisible to Python's cyclic garbage collector)."""

    __slots__ = ("blob", "old_blob", "rk", "rv", "type")

    def __init__(
        self, rv: int, rk: ResourceKind, type_: str, blob: bytes, old_blob: bytes | None
    ) -> None:
        self.rv, self.rk, self.type, self.blob, self.old_blob = rv, rk, type_, blob, old_blob


class MemoryWatch:
    """One watch on the memory store: iterate (blocking, with timeout) or drain()."""

    def __init__(
        self,
        store: MemoryKube,
        rk: ResourceKind,
        namespace: str | None,
        matcher: Matcher | None,
        timeout_seconds: float | None,
        allow_bookmarks: bool,
    ) -> None:
        self._store = store
        self.kind = rk
        self._namespace = namespace
        self._matches = matcher
        self.filtered = bool(namespace) or matcher is not None
        self._timeout = timeout_seconds
        self._allow_bookmarks = allow_bookmarks
        self._events: deque[tuple[WatchEventType, bytes]] = deque()
        self._stopped = False

    def offer(self, change: _Change, obj: dict | None = None, old: dict | None = None) -> None:
        """Queue the event this watcher sees for a change (called under the store lock).
        obj and old are the parsed forms when the caller has them; a filtered watch
        thaws them from the change otherwise."""
        if not self.filtered:
            self._events.append((change.type, change.blob))  # type: ignore[arg-type]
            return
        obj = thaw(change.blob) if obj is None else obj
        if old is None and change.old_blob is not None:
            old = thaw(change.old_blob)
        now_matches = self._selects(obj)
        if change.type == "MODIFIED":
            was_matching = old is not None and self._selects(old)
            if now_matches and not was_matching:
                self._events.append(("ADDED", change.blob))
            elif was_matching and not now_matches:
                self._events.append(("DELETED", change.blob))
            elif now_matches:
                self._events.append(("MODIFIED", change.blob))
        elif now_matches:
            self._events.append((change.type, change.blob))  # type: ignore[arg-type]

    def _selects(self, obj: dict[str, Any]) -> bool:
        if self._namespace and obj["metadata"].get("namespace") != self._namespace:
            return False
        return self._matches is None or self._matches(obj)

    def drain(self) -> list[WatchEvent]:
        """All pending events, without blocking (the simulator's pump)."""
        if not self._events:  # most drains find nothing: skip the lock (a racing event
            return []  # waits for the next drain)
        with self._store._lock:
            events, self._events = self._events, deque()
            return [WatchEvent(type_, self._store._watched(blob)) for type_, blob in events]

    def pending(self) -> int:
        with self._store._lock:
            return len(self._events)

    def stop(self) -> None:
        with self._store._changed:
            self._stopped = True
            self._store._detach(self)
            self._store._changed.notify_all()

    def __iter__(self) -> Iterator[WatchEvent]:
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while True:
            event = self._next(deadline)
            if event is None:
                break
            yield WatchEvent(event[0], thaw(event[1]))
        if self._allow_bookmarks and not self._stopped:
            yield self._store._bookmark(self.kind)
        self.stop()

    def _next(self, deadline: float | None) -> tuple[WatchEventType, bytes] | None:
        with self._store._changed:
            while not self._events and not self._stopped:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._store._changed.wait(remaining)
            if self._stopped and not self._events:
                return None
            return self._events.popleft()


class MemoryKube:
    """The KubeAPI port over an in-process store (see the module docstring)."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        registry: Registry | None = None,
        garbage_collection: GarbageCollection = "immediate",
        watch_history: int = 20_000,
        seed: int = 0,
        namespaces: tuple[str, ...] = DEFAULT_NAMESPACES,
        share_watched_objects: bool = False,
    ) -> None:
        """``share_watched_objects``: watches draining the same change get the same
        object, thawed once, instead of a copy each. Only for consumers that never edit
        what a watch gives them (the simulator's operator and emulated cluster)."""
        self.clock: Clock = clock or RealClock()
        self.registry = registry or default_registry()
        self._namespace_kind = self.registry.lookup("Namespace", "v1")
        self._gc_immediate = garbage_collection == "immediate"
        self._history_limit = watch_history
        self._random = random.Random(seed)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._rv = 0
        self._tables: dict[ResourceKind, dict[Key, dict[str, Any]]] = {
            rk: {} for rk in self.registry
        }
        # The stored objects again, frozen: reads and watch events thaw a private copy.
        self._frozen: dict[ResourceKind, dict[Key, bytes]] = {rk: {} for rk in self.registry}
        self._by_uid: dict[str, tuple[ResourceKind, Key]] = {}
        self._dependents: dict[str, set[tuple[ResourceKind, Key]]] = {}
        self._pods_by_node: dict[str, set[Key]] = {}
        self._history: list[_Change] = []
        self._compacted_through = 0  # every change with rv <= this is gone from history
        self._watchers: dict[ResourceKind, list[MemoryWatch]] = {rk: [] for rk in self.registry}
        self._gc_dependents: OrderedDict[tuple[ResourceKind, Key], None] = OrderedDict()
        self._gc_owners: OrderedDict[str, None] = OrderedDict()
        self._gc_orphan_pods: OrderedDict[Key, None] = OrderedDict()
        self._gc_namespaces: OrderedDict[str, None] = OrderedDict()
        self._pdb_dirty: OrderedDict[str, None] = OrderedDict()
        # frozen form -> its thawed object, while other watches may still drain it (the
        # bytes are held, so no id is reused); None: each watch thaws its own copy
        self._shared: dict[int, tuple[bytes, dict[str, Any]]] | None = (
            {} if share_watched_objects else None
        )
        for name in namespaces:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def _watched(self, blob: bytes) -> dict[str, Any]:
        """A drained watch event's object (see ``share_watched_objects``)."""
        if self._shared is None:
            return thaw(blob)
        found = self._shared.get(id(blob))
        if found is None:
            if len(self._shared) >= SHARED_OBJECTS_KEPT:
                self._shared.clear()
            found = self._shared[id(blob)] = (blob, thaw(blob))
        return found[1]

    # ----------------------------------------------------------------- reads

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    def get(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> dict[str, Any]:
        rk = self.registry.lookup(kind, api_version)
        with self._lock:
            if rk.kind == "PodDisruptionBudget":
                self.sync_disruption_budgets()
            self._existing(rk, name, namespace)  # NotFound when absent
            return thaw(self._frozen[rk][self._key(rk, name, namespace)])

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        api_version: str | None = None,
    ) -> ObjectList:
        rk = self.registry.lookup(kind, api_version)
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rk.kind)
        matches = object_matcher(labels, fields)
        with self._lock:
            if rk.kind == "PodDisruptionBudget":
                self.sync_disruption_budgets()
            table, frozen = self._tables[rk], self._frozen[rk]
            keys = self._candidate_keys(rk, table, fields.exact("spec.nodeName"))
            ns = namespace if rk.namespaced else None
            items = [
                thaw(frozen[key])
                for key in sorted(keys)
                if (not ns or key[0] == ns) and matches(table[key])
            ]
            return ObjectList(items, str(self._rv))

    def _candidate_keys(
        self, rk: ResourceKind, table: dict[Key, dict[str, Any]], node_name: str | None
    ) -> Any:
        if rk.kind == "Pod" and not rk.group and node_name is not None:
            return self._pods_by_node.get(node_name, set())
        return table.keys()

    def watch(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: float | None = None,
        allow_bookmarks: bool = False,
        api_version: str | None = None,
    ) -> MemoryWatch:
        """Watch a kind. Without a resourceVersion (or "0") the current objects arrive
        first as ADDED; with one, every change after it is replayed, or Gone (410) is
        raised when history that old has been compacted."""
        rk = self.registry.lookup(kind, api_version)
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rk.kind)
        matches = None if labels.empty and fields.empty else object_matcher(labels, fields)
        ns = namespace if rk.namespaced else None
        with self._lock:
            if rk.kind == "PodDisruptionBudget":
                self.sync_disruption_budgets()
            watch = MemoryWatch(self, rk, ns, matches, timeout_seconds, allow_bookmarks)
            if resource_version in (None, "", "0"):
                self._replay_state(watch, rk)
            else:
                self._replay_history(watch, rk, self._parse_rv(resource_version))
            self._watchers[rk].append(watch)
            return watch

    def _replay_state(self, watch: MemoryWatch, rk: ResourceKind) -> None:
        table, frozen = self._tables[rk], self._frozen[rk]
        for key in sorted(table):
            watch.offer(_Change(self._rv, rk, "ADDED", frozen[key], None), table[key])

    def _replay_history(self, watch: MemoryWatch, rk: ResourceKind, rv: int) -> None:
        if rv < self._compacted_through:
            raise Gone(f"too old resource version: {rv} ({self._compacted_through + 1})")
        start = 0 if not self._history else max(0, rv + 1 - self._history[0].rv)
        for change in self._history[start:]:
            if change.rk is rk:
                watch.offer(change)

    @staticmethod
    def _parse_rv(resource_version: str) -> int:
        try:
            return int(resource_version)
        except ValueError:
            raise BadRequest(f'invalid resource version "{resource_version}"') from None

    def _bookmark(self, rk: ResourceKind) -> WatchEvent:
        with self._lock:
            rv = str(self._rv)
        return WatchEvent(
            "BOOKMARK",
            {"apiVersion": rk.api_version, "kind": rk.kind, "metadata": {"resourceVersion": rv}},
        )

    def _detach(self, watch: MemoryWatch) -> None:
        watchers = self._watchers[watch.kind]
        if watch in watchers:
            watchers.remove(watch)

    def compact(self, resource_version: str | None = None) -> None:
        """Forget watch history up to resource_version (default: all of it), as etcd
        compaction does; watches resuming from before it get 410 Gone."""
        with self._lock:
            through = self._rv if resource_version is None else self._parse_rv(resource_version)
            self._history = [c for c in self._history if c.rv > through]
            self._compacted_through = max(self._compacted_through, through)

    # ----------------------------------------------------------------- writes

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        rk = self._kind_of(obj)
        with self._lock:
            new = admit_create(rk, clone(obj))
            metadata = new["metadata"]
            namespace = self._namespace_for_create(rk, metadata)
            name = metadata.get("name") or self._generate_name(rk, namespace, metadata)
            if (namespace, name) in self._tables[rk]:
                raise AlreadyExists(f'{_resource_name(rk)} "{name}" already exists')
            self._initialise(rk, new, namespace, name)
            committed = self._commit(rk, (namespace, name), new, "ADDED", None)
            self._after_write()
            return clone(committed)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace an object (PUT). A stale metadata.resourceVersion is a 409 Conflict;
        status changes are ignored for kinds with a status subresource."""
        rk = self._kind_of(obj)
        with self._lock:
            old = self._existing_for_write(rk, obj)
            self._check_resource_version(rk, old, obj, required=rk.custom)
            new = self._prepare_spec_write(rk, old, clone(obj))
            committed = self._write(rk, old, new)
            self._after_write()
            return clone(committed)

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace only the status (PUT .../status); everything else is kept."""
        rk = self._kind_of(obj)
        with self._lock:
            self._require_status_subresource(rk)
            old = self._existing_for_write(rk, obj)
            self._check_resource_version(rk, old, obj, required=False)
            committed = self._write(rk, old, self._prepare_status_write(rk, old, obj))
            self._after_write()
            return clone(committed)

    def patch(
        self,
        kind: str,
        name: str,
        patch: dict[str, Any] | list[dict[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        api_version: str | None = None,
    ) -> dict[str, Any]:
        rk = self.registry.lookup(kind, api_version)
        if subresource not in (None, "status"):
            raise NotFound(f'the server could not find the requested resource ("{subresource}")')
        with self._lock:
            if subresource == "status":
                self._require_status_subresource(rk)
            old = self._existing(rk, name, namespace)
            patched = self._apply_patch(rk, old, patch, patch_type)
            self._check_resource_version(rk, old, patched, required=False)
            if subresource == "status":
                new = self._prepare_status_write(rk, old, patched)
            else:
                new = self._prepare_spec_write(rk, old, patched)
            committed = self._write(rk, old, new)
            self._after_write()
            return clone(committed)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy = "Background",
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
        api_version: str | None = None,
    ) -> dict[str, Any]:
        """Delete; with finalizers (or a graceful pod) the object is only marked with
        deletionTimestamp. Returns the object as last stored."""
        rk = self.registry.lookup(kind, api_version)
        if propagation_policy not in ("Background", "Foreground", "Orphan"):
            raise BadRequest(f'propagationPolicy "{propagation_policy}" is not supported')
        with self._lock:
            old = self._existing(rk, name, namespace)
            self._check_preconditions(rk, old, preconditions or {})
            result = self._delete(rk, old, propagation_policy, grace_period_seconds)
            self._after_write()
            return clone(result)

    def evict(self, pod_name: str, namespace: str) -> None:
        """The Eviction subresource: 429 TooManyRequests when a PDB allows no disruption."""
        pod_kind = self.registry.lookup("Pod", "v1")
        with self._lock:
            pod = self._existing(pod_kind, pod_name, namespace)
            if not self._eviction_ignores_budgets(pod):
                self._admit_eviction(pod)
            self._delete(pod_kind, pod, "Background", None)
            self._after_write()

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """The Binding subresource: set spec.nodeName once and mark PodScheduled."""
        if not node_name:
            raise Invalid("Binding is invalid", [Cause("target.name", "Required value")])
        pod_kind = self.registry.lookup("Pod", "v1")
        with self._lock:
            pod = self._existing(pod_kind, pod_name, namespace)
            current = (pod.get("spec") or {}).get("nodeName")
            if current:
                raise Conflict(f'pod {pod_name} is already assigned to node "{current}"')
            if pod["metadata"].get("deletionTimestamp"):
                raise Conflict(f"pod {pod_name} is being deleted, cannot be assigned to a host")
            new = clone(pod)
            new.setdefault("spec", {})["nodeName"] = node_name
            self._set_condition(new, "PodScheduled", "True")
            self._write(pod_kind, pod, new)
            self._after_write()

    # ------------------------------------------------------ write helpers

    def _kind_of(self, obj: Any) -> ResourceKind:
        if not isinstance(obj, dict):
            raise Invalid("the object is not a JSON object", [Cause("", "must be an object")])
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise Invalid("Object 'Kind' is missing", [Cause("kind", "Required value")])
        api_version = obj.get("apiVersion")
        return self.registry.lookup(kind, api_version if isinstance(api_version, str) else None)

    def _key(self, rk: ResourceKind, name: str, namespace: str | None) -> Key:
        if not rk.namespaced:
            return ("", name)
        if not namespace:
            raise BadRequest(f"a namespace is required for namespaced kind {rk.kind}")
        return (namespace, name)

    def _existing(self, rk: ResourceKind, name: str, namespace: str | None) -> dict[str, Any]:
        obj = self._tables[rk].get(self._key(rk, name, namespace))
        if obj is None:
            raise NotFound(f'{_resource_name(rk)} "{name}" not found')
        return obj

    def _existing_for_write(self, rk: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            raise invalid(rk.kind, "", [Cause("metadata.name", "Required value")])
        return self._existing(rk, metadata["name"], metadata.get("namespace"))

    def _namespace_for_create(self, rk: ResourceKind, metadata: dict[str, Any]) -> str:
        if not rk.namespaced:
            return ""
        namespace = metadata.get("namespace") or "default"
        ns_obj = self._tables[self.registry.lookup("Namespace", "v1")].get(("", namespace))
        if ns_obj is None:
            raise NotFound(f'namespaces "{namespace}" not found')
        if ns_obj["metadata"].get("deletionTimestamp"):
            raise Forbidden(
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated"
            )
        return namespace

    def _generate_name(self, rk: ResourceKind, namespace: str, metadata: dict[str, Any]) -> str:
        prefix = str(metadata["generateName"])[:58]
        while True:
            name = prefix + "".join(self._random.choice(_NAME_ALPHABET) for _ in range(5))
            if (namespace, name) not in self._tables[rk]:
                break
        causes = check_name(rk.kind, name)
        if causes:
            raise invalid(rk.kind, name, [Cause("metadata.generateName", causes[0].message)])
        return name

    def _initialise(self, rk: ResourceKind, new: dict[str, Any], namespace: str, name: str) -> None:
        metadata = new["metadata"]
        for managed in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            metadata.pop(managed, None)
        metadata["name"] = name
        if namespace:
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        metadata["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        metadata["creationTimestamp"] = to_rfc3339(self.clock.now())
        metadata["generation"] = 1
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        if rk.kind in _STATUS_ON_CREATE and not rk.group:
            new["status"] = clone(_STATUS_ON_CREATE[rk.kind])
        elif rk.status_subresource and rk.kind not in _KEEPS_STATUS_ON_CREATE:
            new.pop("status", None)

    def _check_resource_version(
        self, rk: ResourceKind, old: dict[str, Any], obj: dict[str, Any], required: bool
    ) -> None:
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        wanted = metadata.get("resourceVersion")
        if not wanted:
            if required:
                raise invalid(
                    rk.kind,
                    old["metadata"]["name"],
                    [Cause("metadata.resourceVersion", "Invalid value: must be specified")],
                )
            return
        if str(wanted) != old["metadata"]["resourceVersion"]:
            raise self._conflict(rk, old)

    def _check_preconditions(
        self, rk: ResourceKind, old: dict[str, Any], preconditions: dict[str, str]
    ) -> None:
        metadata = old["metadata"]
        for field, attribute in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
            wanted = preconditions.get(field)
            if wanted and wanted != metadata[attribute]:
                raise Conflict(
                    f"Precondition failed: {field} in precondition: {wanted}, "
                    f"{field} in object meta: {metadata[attribute]}"
                )

    @staticmethod
    def _conflict(rk: ResourceKind, old: dict[str, Any]) -> Conflict:
        return Conflict(
            f'Operation cannot be fulfilled on {_resource_name(rk)} "{old["metadata"]["name"]}": '
            "the object has been modified; please apply your changes to the latest version "
            "and try again"
        )

    def _require_status_subresource(self, rk: ResourceKind) -> None:
        if not rk.status_subresource:
            raise NotFound(f"the server could not find the requested resource ({rk.kind} status)")

    def _apply_patch(
        self, rk: ResourceKind, old: dict[str, Any], patch: Any, patch_type: str
    ) -> dict[str, Any]:
        if patch_type == "merge":
            patched = json_merge_patch(old, patch)
        elif patch_type == "strategic":
            if rk.custom:
                raise UnsupportedMediaType(
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json"
                )
            patched = strategic_merge_patch(old, patch)
        elif patch_type == "json":
            patched = json_patch(old, patch)
        else:
            raise UnsupportedMediaType(f"unknown patch type {patch_type!r}")
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise invalid(rk.kind, old["metadata"]["name"], [Cause("metadata", "Required value")])
        return clone(patched)

    def _prepare_spec_write(
        self, rk: ResourceKind, old: dict[str, Any], new: dict[str, Any]
    ) -> dict[str, Any]:
        """The stored form of a main-resource write: server-owned fields come from old."""
        metadata, before = new["metadata"], old["metadata"]
        for owned in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ):
            if owned in before:
                metadata[owned] = before[owned]
            else:
                metadata.pop(owned, None)
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        if rk.status_subresource:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        new = admit_update(rk, old, new)
        self._forbid_new_finalizers(rk, old, new)
        if _spec_part(new) != _spec_part(old):
            new["metadata"]["generation"] = int(before.get("generation", 1)) + 1
        return new

    def _forbid_new_finalizers(
        self, rk: ResourceKind, old: dict[str, Any], new: dict[str, Any]
    ) -> None:
        if not old["metadata"].get("deletionTimestamp"):
            return
        added = set(new["metadata"].get("finalizers") or []) - set(
            old["metadata"].get("finalizers") or []
        )
        if added:
            raise invalid(
                rk.kind,
                old["metadata"]["name"],
                [
                    Cause(
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted",
                        "FieldValueForbidden",
                    )
                ],
            )

    @staticmethod
    def _prepare_status_write(
        rk: ResourceKind, old: dict[str, Any], obj: dict[str, Any]
    ) -> dict[str, Any]:
        """The stored form of a status write: old with only the status replaced."""
        new = clone(old)
        if "status" in obj:
            new["status"] = clone(obj["status"])
        else:
            new.pop("status", None)
        return admit_update(rk, old, new)

    def _removable(self, rk: ResourceKind, obj: dict[str, Any]) -> bool:
        """A deleting object goes once no finalizer holds it and no pod grace remains;
        a namespace only when the garbage collector has emptied it."""
        metadata = obj["metadata"]
        if metadata.get("finalizers") or self._is_namespace(rk):
            return False
        return not (self._is_pod(rk) and metadata.get("deletionGracePeriodSeconds", 0) > 0)

    def _write(self, rk: ResourceKind, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """Commit a replacement; no-op writes keep the resourceVersion, as etcd does."""
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return old
        key = (new["metadata"].get("namespace", ""), new["metadata"]["name"])
        if new["metadata"].get("deletionTimestamp") and self._removable(rk, new):
            return self._commit(rk, key, new, "DELETED", old)
        return self._commit(rk, key, new, "MODIFIED", old)

    def _delete(
        self,
        rk: ResourceKind,
        old: dict[str, Any],
        propagation: str,
        grace_period_seconds: int | None,
    ) -> dict[str, Any]:
        new = clone(old)
        metadata = new["metadata"]
        already_deleting = bool(metadata.get("deletionTimestamp"))
        if not already_deleting:
            gc_finalizer = {"Foreground": FOREGROUND_FINALIZER, "Orphan": ORPHAN_FINALIZER}
            finalizer = gc_finalizer.get(propagation)
            if finalizer and finalizer not in (metadata.get("finalizers") or []):
                metadata["finalizers"] = [*(metadata.get("finalizers") or []), finalizer]
        grace = self._pod_grace(new, grace_period_seconds) if self._is_pod(rk) else 0
        current_grace = metadata.get("deletionGracePeriodSeconds")
        if already_deleting and current_grace is not None and grace >= current_grace:
            return old  # a repeated delete cannot lengthen the grace period
        is_namespace = self._is_namespace(rk)
        immediate = not metadata.get("finalizers") and grace == 0 and not already_deleting
        if immediate and not is_namespace:
            key = (metadata.get("namespace", ""), metadata["name"])
            return self._commit(rk, key, new, "DELETED", old)
        metadata["deletionTimestamp"] = to_rfc3339(self.clock.now() + grace)
        metadata["deletionGracePeriodSeconds"] = grace
        if is_namespace:  # the namespace controller empties it, then removes it
            new.setdefault("status", {})["phase"] = "Terminating"
            self._gc_namespaces[metadata["name"]] = None
        return self._write(rk, old, new)

    @staticmethod
    def _is_namespace(rk: ResourceKind) -> bool:
        return rk.kind == "Namespace" and not rk.group

    @staticmethod
    def _is_pod(rk: ResourceKind) -> bool:
        return rk.kind == "Pod" and not rk.group

    @staticmethod
    def _pod_grace(pod: dict[str, Any], requested: int | None) -> int:
        """Unbound and finished pods go at once; bound ones wait for the kubelet."""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(0, int(requested))
        configured = spec.get("terminationGracePeriodSeconds")
        return DEFAULT_POD_GRACE_SECONDS if configured is None else max(0, int(configured))

    def _set_condition(self, obj: dict[str, Any], type_: str, status: str) -> None:
        conditions = obj.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != type_]
        conditions.append(
            {"type": type_, "status": status, "lastTransitionTime": to_rfc3339(self.clock.now())}
        )

    # ------------------------------------------------------------ commit

    def _commit(
        self,
        rk: ResourceKind,
        key: Key,
        obj: dict[str, Any],
        type_: str,
        old: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Store one change under a new resourceVersion, index it, tell the watchers."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        blob = freeze(obj)
        table, frozen = self._tables[rk], self._frozen[rk]
        change = _Change(self._rv, rk, type_, blob, frozen.get(key))
        if type_ == "DELETED":
            del table[key], frozen[key]
        else:
            table[key], frozen[key] = obj, blob
        self._index(change, key, obj, old)
        self._record(change)
        for watcher in self._watchers[rk]:
            watcher.offer(change, obj, old)
        self._changed.notify_all()
        return obj

    def _record(self, change: _Change) -> None:
        self._history.append(change)
        if len(self._history) > 2 * self._history_limit:
            dropped = self._history[: -self._history_limit]
            self._history = self._history[-self._history_limit :]
            self._compacted_through = dropped[-1].rv

    def _index(
        self, change: _Change, key: Key, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        rk = change.rk
        uid = obj["metadata"]["uid"]
        ref = (rk, key)
        old_owners = self._owner_uids(old)
        new_owners = set() if change.type == "DELETED" else self._owner_uids(obj)
        for owner in old_owners - new_owners:
            self._dependents.get(owner, set()).discard(ref)
            self._gc_owners[owner] = None  # a foreground owner may now be unblocked
        for owner in new_owners - old_owners:
            self._dependents.setdefault(owner, set()).add(ref)
        if change.type == "DELETED":
            self._by_uid.pop(uid, None)
            for dependent in self._dependents.pop(uid, set()):
                self._gc_dependents[dependent] = None
            if rk.kind == "Node" and not rk.group:
                for pod_key in self._pods_by_node.get(key[1], set()):
                    self._gc_orphan_pods[pod_key] = None
            if key[0] and self._namespace_terminating(key[0]):
                self._gc_namespaces[key[0]] = None
        else:
            self._by_uid[uid] = ref
            if new_owners != old_owners:
                self._gc_dependents[ref] = None
            if obj["metadata"].get("deletionTimestamp") and self._gc_finalizers(obj):
                self._gc_owners[uid] = None
        if self._is_pod(rk):
            self._index_pod_node(key, old, None if change.type == "DELETED" else obj)
        if self._affects_budgets(rk, obj, old):
            self._pdb_dirty[key[0]] = None

    @staticmethod
    def _affects_budgets(rk: ResourceKind, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
        if rk.kind == "PodDisruptionBudget":  # its own status writes do not re-dirty it
            return old is None or _spec_part(old) != _spec_part(obj)
        return rk.kind == "Pod" or rk.kind in _SCALED_KINDS

    @staticmethod
    def _owner_uids(obj: dict[str, Any] | None) -> set[str]:
        if obj is None:
            return set()
        return {r.get("uid", "") for r in obj["metadata"].get("ownerReferences") or []}

    @staticmethod
    def _gc_finalizers(obj: dict[str, Any]) -> set[str]:
        finalizers = obj["metadata"].get("finalizers") or []
        return {f for f in finalizers if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)}

    def _index_pod_node(
        self, key: Key, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        before = None if old is None else (old.get("spec") or {}).get("nodeName") or ""
        after = None if new is None else (new.get("spec") or {}).get("nodeName") or ""
        if before == after:
            return
        if before is not None:
            self._pods_by_node.get(before, set()).discard(key)
        if after is not None:
            self._pods_by_node.setdefault(after, set()).add(key)

    def _after_write(self) -> None:
        if self._gc_immediate:
            self._run_gc()

    # --------------------------------------------------- garbage collection

    def collect_garbage(self) -> int:
        """Run the garbage collector until it has nothing left to do: delete dependents
        whose owners are all gone, serve Foreground and Orphan deletions, and delete
        pods bound to nodes that no longer exist. Returns the number of deletions."""
        with self._lock:
            return self._run_gc()

    def _run_gc(self) -> int:
        deletions = 0
        while self._gc_dependents or self._gc_owners or self._gc_orphan_pods or self._gc_namespaces:
            if self._gc_dependents:
                ref, _ = self._gc_dependents.popitem(last=False)
                deletions += self._collect_dependent(*ref)
            elif self._gc_owners:
                uid, _ = self._gc_owners.popitem(last=False)
                self._finish_owner(uid)
            elif self._gc_orphan_pods:
                key, _ = self._gc_orphan_pods.popitem(last=False)
                deletions += self._collect_orphan_pod(key)
            else:
                namespace, _ = self._gc_namespaces.popitem(last=False)
                deletions += self._empty_namespace(namespace)
        return deletions

    def _namespace_terminating(self, name: str) -> bool:
        namespace = self._tables[self._namespace_kind].get(("", name))
        return namespace is not None and bool(namespace["metadata"].get("deletionTimestamp"))

    def _empty_namespace(self, name: str) -> int:
        """Delete what a terminating namespace holds; remove it once nothing is left."""
        if not self._namespace_terminating(name):
            return 0
        deletions, remaining = 0, 0
        for rk, table in self._tables.items():
            if not rk.namespaced:
                continue
            for key in sorted(k for k in table if k[0] == name):
                obj = table[key]
                if not obj["metadata"].get("deletionTimestamp"):
                    self._delete(rk, obj, "Background", None)
                    deletions += 1
                remaining += key in table
        if not remaining:
            namespace = self._tables[self._namespace_kind][("", name)]
            self._commit(self._namespace_kind, ("", name), clone(namespace), "DELETED", namespace)
        return deletions

    def _owner(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        located = self._by_uid.get(ref.get("uid", ""))
        if located is None:
            return None
        rk, key = located
        return self._tables[rk].get(key)

    def _collect_dependent(self, rk: ResourceKind, key: Key) -> int:
        obj = self._tables[rk].get(key)
        refs = [] if obj is None else obj["metadata"].get("ownerReferences") or []
        if not refs:
            return 0
        solid, waiting, dangling, orphaning = [], [], [], []
        for ref in refs:
            owner = self._owner(ref)
            finalizers = set() if owner is None else self._deleting_gc_finalizers(owner)
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
                self._set_owner_references(rk, obj, solid)
            return 0
        if obj["metadata"].get("deletionTimestamp"):
            return 0
        self._delete(rk, obj, "Foreground" if waiting else "Background", None)
        return 1

    @staticmethod
    def _deleting_gc_finalizers(owner: dict[str, Any]) -> set[str]:
        if not owner["metadata"].get("deletionTimestamp"):
            return set()
        return MemoryKube._gc_finalizers(owner)

    def _set_owner_references(
        self, rk: ResourceKind, obj: dict[str, Any], refs: list[dict[str, Any]]
    ) -> None:
        new = clone(obj)
        if refs:
            new["metadata"]["ownerReferences"] = clone(refs)
        else:
            new["metadata"].pop("ownerReferences", None)
        self._write(rk, obj, new)

    def _finish_owner(self, uid: str) -> None:
        """Drop the orphan / foregroundDeletion finalizer once the dependents allow it."""
        located = self._by_uid.get(uid)
        if located is None:
            return
        rk, owner = located[0], self._tables[located[0]].get(located[1])
        if owner is None or not owner["metadata"].get("deletionTimestamp"):
            return
        finalizers = self._gc_finalizers(owner)
        dependents = [(d_rk, key) for d_rk, key in self._dependents.get(uid, set())]
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
            self._write(rk, owner, new)

    def _queue_dependents(self, dependents: list[tuple[ResourceKind, Key]]) -> None:
        for rk, key in sorted(dependents, key=lambda d: (d[0].kind, d[1])):
            obj = self._tables[rk].get(key)
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                self._gc_dependents[(rk, key)] = None

    def _blocks_owner(self, rk: ResourceKind, key: Key, owner_uid: str) -> bool:
        obj = self._tables[rk].get(key)
        refs = [] if obj is None else obj["metadata"].get("ownerReferences") or []
        return any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") for r in refs)

    def _collect_orphan_pod(self, key: Key) -> int:
        pod_kind = self.registry.lookup("Pod", "v1")
        pod = self._tables[pod_kind].get(key)
        node_name = None if pod is None else (pod.get("spec") or {}).get("nodeName")
        node_kind = self.registry.lookup("Node", "v1")
        if not node_name or ("", node_name) in self._tables[node_kind]:
            return 0
        self._delete(pod_kind, pod, "Background", 0)  # type: ignore[arg-type]
        return 1

    # --------------------------------------------------- disruption budgets

    def sync_disruption_budgets(self) -> None:
        """Bring PodDisruptionBudget status up to date (the disruption controller)."""
        with self._lock:
            pdb_kind = self.registry.lookup("PodDisruptionBudget", "policy/v1")
            while self._pdb_dirty:
                namespace, _ = self._pdb_dirty.popitem(last=False)
                for key in sorted(k for k in self._tables[pdb_kind] if k[0] == namespace):
                    self._sync_budget(pdb_kind, self._tables[pdb_kind][key])

    def _sync_budget(self, pdb_kind: ResourceKind, pdb: dict[str, Any]) -> dict[str, Any]:
        pods = self._pods_selected_by(pdb)
        status = disruption.compute_status(pdb, pods, self._scale_of, self.clock.now())
        new = clone(pdb)
        new["status"] = status
        return self._write(pdb_kind, pdb, new)

    def _pods_selected_by(self, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        spec = pdb.get("spec") or {}
        if spec.get("selector") is None:
            return []  # policy/v1: a null selector selects no pods
        selector = selector_from_label_selector(spec["selector"])
        namespace = pdb["metadata"].get("namespace", "")
        pods = self._tables[self.registry.lookup("Pod", "v1")]
        return [
            pod
            for key, pod in sorted(pods.items())
            if key[0] == namespace and selector.matches(pod["metadata"].get("labels"))
        ]

    def _scale_of(self, ref: dict[str, Any], namespace: str) -> int | None:
        owner = self._owner(ref)
        if owner is None or owner.get("kind") not in _SCALED_KINDS:
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

    def _eviction_ignores_budgets(self, pod: dict[str, Any]) -> bool:
        phase = (pod.get("status") or {}).get("phase")
        return bool(pod["metadata"].get("deletionTimestamp")) or phase in (
            "Pending",
            "Succeeded",
            "Failed",
        )

    def _admit_eviction(self, pod: dict[str, Any]) -> None:
        """Check the pod's PDB and record the disruption, or raise 429."""
        pdb_kind = self.registry.lookup("PodDisruptionBudget", "policy/v1")
        self.sync_disruption_budgets()
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels")
        budgets = [
            pdb
            for key, pdb in sorted(self._tables[pdb_kind].items())
            if key[0] == namespace
            and (pdb.get("spec") or {}).get("selector") is not None
            and selector_from_label_selector(pdb["spec"]["selector"]).matches(labels)
        ]
        if len(budgets) > 1:
            raise InternalError(
                "This pod has more than one PodDisruptionBudget, which the eviction "
                "subresource does not support."
            )
        if not budgets:
            return
        pdb = budgets[0]
        status = pdb.get("status") or {}
        healthy, desired = status.get("currentHealthy", 0), status.get("desiredHealthy", 0)
        if not disruption.is_pod_healthy(pod):
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
            if policy == "AlwaysAllow" or healthy >= desired:
                return
        if status.get("disruptionsAllowed", 0) <= 0:
            raise TooManyRequests(
                "Cannot evict pod as it would violate the pod's disruption budget.",
                [
                    Cause(
                        "",
                        f"The disruption budget {pdb['metadata']['name']} needs {desired} "
                        f"healthy pods and has {healthy} currently",
                        "DisruptionBudget",
                    )
                ],
            )
        new = clone(pdb)
        now = self.clock.now()
        new["status"] = disruption.record_eviction(status, pod["metadata"]["name"], now)
        self._write(pdb_kind, pdb, new)
