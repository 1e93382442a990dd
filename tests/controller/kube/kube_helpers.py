"""Object builders and watch helpers shared by the KubeAPI tests."""

from __future__ import annotations

from typing import Any

from joiner.kube.api import KubeAPI, WatchEvent


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
