"""List, then watch from the list's resourceVersion; re-list when the watch is Gone.

This is the loop behind every informer: it works over any KubeAPI adapter. The
consumer replaces its view on each ObjectList and applies each WatchEvent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from joiner.kube.api import Gone, KubeAPI, ObjectList, WatchEvent


def list_and_watch(
    api: KubeAPI,
    kind: str,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    watch_timeout_seconds: float = 300.0,
    stopped: Callable[[], bool] = lambda: False,
    api_version: str | None = None,
) -> Iterator[ObjectList | WatchEvent]:
    """Yield a full ObjectList, then the events after it, forever (until stopped()).

    A watch that times out is resumed from the last seen resourceVersion (bookmarks
    keep it fresh); a 410 Gone starts over with a new list.
    """
    resource_version: str | None = None
    while not stopped():
        if resource_version is None:
            listed = api.list(
                kind,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                api_version=api_version,
            )
            resource_version = listed.resource_version
            yield listed
        try:  # an adapter may report Gone when the watch opens or when it streams
            watch = api.watch(
                kind,
                namespace,
                resource_version=resource_version,
                label_selector=label_selector,
                field_selector=field_selector,
                timeout_seconds=watch_timeout_seconds,
                allow_bookmarks=True,
                api_version=api_version,
            )
        except Gone:
            resource_version = None
            continue
        try:
            for event in watch:
                resource_version = event.object["metadata"]["resourceVersion"]
                if event.type != "BOOKMARK":
                    yield event
                if stopped():
                    break
        except Gone:
            resource_version = None
        finally:
            watch.stop()
