"""The memory adapter: an in-process Kubernetes API store that behaves as kube-apiserver
v1.36 with kube-controller-manager does (the contract suite,
tests/controller/kube/test_kube_contract.py, runs the same assertions against both).

What it keeps faithful (the simulator and the tests stand on these):
resourceVersion on every write and list; optimistic concurrency (409 Conflict on a
stale resourceVersion); uid, creationTimestamp, generateName; generation (on the kinds
that have one) bumped by spec writes and by deletion only; the status subresource;
label and field selectors; watches that resume from a resourceVersion (served from the
history it keeps, as the watch cache serves them; 410 Gone only beyond it, and no
bookmarks); decoding as the server decodes (``joiner.kube.decoding``: a wrong JSON type
is a 400, unknown fields are dropped with a warning or refused under
``fieldValidation=Strict``); the defaults and mutating admission of built-in kinds
(``joiner.kube.admission``: pod defaults and tolerations, the not-ready taint of a new
Node); validation (``joiner.kube.validation``, 422); strategic merge patch as the server
orders lists; finalizers and deletionTimestamp; graceful pod deletion (every pod is
first marked, then removed: MODIFIED, then DELETED; a bound pod stays Terminating until
deleted with grace 0, as the kubelet does); DELETE answering a Status for what goes at
once, the object for what stays or for a pod; eviction checked against the stored
PodDisruptionBudget status; the pod binding subresource.

What kube-controller-manager does (garbage collection, PDB status, namespace
finalization, pod garbage collection, the node lifecycle's taints) happens after the
write, as it does on a real cluster: the emulated controllers of
``joiner.kube.controllermanager`` do it after the measured delays on the store's clock.
Two ways to drive them:

* ``controllers="threaded"``: a thread of the store runs them as the clock passes their
  time (a clock that runs by itself: the HTTP server of the tests and of ``kubectl``).
* ``controllers="manual"`` (the default): the owner calls ``run_controllers()`` at the
  times ``next_due()`` names, e.g. the simulator on its virtual clock, pumping watches
  with the non-blocking ``MemoryWatch.drain()``.

Time comes from the injected Clock. uids and generated names come from a seeded
random source, so a simulation replays identically.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any, Literal

from joiner.clock import Clock, RealClock, to_rfc3339
from joiner.kube import admission
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
from joiner.kube.controllermanager import (
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    SCALED_KINDS,
    Committed,
    ControllerManager,
)
from joiner.kube.coreschema import core_schema
from joiner.kube.decoding import FieldValidation, decode_body, decode_patched
from joiner.kube.disruption import is_pod_healthy, record_eviction
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
from joiner.kube.validation import check_name, invalid, validate_create, validate_update

Key = tuple[str, str]  # (namespace or "", name)
ControllerMode = Literal["threaded", "manual"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_POD_GRACE_SECONDS = admission.DEFAULT_GRACE_SECONDS
SHARED_OBJECTS_KEPT = 4096  # watch objects kept for the other watches, see _watched
THREAD_IDLE_WAIT = 1.0  # seconds the controllers' thread sleeps at most between looks
# Kinds whose status is set on create (the API server ignores a client's status).
_STATUS_ON_CREATE: dict[str, dict[str, Any]] = {
    "Pod": {"phase": "Pending"},
    "PersistentVolume": {"phase": "Pending"},
    "PersistentVolumeClaim": {"phase": "Pending"},
    "Namespace": {"phase": "Active"},
    "Service": {"loadBalancer": {}},
}
_KEEPS_STATUS_ON_CREATE = frozenset({"Node", "Event"})
# Built-in kinds with metadata.generation (custom resources all have it).
_GENERATION_KINDS = frozenset(
    {"Pod", "PodDisruptionBudget", "DaemonSet", "Job", "PodTemplate", *SCALED_KINDS}
)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything a spec write changes: the object minus metadata, status and type."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _resource_name(rk: ResourceKind) -> str:
    return f"{rk.plural}.{rk.group}" if rk.group else rk.plural


def deleted_status(rk: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
    """What DELETE answers for an object that went at once (pods answer themselves)."""
    details = {"name": obj["metadata"]["name"], "kind": rk.plural, "uid": obj["metadata"]["uid"]}
    if rk.group:
        details["group"] = rk.group
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


class _Change:
    """One committed write, kept in the watch history in frozen form only (bytes are
    compact and invisible to Python's cyclic garbage collector)."""

    __slots__ = ("blob", "old_blob", "rk", "rv", "type")

    def __init__(
        self, rv: int, rk: ResourceKind, type_: str, blob: bytes, old_blob: bytes | None
    ) -> None:
        self.rv, self.rk, self.type, self.blob, self.old_blob = rv, rk, type_, blob, old_blob


class MemoryWatch:
    """One watch on the memory store: iterate (blocking, with timeout) or drain().

    As kube-apiserver at a watch's end, it sends no bookmark: ``allow_bookmarks`` only
    allows them, and the store never sends one."""

    def __init__(
        self,
        store: MemoryKube,
        rk: ResourceKind,
        namespace: str | None,
        matcher: Matcher | None,
        timeout_seconds: float | None,
    ) -> None:
        self._store = store
        self.kind = rk
        self._namespace = namespace
        self._matches = matcher
        self.filtered = bool(namespace) or matcher is not None
        self._timeout = timeout_seconds
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
        controllers: ControllerMode = "manual",
        watch_history: int = 20_000,
        seed: int = 0,
        namespaces: tuple[str, ...] = DEFAULT_NAMESPACES,
        share_watched_objects: bool = False,
    ) -> None:
        """``share_watched_objects``: watches draining the same change get the same
        object, thawed once, instead of a copy each. Only for consumers that never edit
        what a watch gives them (the simulator's operator and emulated cluster).
        ``watch_history``: how many changes watches can resume from (the watch cache)."""
        self.clock: Clock = clock or RealClock()
        self.registry = registry or default_registry()
        self._namespace_kind = self.registry.lookup("Namespace", "v1")
        self._pod_kind = self.registry.lookup("Pod", "v1")
        self._node_kind = self.registry.lookup("Node", "v1")
        self._pdb_kind = self.registry.lookup("PodDisruptionBudget", "policy/v1")
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
        # frozen form -> its thawed object, while other watches may still drain it (the
        # bytes are held, so no id is reused); None: each watch thaws its own copy
        self._shared: dict[int, tuple[bytes, dict[str, Any]]] | None = (
            {} if share_watched_objects else None
        )
        self.controllers = ControllerManager(self)
        for name in namespaces:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        if controllers == "threaded":
            self._thread = threading.Thread(
                target=self._run_controllers_forever, name="kube-controllers", daemon=True
            )
            self._thread.start()

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

    # ------------------------------------------------- emulated controllers

    def next_due(self) -> float | None:
        """When an emulated controller next has work (None: nothing queued)."""
        with self._lock:
            return self.controllers.next_due()

    def run_controllers(self) -> int:
        """Do the emulated controllers' work that is due now; returns how much."""
        with self._lock:
            return self.controllers.run_due()

    def _run_controllers_forever(self) -> None:
        with self._changed:
            while not self._closed.is_set():
                self.controllers.run_due()
                due = self.controllers.next_due()
                wait = THREAD_IDLE_WAIT if due is None else due - self.clock.now()
                if wait > 0:
                    self._changed.wait(min(wait, THREAD_IDLE_WAIT))

    def close(self) -> None:
        """Stop the controllers' thread (a threaded store)."""
        self._closed.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()

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
        if self._is_pod(rk) and node_name is not None:
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
        raised when it is older than the history kept."""
        rk = self.registry.lookup(kind, api_version)
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rk.kind)
        matches = None if labels.empty and fields.empty else object_matcher(labels, fields)
        ns = namespace if rk.namespaced else None
        with self._lock:
            watch = MemoryWatch(self, rk, ns, matches, timeout_seconds)
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

    def _detach(self, watch: MemoryWatch) -> None:
        watchers = self._watchers[watch.kind]
        if watch in watchers:
            watchers.remove(watch)

    # ----------------------------------------------------------------- writes
    # Each write takes ``field_validation`` (as the request parameter: the adapter's
    # callers get Strict, as the http adapter sends) and, for the HTTP server, a list
    # that collects the warnings of unknown fields dropped under Warn.

    def create(
        self,
        obj: dict[str, Any],
        *,
        field_validation: FieldValidation = "Strict",
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        rk = self._kind_of(obj)
        with self._lock:
            new = clone(obj)
            decode_body(rk, new, field_validation, _collector(warnings))
            admission.default(rk, new)
            admission.admit_create(rk, new)
            new = validate_create(rk, new)
            metadata = new["metadata"]
            namespace = self._namespace_for_create(rk, metadata)
            name = metadata.get("name") or self._generate_name(rk, namespace, metadata)
            if (namespace, name) in self._tables[rk]:
                raise AlreadyExists(f'{_resource_name(rk)} "{name}" already exists')
            self._initialise(rk, new, namespace, name)
            committed = self._commit(rk, (namespace, name), new, "ADDED", None)
            return clone(committed)

    def update(
        self,
        obj: dict[str, Any],
        *,
        field_validation: FieldValidation = "Strict",
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        """Replace an object (PUT). A stale metadata.resourceVersion is a 409 Conflict;
        status changes are ignored for kinds with a status subresource."""
        rk = self._kind_of(obj)
        with self._lock:
            new = clone(obj)
            decode_body(rk, new, field_validation, _collector(warnings), self._stored(rk, new))
            old = self._existing_for_write(rk, new)
            self._check_resource_version(rk, old, new, required=rk.custom)
            admission.default(rk, new)
            committed = self._write(rk, old, self._prepare_spec_write(rk, old, new))
            return clone(committed)

    def update_status(
        self,
        obj: dict[str, Any],
        *,
        field_validation: FieldValidation = "Strict",
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        """Replace only the status (PUT .../status); everything else is kept."""
        rk = self._kind_of(obj)
        with self._lock:
            self._require_status_subresource(rk)
            new = clone(obj)
            decode_body(rk, new, field_validation, _collector(warnings), self._stored(rk, new))
            old = self._existing_for_write(rk, new)
            self._check_resource_version(rk, old, new, required=False)
            committed = self._write(rk, old, self._prepare_status_write(rk, old, new))
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
        field_validation: FieldValidation = "Strict",
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        rk = self.registry.lookup(kind, api_version)
        if subresource not in (None, "status"):
            raise NotFound(f'the server could not find the requested resource ("{subresource}")')
        with self._lock:
            if subresource == "status":
                self._require_status_subresource(rk)
            old = self._existing(rk, name, namespace)
            patched = self._apply_patch(rk, old, patch, patch_type)
            decode_patched(rk, patched, field_validation, _collector(warnings), old)
            self._check_resource_version(rk, old, patched, required=False)
            if subresource == "status":
                new = self._prepare_status_write(rk, old, patched)
            else:
                admission.default(rk, patched)
                new = self._prepare_spec_write(rk, old, patched)
            committed = self._write(rk, old, new)
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
        """Delete. What goes at once answers a success Status (a pod answers itself);
        what finalizers or a pod's grace period keep is marked with deletionTimestamp
        and answers itself."""
        rk = self.registry.lookup(kind, api_version)
        if propagation_policy not in ("Background", "Foreground", "Orphan"):
            raise BadRequest(f'propagationPolicy "{propagation_policy}" is not supported')
        with self._lock:
            old = self._existing(rk, name, namespace)
            self._check_preconditions(rk, old, preconditions or {})
            result = self._delete(rk, old, propagation_policy, grace_period_seconds)
            return clone(result)

    def evict(self, pod_name: str, namespace: str) -> None:
        """The Eviction subresource: 429 TooManyRequests when the PodDisruptionBudget's
        status (as the disruption controller last wrote it) allows no disruption."""
        with self._lock:
            pod = self._existing(self._pod_kind, pod_name, namespace)
            if not self._eviction_ignores_budgets(pod):
                self._admit_eviction(pod)
            self._delete(self._pod_kind, pod, "Background", None)

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """The Binding subresource: set spec.nodeName once and mark PodScheduled."""
        if not node_name:
            raise Invalid("Binding is invalid", [Cause("target.name", "Required value")])
        with self._lock:
            pod = self._existing(self._pod_kind, pod_name, namespace)
            current = (pod.get("spec") or {}).get("nodeName")
            if current:
                raise Conflict(f'pod {pod_name} is already assigned to node "{current}"')
            if pod["metadata"].get("deletionTimestamp"):
                raise Conflict(f"pod {pod_name} is being deleted, cannot be assigned to a host")
            new = clone(pod)
            new.setdefault("spec", {})["nodeName"] = node_name
            self._set_condition(new, "PodScheduled", "True")
            self._write(self._pod_kind, pod, new)

    # ------------------------------------------------------ write helpers

    def _kind_of(self, obj: Any) -> ResourceKind:
        if not isinstance(obj, dict):
            raise BadRequest("the body of the request is not a JSON object")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise BadRequest("Object 'Kind' is missing in the request body")
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

    def _stored(self, rk: ResourceKind, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The stored object a write body names, if any (None too for a body whose
        metadata is not yet decoded well enough to name one)."""
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            return None
        name, namespace = metadata.get("name"), metadata.get("namespace") or ""
        if not isinstance(name, str) or not isinstance(namespace, str):
            return None
        return self._tables[rk].get((namespace if rk.namespaced else "", name))

    def _existing_for_write(self, rk: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj.get("metadata") or {}
        if not metadata.get("name"):
            raise invalid(rk.kind, "", [Cause("metadata.name", "Required value")])
        return self._existing(rk, metadata["name"], metadata.get("namespace"))

    def _namespace_for_create(self, rk: ResourceKind, metadata: dict[str, Any]) -> str:
        if not rk.namespaced:
            return ""
        namespace = metadata.get("namespace") or "default"
        ns_obj = self._tables[self._namespace_kind].get(("", namespace))
        if ns_obj is None:
            raise NotFound(f'namespaces "{namespace}" not found')
        if ns_obj["metadata"].get("deletionTimestamp"):
            raise Forbidden(
                f'{_resource_name(rk)} "{metadata.get("name") or metadata.get("generateName")}" '
                f"is forbidden: unable to create new content in namespace {namespace} because "
                "it is being terminated"
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

    def _has_generation(self, rk: ResourceKind) -> bool:
        return rk.custom or rk.kind in _GENERATION_KINDS

    def _initialise(self, rk: ResourceKind, new: dict[str, Any], namespace: str, name: str) -> None:
        metadata = new["metadata"]
        for managed in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
            "generation",
        ):
            metadata.pop(managed, None)
        metadata["name"] = name
        if namespace:
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        metadata["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        metadata["creationTimestamp"] = to_rfc3339(self.clock.now())
        if self._has_generation(rk):
            metadata["generation"] = 1
        new["apiVersion"], new["kind"] = rk.api_version, rk.kind
        if rk.kind in _STATUS_ON_CREATE and not rk.group:
            new["status"] = {**clone(_STATUS_ON_CREATE[rk.kind]), **self._admitted_status(new)}
        elif rk.status_subresource and rk.kind not in _KEEPS_STATUS_ON_CREATE:
            new.pop("status", None)

    @staticmethod
    def _admitted_status(new: dict[str, Any]) -> dict[str, Any]:
        """The status fields admission set (a pod's qosClass), which creation keeps."""
        status = new.get("status") or {}
        return {"qosClass": status["qosClass"]} if "qosClass" in status else {}

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
                    [Cause("metadata.resourceVersion", "Invalid value: 0: must be specified")],
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
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml"
                )
            patched = strategic_merge_patch(old, patch, self._kind_type(rk))
        elif patch_type == "json":
            patched = json_patch(old, patch)
        else:
            raise UnsupportedMediaType(f"unknown patch type {patch_type!r}")
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise invalid(rk.kind, old["metadata"]["name"], [Cause("metadata", "Required value")])
        return clone(patched)

    @staticmethod
    def _kind_type(rk: ResourceKind) -> str | None:
        return core_schema().kind_type(rk.api_version, rk.kind)

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
        new = validate_update(rk, old, new)
        self._forbid_new_finalizers(rk, old, new)
        if _spec_part(new) != _spec_part(old) and "generation" in before:
            new["metadata"]["generation"] = int(before["generation"]) + 1
        return new

    def _forbid_new_finalizers(
        self, rk: ResourceKind, old: dict[str, Any], new: dict[str, Any]
    ) -> None:
        if not old["metadata"].get("deletionTimestamp"):
            return
        before = old["metadata"].get("finalizers") or []
        added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
        if added:
            listed = ", ".join(f'"{f}"' for f in added)
            message = (
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers []string{{{listed}}}"
            )
            raise invalid(
                rk.kind,
                old["metadata"]["name"],
                [Cause("metadata.finalizers", message, "FieldValueForbidden")],
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
        return validate_update(rk, old, new)

    def _removable(self, rk: ResourceKind, obj: dict[str, Any]) -> bool:
        """A deleting object goes once no finalizer holds it and no pod grace remains;
        a namespace only when its controller has emptied it."""
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
        """Delete or mark; returns what DELETE answers (see ``delete``)."""
        new = clone(old)
        metadata = new["metadata"]
        already_deleting = bool(metadata.get("deletionTimestamp"))
        if not already_deleting:
            gc_finalizer = {"Foreground": FOREGROUND_FINALIZER, "Orphan": ORPHAN_FINALIZER}
            finalizer = gc_finalizer.get(propagation)
            if finalizer and finalizer not in (metadata.get("finalizers") or []):
                metadata["finalizers"] = [*(metadata.get("finalizers") or []), finalizer]
        is_pod = self._is_pod(rk)
        if not is_pod and not metadata.get("finalizers") and not self._is_namespace(rk):
            key = (metadata.get("namespace", ""), metadata["name"])
            self._commit(rk, key, new, "DELETED", old)
            return deleted_status(rk, new)
        grace = self._pod_grace(new, grace_period_seconds) if is_pod else 0
        current_grace = metadata.get("deletionGracePeriodSeconds")
        if already_deleting and current_grace is not None and grace >= current_grace:
            return old  # a repeated delete cannot lengthen the grace period
        metadata["deletionTimestamp"] = to_rfc3339(self.clock.now() + grace)
        metadata["deletionGracePeriodSeconds"] = grace
        if not already_deleting and "generation" in metadata:
            metadata["generation"] = int(metadata["generation"]) + 1
        if self._is_namespace(rk):  # its controller empties it, then removes it
            new.setdefault("status", {})["phase"] = "Terminating"
        # Marked first (MODIFIED); a pod with nothing left to wait for then goes (DELETED).
        key = (metadata.get("namespace", ""), metadata["name"])
        marked = self._commit(rk, key, new, "MODIFIED", old)
        if self._removable(rk, marked):
            return self._commit(rk, key, clone(marked), "DELETED", marked)
        return marked

    def _is_namespace(self, rk: ResourceKind) -> bool:
        return rk is self._namespace_kind

    def _is_pod(self, rk: ResourceKind) -> bool:
        return rk is self._pod_kind

    def _is_node(self, rk: ResourceKind) -> bool:
        return rk is self._node_kind

    def _node_exists(self, name: str) -> bool:
        return ("", name) in self._tables[self._node_kind]

    def _owner(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        located = self._by_uid.get(ref.get("uid", ""))
        if located is None:
            return None
        rk, key = located
        return self._tables[rk].get(key)

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
        """Store one change under a new resourceVersion, index it, tell the watchers and
        the emulated controllers."""
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
        self.controllers.observe(Committed(rk, key, obj, old, type_ == "DELETED"))
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
        uid = obj["metadata"]["uid"]
        if change.type == "DELETED":
            self._by_uid.pop(uid, None)
        else:
            self._by_uid[uid] = (change.rk, key)
        if self._is_pod(change.rk):
            self._index_pod_node(key, old, None if change.type == "DELETED" else obj)

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

    # --------------------------------------------------------- eviction

    def _eviction_ignores_budgets(self, pod: dict[str, Any]) -> bool:
        phase = (pod.get("status") or {}).get("phase")
        return bool(pod["metadata"].get("deletionTimestamp")) or phase in (
            "Pending",
            "Succeeded",
            "Failed",
        )

    def _admit_eviction(self, pod: dict[str, Any]) -> None:
        """Check the pod's PDB and record the disruption, or raise 429."""
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels")
        budgets = [
            pdb
            for key, pdb in sorted(self._tables[self._pdb_kind].items())
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
        name = pdb["metadata"]["name"]
        if status.get("observedGeneration", 0) < pdb["metadata"]["generation"]:
            raise _budget_refusal(
                f"The disruption budget {name} is still being processed by the server."
            )
        healthy, desired = status.get("currentHealthy", 0), status.get("desiredHealthy", 0)
        if not is_pod_healthy(pod):
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
            if policy == "AlwaysAllow" or healthy >= desired:
                return
        if status.get("disruptionsAllowed", 0) <= 0:
            raise _budget_refusal(
                f"The disruption budget {name} needs {desired} healthy pods and has "
                f"{healthy} currently"
            )
        new = clone(pdb)
        new["status"] = record_eviction(status, pod["metadata"]["name"], self.clock.now())
        self._write(self._pdb_kind, pdb, new)


def _budget_refusal(cause: str) -> TooManyRequests:
    return TooManyRequests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        [Cause("", cause, "DisruptionBudget")],
    )


def _collector(warnings: list[str] | None) -> list[str]:
    """Where the warnings of one write go (a list nobody reads when none was given)."""
    return [] if warnings is None else warnings
