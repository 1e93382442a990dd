"""A CapacityBuffer's holding in metrics and Events [joiner.buffers.signals]: the chunks
wanted and held per buffer as gauges, and an Event on the buffer only when its holding
changes (held, or why not), never once per pass."""

from __future__ import annotations

from ctl_harness import Harness, pending_pod
from joiner import testing
from joiner.buffers.provisioning import HELD, Holding
from joiner.buffers.signals import BufferSignals
from joiner.metrics import Metrics
from joiner.operator import BUFFER_HOLD_DELAY
from test_holding import _buffer, _one_chunk_held_on_a_node, _pod_template, _up

LIMIT_MESSAGE = (
    "2 of 3 chunks held; all available instance types exceed limits for nodepool "
    "(NodePool=default), limits on cpu leave no room for a node, nodepool=default"
)


def _gauges(h: Harness, name: str = "spare") -> tuple[float | None, float | None]:
    """(wanted, held) as the metrics say; None when the series is absent."""
    labels = {"namespace": "default", "name": name}
    registry = h.operator.metrics.registry
    return (
        registry.get_sample_value("joiner_capacitybuffers_chunks_wanted", labels),
        registry.get_sample_value("joiner_capacitybuffers_chunks_held", labels),
    )


def _buffer_events(h: Harness) -> list[tuple[str, str, str, int]]:
    """(type, reason, message, count) of the Events on CapacityBuffers, in order."""
    items = sorted(h.kube.list("Event").items, key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [
        (e["type"], e["reason"], e["message"], e["count"])
        for e in items
        if e["involvedObject"]["kind"] == "CapacityBuffer"
    ]


def test_a_capped_buffer_says_so_once_and_again_only_when_held() -> None:
    h = Harness()
    h.kube.create(testing.ec2nodeclass())
    h.kube.create(testing.nodepool(limits={"cpu": "4"}))
    h.install(_pod_template(cpu="1500m"), _buffer(podTemplateRef={"name": "chunk"}, replicas=3))
    h.advance(3)
    assert _gauges(h) == (3, 2)  # a medium NodeClaim holds two, the limit leaves no more
    [claim] = h.nodeclaims()
    _up(h, claim)
    h.advance(600)  # many resolutions and hold passes: one Event
    assert _buffer_events(h) == [("Warning", "PoolLimitReached", LIMIT_MESSAGE, 1)]
    pool = h.kube.get("NodePool", "default")
    pool["spec"]["limits"] = {"cpu": "16"}
    h.kube.update(pool)
    h.advance(70)  # the unplaceable chunk is tried again within a minute
    assert _gauges(h) == (3, 3)
    [_, second] = h.nodeclaims()
    _up(h, second)
    h.advance(600)
    assert _buffer_events(h) == [
        ("Warning", "PoolLimitReached", LIMIT_MESSAGE, 1),
        ("Normal", "CapacityHeld", "3 of 3 chunks held", 1),
    ]


def test_a_burst_on_the_buffers_room_is_no_news_and_the_gauges_follow_it() -> None:
    """A real pod takes the chunk's room: held drops to 0 until a NodeClaim is launched
    for the chunk, then 1 again; the Event said CapacityHeld once, at first."""
    h = Harness()
    node = _one_chunk_held_on_a_node(h)
    assert _gauges(h) == (1, 1)
    h.kube.create(pending_pod("web", "1500m"))
    h.bind_running("web", node)
    h.advance(BUFFER_HOLD_DELAY)  # the hold pass after the pod event
    assert _gauges(h) == (1, 0)
    h.advance(3)
    assert _gauges(h) == (1, 1)  # on the NodeClaim launched for it
    [_, second] = h.nodeclaims()
    _up(h, second)
    h.advance(60)
    assert _gauges(h) == (1, 1)
    assert _buffer_events(h) == [("Normal", "CapacityHeld", "1 of 1 chunks held", 1)]


def test_a_deleted_or_unresolved_buffer_has_no_gauges() -> None:
    h = Harness()
    h.default_setup()
    h.install(_buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    h.advance(3)
    assert _gauges(h) == (None, None)  # no PodTemplate: it does not resolve
    h.install(_pod_template())
    h.advance(20)
    assert _gauges(h) == (2, 2)
    h.kube.delete("CapacityBuffer", "spare", "default")
    h.advance(1)
    assert _gauges(h) == (None, None)
    exposition = h.operator.metrics.exposition().decode()
    assert 'name="spare"' not in exposition


def test_a_restarted_controller_does_not_tell_what_the_status_already_says() -> None:
    """A fresh BufferSignals (a restart) reads the reason the buffer's status holds: the
    same holding is no news, a new one is."""
    h = Harness()
    _one_chunk_held_on_a_node(h)
    raw = h.kube.get("CapacityBuffer", "spare", "default")
    fresh = BufferSignals(Metrics(), h.operator.recorder)
    fresh.holding("default/spare", raw, Holding(1, 1, HELD))
    assert _buffer_events(h) == [("Normal", "CapacityHeld", "1 of 1 chunks held", 1)]
    fresh.holding("default/spare", raw, Holding(1, 0, "NoOffering", "no offering"))
    assert _buffer_events(h)[1:] == [
        ("Warning", "NoOffering", "0 of 1 chunks held; no offering", 1)
    ]
