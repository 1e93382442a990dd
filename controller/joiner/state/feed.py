"""Feeds turn watches into ClusterState updates on the controller's own thread.

``DrainFeed`` pulls from watches that can be drained without blocking (the
memory adapter in the simulator and tests). ``ThreadedFeed`` runs one list+watch
thread per kind against any KubeAPI (production) and hands events over through a
queue. Either way, ``pump()`` delivers what has arrived and returns how much.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from joiner.kube.api import Gone, KubeAPI

log = logging.getLogger(__name__)

# (kind, event type, object)
Handler = Callable[[str, str, dict[str, Any]], None]
Listed = Callable[[str], None]

WATCH_TIMEOUT = 300.0
RETRY_DELAY = 1.0


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
    def __init__(
        self, kube: KubeAPI, kinds: Sequence[str], handler: Handler, listed: Listed
    ) -> None:
        self._kube, self._kinds = kube, list(kinds)
        self._handler, self._listed = handler, listed
        self._events: queue.Queue[tuple[str, str, dict[str, Any]] | tuple[str, None, None]] = (
            queue.Queue()
        )
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for kind in self._kinds:
            thread = threading.Thread(
                target=self._run, args=(kind,), name=f"watch-{kind}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()

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

    def _run(self, kind: str) -> None:
        known: dict[str, dict[str, Any]] = {}
        while not self._stop.is_set():
            try:
                resource_version = self._relist(kind, known)
                self._watch(kind, known, resource_version)
            except Gone:
                continue  # history compacted: list again
            except Exception as err:  # API errors and transport failures alike: never die
                if self._stop.is_set():
                    return  # stopped while the call was failing: nothing to report
                log.warning("watch %s failed: %s", kind, err)
                self._stop.wait(RETRY_DELAY)

    def _relist(self, kind: str, known: dict[str, dict[str, Any]]) -> str:
        listing = self._kube.list(kind)
        current = {_key(o): o for o in listing.items}
        for key, obj in known.items():
            if key not in current:
                self._events.put((kind, "DELETED", obj))
        for obj in listing.items:
            self._events.put((kind, "ADDED" if _key(obj) not in known else "MODIFIED", obj))
        known.clear()
        known.update(current)
        self._events.put((kind, None, None))
        return listing.resource_version

    def _watch(self, kind: str, known: dict[str, dict[str, Any]], resource_version: str) -> None:
        while not self._stop.is_set():
            watch = self._kube.watch(
                kind,
                resource_version=resource_version,
                timeout_seconds=WATCH_TIMEOUT,
                allow_bookmarks=True,
            )
            for event in watch:
                resource_version = event.object.get("metadata", {}).get(
                    "resourceVersion", resource_version
                )
                if event.type == "BOOKMARK":
                    continue
                if event.type == "DELETED":
                    known.pop(_key(event.object), None)
                else:
                    known[_key(event.object)] = event.object
                self._events.put((kind, event.type, event.object))
                if self._stop.is_set():
                    watch.stop()
                    return


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name', '')}"
