"""ThreadedFeed: list+watch threads per kind feed the controller's thread; a watch that
fails (API error or transport failure) is re-listed, never lost."""

from __future__ import annotations

import time
from typing import Any

import httpx
from joiner.clock import RealClock
from joiner.kube.memory import MemoryKube
from joiner.state.feed import ThreadedFeed
from joiner.testing.envtest import ControlPlane
from joiner.testing.polling import wait_for


class FlakyKube:
    """The memory store, whose first ``failures`` lists fail as an unreachable API server
    does through the http adapter."""

    def __init__(self, store: MemoryKube, failures: int) -> None:
        self.store, self.failures = store, failures

    def list(self, kind: str, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise httpx.ConnectError("connection refused")
        return self.store.list(kind, *args, **kwargs)

    def watch(self, kind: str, *args: Any, **kwargs: Any) -> Any:
        return self.store.watch(kind, *args, **kwargs)


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def test_feed_survives_an_unreachable_api_server_and_delivers_everything() -> None:
    store = MemoryKube(RealClock())
    store.create(node("before"))
    events: list[tuple[str, str, str]] = []
    listed: list[str] = []
    feed = ThreadedFeed(
        FlakyKube(store, failures=1),  # type: ignore[arg-type]
        ["Node"],
        lambda kind, type_, obj: events.append((kind, type_, obj["metadata"]["name"])),
        listed.append,
    )
    feed.start()
    try:
        deadline = time.monotonic() + 10
        while not listed and time.monotonic() < deadline:
            feed.wait(0.1)
            feed.pump()
        assert listed == ["Node"]  # listed once the retry (after 1 s) succeeded
        store.create(node("after"))
        while len(events) < 2 and time.monotonic() < deadline:
            feed.wait(0.1)
        assert events == [("Node", "ADDED", "before"), ("Node", "ADDED", "after")]
    finally:
        feed.stop()


def test_stopping_the_feed_ends_its_watches_on_the_real_server(
    control_plane: ControlPlane,
) -> None:
    """stop() ends the watch each loop is blocked reading: the server stops serving it at
    once rather than at its timeout (5 minutes)."""
    before = control_plane.watches_served("configmaps", "cluster")
    kube = control_plane.admin_kube()
    listed: list[str] = []
    feed = ThreadedFeed(kube, ["ConfigMap"], lambda *event: None, listed.append)
    feed.start()
    try:
        wait_for(
            lambda: control_plane.watches_served("configmaps", "cluster") == before + 1,
            "the watch",
            10.0,
        )
    finally:
        feed.stop()
    wait_for(
        lambda: control_plane.watches_served("configmaps", "cluster") == before,
        "the watch to end",
        2.0,
    )
    kube.close()
