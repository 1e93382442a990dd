"""What controllers act through: the Kubernetes API, the cluster state, the cloud,
the clock, the event recorder and the metrics. One ``ControllerContext`` is built by
the operator and shared; controllers inherit the names from ``Controller``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joiner.clock import Clock
from joiner.cloudprovider.types import CloudProvider
from joiner.events import EventRecorder
from joiner.kube.api import KubeAPI, NotFound
from joiner.metrics import Metrics
from joiner.state.cluster import ClusterState


@dataclass(frozen=True)
class ControllerContext:
    kube: KubeAPI
    state: ClusterState
    cloud: CloudProvider
    clock: Clock
    recorder: EventRecorder
    metrics: Metrics


class Controller:
    """Base of the reconcilers that act through a context."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.kube, self.state, self.cloud = ctx.kube, ctx.state, ctx.cloud
        self.clock, self.recorder, self.metrics = ctx.clock, ctx.recorder, ctx.metrics

    def fresh(self, kind: str, name: str) -> dict[str, Any] | None:
        """The object as the API has it now (None when gone): decisions that write act on
        this, not on the watch cache, so a stale cache never launches or deletes twice."""
        try:
            return self.kube.get(kind, name)
        except NotFound:
            return None
