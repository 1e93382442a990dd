"""Feeds turn watches into ClusterState updates on the controller's own thread.

``DrainFeed`` pulls from watches that can be drained without blocking (the
memory adapter in the simulator and tests). ``ThreadedFeed`` runs one list+watch
thread per kind against any KubeAPI (production) and hands events over through a
queue. Either way, ``pump()`` delivers what has arrived and returns how much.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from joiner.background import BackgroundLoop, FailureHook
from joiner.backoff import Retrier
from joiner.kube.api import KubeAPI, ObjectList, Watch, WatchEvent
from joiner.kube.reflector import RELIST_BACKOFF, list_and_watch

# (kind, event type, object)
Handler = Callable[[str, str, dict[str, Any]], None]
Listed = Callable[[str], None]

WATCH_TIMEOUT = 300.0


class DrainFeed:
    def __init__(self, kube: Any, kinds: Sequence[str], handler: Handler, listed: Listed) -> None:
        self._handler, self._listed = handler, listed
        self._watches = {kind: kube.watch(kind) for kind in kinds}
        self._announced = False

    def pump(self) -> int:
        delivered = 0
        for kind, watch in self._watches.items():
            for event in watch.drain():
                self._handler(kind, event.type, event.object)
                delivered += 1
        if not self._announced:  # the first drain carried the initial state of every kind
            self._announced = True
            for kind in self._watches:
                self._listed(kind)
        return delivered

    def stop(self) -> None:
        for watch in self._watches.values():
            watch.stop()


class ThreadedFeed:
    """One background loop per kind runs list_and_watch; its lists and events reach the
    controller's thread through a queue. A loop that fails (the API server is down, an
    answer is malformed) backs off and starts over with a list; the list is diffed with
    what the loop knew, so objects deleted meanwhile get their DELETED event."""

    def __init__(
        self,
        kube: KubeAPI,
        kinds: Sequence[str],
        handler: Handler,
        listed: Listed,
        on_failure: FailureHook | None = None,
    ) -> None:
        self._kube = kube
        self._handler, self._listed = handler, listed
        self._events: queue.Queue[tuple[str, str, dict[str, Any]] | tuple[str, None, None]] = (
            queue.Queue()
        )
        self._stop = threading.Event()
        self._watches: dict[str, Watch] = {}  # the open watch of each kind
        self._watches_lock = threading.Lock()
        self.loops = [self._loop(kind, on_failure) for kind in kinds]

    def _loop(self, kind: str, on_failure: FailureHook | None) -> BackgroundLoop:
        # One backoff per kind, shared by its re-lists, re-watches and failures.
        retrier = Retrier(RELIST_BACKOFF)
        known: dict[str, dict[str, Any]] = {}  # what the consumer was told, across restarts
        return BackgroundLoop(
            f"watch-{kind}",
            lambda: self._follow(kind, known, retrier),
            self._stop,
            retrier=retrier,
            on_failure=on_failure,
        )

    def start(self) -> None:
        for loop in self.loops:
            loop.start()

    def stop(self) -> None:
        """Stop every loop, and the watches they are blocked reading (each closes its
        connection at once instead of at the server's timeout)."""
        self._stop.set()
        with self._watches_lock:
            watches = list(self._watches.values())
        for watch in watches:
            watch.stop()

    def _opened(self, kind: str, watch: Watch) -> None:
        with self._watches_lock:
            self._watches[kind] = watch
        if self._stop.is_set():  # stop() ran while this watch was opening
            watch.stop()

    def wait(self, timeout: float) -> None:
        """Block until an event arrives or the timeout passes (the main loop's idle wait)."""
        try:
            item = self._events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return
        self._deliver(item)

    def pump(self) -> int:
        delivered = 0
        while True:
            try:
                item = self._events.get_nowait()
            except queue.Empty:
                return delivered
            self._deliver(item)
            delivered += 1

    def _deliver(self, item: tuple) -> None:
        kind, type_, obj = item
        if type_ is None:
            self._listed(kind)
        else:
            self._handler(kind, type_, obj)

    def _follow(self, kind: str, known: dict[str, dict[str, Any]], retrier: Retrier) -> None:
        stream = list_and_watch(
            self._kube,
            kind,
            watch_timeout_seconds=WATCH_TIMEOUT,
            stop=self._stop,
            retrier=retrier,
            on_watch=lambda watch: self._opened(kind, watch),
        )
        for item in stream:
            if isinstance(item, ObjectList):
                self._relisted(kind, known, item)
            else:
                self._watched(kind, known, item)

    def _relisted(self, kind: str, known: dict[str, dict[str, Any]], listing: ObjectList) -> None:
        for type_, obj in relist_changes(known, listing.items):
            self._events.put((kind, type_, obj))
        self._events.put((kind, None, None))

    def _watched(self, kind: str, known: dict[str, dict[str, Any]], event: WatchEvent) -> None:
        if event.type == "DELETED":
            known.pop(object_key(event.object), None)
        else:
            known[object_key(event.object)] = event.object
        self._events.put((kind, event.type, event.object))


def relist_changes(
    known: dict[str, dict[str, Any]], items: list[dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """What a consumer that was told ``known`` (by object_key) must hear to match a
    fresh listing: DELETED for what went meanwhile, ADDED or MODIFIED for the rest.
    ``known`` becomes the listing."""
    current = {object_key(o): o for o in items}
    changes: list[tuple[str, dict[str, Any]]] = [
        ("DELETED", obj) for key, obj in known.items() if key not in current
    ]
    changes += [("ADDED" if object_key(o) not in known else "MODIFIED", o) for o in items]
    known.clear()
    known.update(current)
    return changes


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name', '')}"
