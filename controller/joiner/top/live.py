"""Keep ``joiner top``'s view current: one list of each kind, then watches.

The watches run on background threads (``ThreadedFeed``, as the controller's own
informers do: re-list after a 410 or a failure); this thread applies what they
deliver and draws a new frame once every kind has been listed and something changed
(or the terminal was resized), at most once per ``interval`` (a burst of events, e.g. a
Deployment scaled by a hundred, draws one frame, not a hundred). A watch that fails
(the API server is gone, the access was revoked) is named on the frame, with its error,
until its kind is listed again: the nodes shown are then as they were.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from joiner.kube.api import KubeAPI
from joiner.state.feed import ThreadedFeed, object_key
from joiner.top.snapshot import ClusterObjects

Draw = Callable[[ClusterObjects, str], None]  # the objects, and a notice ("" when none)

KINDS = ("Node", "NodeClaim", "Pod", "NodePool")
# All `joiner top` may do (docs/operations.md, as a ClusterRole): read the kinds it shows.
READ_ONLY_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["karpenter.sh"],
        "resources": ["nodeclaims", "nodepools"],
        "verbs": ["get", "list", "watch"],
    },
]
FAILING_WATCHES = "watches failing, retrying; the cluster as last seen:"
REFRESH_INTERVAL = 1.0  # seconds, at least, between two frames
POLL = 0.1  # seconds between two looks at the stop flag when nothing arrives


def list_once(kube: KubeAPI) -> ClusterObjects:
    """Every object of the kinds shown, one list each (an ApiError names the one refused)."""
    return ClusterObjects.from_items(item for kind in KINDS for item in kube.list(kind))


class ClusterCache:
    """The objects of ``KINDS`` as watch events leave them; ``version`` counts changes."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in KINDS}
        self._listed: set[str] = set()
        self.version = 0

    def apply(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        if event_type == "DELETED":
            self._objects[kind].pop(object_key(obj), None)
        else:
            self._objects[kind][object_key(obj)] = {"kind": kind, **obj}
        self.version += 1

    def listed(self, kind: str) -> None:
        self._listed.add(kind)
        self.version += 1

    @property
    def complete(self) -> bool:
        """Every kind listed: a frame drawn before would show nodes without their pods."""
        return self._listed == set(KINDS)

    def objects(self) -> ClusterObjects:
        return ClusterObjects.from_items(
            obj for objects in self._objects.values() for obj in objects.values()
        )


@dataclass
class WatchTrouble:
    """The watches failing now, with their last error. Failures are reported on the
    watches' own threads; a kind listed again (on this thread) has recovered."""

    _failing: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    version: int = 0

    def failed(self, loop: str, err: Exception) -> None:
        kind = loop.removeprefix("watch-")
        with self._lock:
            self._failing[kind] = str(err) or type(err).__name__
            self.version += 1

    def recovered(self, kind: str) -> None:
        with self._lock:
            if self._failing.pop(kind, None) is not None:
                self.version += 1

    def notice(self) -> str:
        with self._lock:
            failing = sorted(self._failing.items())
        if not failing:
            return ""
        lines = (f"  {kind}: {error}" for kind, error in failing)
        return "\n".join([FAILING_WATCHES, *lines])


def follow(
    kube: KubeAPI,
    draw: Draw,
    stop: threading.Event,
    interval: float = REFRESH_INTERVAL,
    redraw: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Draw the cluster, then again on changes (debounced by ``interval``) until ``stop``;
    ``redraw`` set (the terminal was resized) draws again without a change."""
    redraw = redraw or threading.Event()
    cache, trouble = ClusterCache(), WatchTrouble()

    def listed(kind: str) -> None:
        cache.listed(kind)
        trouble.recovered(kind)

    feed = ThreadedFeed(kube, KINDS, cache.apply, listed, on_failure=trouble.failed)
    feed.start()
    drawn, drawn_at = (-1, -1), float("-inf")
    try:
        while not stop.is_set():
            feed.wait(POLL)
            feed.pump()
            versions = (cache.version, trouble.version)
            due = versions != drawn or redraw.is_set()
            if cache.complete and due and clock() - drawn_at >= interval:
                redraw.clear()
                drawn, drawn_at = versions, clock()
                draw(cache.objects(), trouble.notice())
    finally:
        feed.stop()
