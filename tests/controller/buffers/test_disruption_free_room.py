"""Disruption's free room with CapacityBuffer chunks (regression for commit 4f1b3af): a
chunk that moves onto node B because node A's pods changed takes B's room as disruption
sees it, though B itself and its own pods did not change. Before 4f1b3af the room was
remembered by B's pods and the buffers' version, which a move does not bump, so B kept
its old room."""

from __future__ import annotations

from ctl_harness import Harness, pending_pod
from joiner.api import resources as res
from test_holding import _one_chunk_held_on_a_node, _up


def _cpu_room(h: Harness, node: str) -> int:
    """Free millicores of ``node`` in disruption's simulations."""
    rooms = h.operator.disruption._free_room()
    return int(rooms.exact[rooms.rows[node], rooms.columns[res.CPU]])


def test_a_chunk_moved_by_another_nodes_pods_lowers_the_free_room_where_it_lands() -> None:
    h = Harness()
    node_a = _one_chunk_held_on_a_node(h)
    # A real pod of 1500m takes A's room in the provisioner's plan (nominated there), so
    # the chunk gets a NodeClaim of its own: B. Neither node fits both.
    h.create_unschedulable(pending_pod("web", "1500m"))
    h.advance(3)
    [_, second] = h.nodeclaims()
    node_b = _up(h, second)
    buffers = h.operator.buffers
    # web is not bound yet: one node holds the chunk, the other is empty
    [holder] = [n for n in (node_a, node_b) if buffers.held_on(n)]
    [other] = [n for n in (node_a, node_b) if n != holder]
    room = _cpu_room(h, other)  # disruption remembers the empty node's room
    # kube-scheduler binds web where the chunk is; the state sees it (no controller has
    # run yet, so no Node or NodeClaim changed: the other node and its pods are the same)
    h.bind_running("web", holder)
    h.operator.pump()
    assert buffers.held_on(holder) == ()
    assert len(buffers.held_on(other)) == 1  # the chunk moved
    assert _cpu_room(h, other) == room - 1500
