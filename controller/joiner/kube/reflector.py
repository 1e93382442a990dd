"""List, then watch from the list's resourceVersion; re-list when the watch is Gone.

This is the loop behind every informer: it works over any KubeAPI adapter. The
consumer replaces its view on each ObjectList and applies each WatchEvent.

It paces itself as client-go's reflector does: a re-list after a 410 Gone, and a
re-watch after a watch that ended almost as soon as it opened, first wait a jittered
backoff (0.8 s doubling to 30 s, back to 0.8 s after two minutes without such a
failure). A server that keeps answering 410 or closing watches at once so costs a
few requests a minute, not the client's whole rate limit. Any other error ends the
stream; its owner backs off and starts over with a list (``ThreadedFeed``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator

from joiner.backoff import Backoff, Retrier
from joiner.kube.api import Gone, KubeAPI, ObjectList, Watch, WatchEvent

RELIST_BACKOFF = Backoff(base=0.8, cap=30.0)
SHORT_WATCH = 1.0  # a watch that ends sooner than this (seconds) counts as a failure


def list_and_watch(
    api: KubeAPI,
    kind: str,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    watch_timeout_seconds: float = 300.0,
    stop: threading.Event | None = None,
    retrier: Retrier | None = None,
    api_version: str | None = None,
    on_watch: Callable[[Watch], None] | None = None,
) -> Iterator[ObjectList | WatchEvent]:
    """Yield a full ObjectList, then the events after it, until ``stop`` is set.

    A watch that times out is resumed from the last seen resourceVersion (bookmarks,
    when the server sends them, keep it fresh); a 410 Gone starts over with a new list.
    ``retrier`` paces the failures (default: ``RELIST_BACKOFF``); ``stop`` also cuts a
    pause short. ``on_watch`` is told of every watch opened, so that another thread can
    stop it (``stop`` alone is seen only between events).
    """
    stop = stop or threading.Event()
    retrier = retrier or Retrier(RELIST_BACKOFF)
    selectors = {"label_selector": label_selector, "field_selector": field_selector}
    resource_version: str | None = None
    while not stop.is_set():
        if resource_version is None:
            listed = api.list(kind, namespace, api_version=api_version, **selectors)
            resource_version = listed.resource_version
            yield listed
        opened = time.monotonic()
        try:
            watch = api.watch(
                kind,
                namespace,
                resource_version=resource_version,
                timeout_seconds=watch_timeout_seconds,
                allow_bookmarks=True,
                api_version=api_version,
                **selectors,
            )
            if on_watch is not None:
                on_watch(watch)
            # An adapter may report Gone when the watch opens or while it streams.
            resource_version = yield from _events(watch, resource_version, stop)
        except Gone:
            resource_version = None  # history compacted: list again, after a pause
            stop.wait(retrier.next_delay())
            continue
        if time.monotonic() - opened < SHORT_WATCH:  # a server closing watches at once
            stop.wait(retrier.next_delay())


def _events(
    watch: Watch, resource_version: str, stop: threading.Event
) -> Generator[WatchEvent, None, str]:
    """The events of one watch but bookmarks; returns the last resourceVersion seen."""
    try:
        for event in watch:
            metadata = event.object.get("metadata") or {}
            resource_version = metadata.get("resourceVersion") or resource_version
            if event.type != "BOOKMARK":
                yield event
            if stop.is_set():
                break
    finally:
        watch.stop()
    return resource_version
