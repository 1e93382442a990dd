"""Object builders and watch helpers shared by the KubeAPI tests."""

from __future__ import annotations

from typing import Any

from joiner.clock import FakeClock
from joiner.kube.api import KubeAPI, WatchEvent
from joiner.kube.memory import MemoryKube


def take(watch: Any, count: int) -> list[WatchEvent]:
    """The first `count` events of a watch (opened with a timeout), then stop it."""
    events: list[WatchEvent] = []
    for event in watch:
        events.append(event)
        if len(events) == count:
            break
    watch.stop()
    return events


def pod(name: str, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    labels = extra.pop("labels", {})
    spec = {"containers": [{"name": "main", "image": "busybox"}], **extra.pop("spec", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, **extra},
        "spec": spec,
    }


def ready_pod(api: KubeAPI, name: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    """A Running, Ready pod bound to node-a (create, then status as the kubelet writes it)."""
    created = api.create(pod(name, labels=labels, spec={"nodeName": "node-a"}, **extra))
    created["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return api.update_status(created)


def settle(store: MemoryKube, seconds: float = 0.1) -> None:
    """Let ``seconds`` of virtual time pass for the store's emulated controllers (the
    store's clock is a FakeClock), running their work at the times it falls due."""
    clock = store.clock
    assert isinstance(clock, FakeClock)
    end = clock.now() + seconds
    store.run_controllers()
    while (due := store.next_due()) is not None and due <= end:
        clock.set(max(due, clock.now()))
        store.run_controllers()
    clock.set(end)
