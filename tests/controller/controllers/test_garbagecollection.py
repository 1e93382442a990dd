"""Garbage collection [LIFE-3] against the memory API and the fake cloud."""

from __future__ import annotations

import pytest
from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.controllers.garbagecollection import INTERVAL, ORPHAN_GRACE, GarbageCollection
from joiner.kube.api import NotFound
from joiner.kube.memory import MemoryKube
from joiner.state.cluster import ClusterState
from joiner.testing import nodeclaim, requirement


def claim(name: str) -> dict:
    return nodeclaim(name, requirements=[requirement(wk.INSTANCE_TYPE, "In", ["small"])])


def world():
    clock = FakeClock(0)
    kube = MemoryKube(clock)
    cloud = FakeCloudProvider([new_instance_type("small", cpu="2")], clock)
    state = ClusterState(clock)
    return clock, kube, cloud, state, GarbageCollection(kube, state, cloud, clock)


def test_an_instance_without_nodeclaim_goes_after_30_seconds_seen():
    clock, _, cloud, _, gc = world()
    orphan = cloud.create(NodeClaim.from_dict(claim("gone-before-its-status")))
    assert gc.reconcile("gc").requeue_after == ORPHAN_GRACE  # the next look: when it is due
    clock.advance(29)
    assert gc.reconcile("gc").requeue_after == pytest.approx(1)
    assert orphan.status.provider_id in cloud.instances
    clock.advance(1)
    assert gc.reconcile("gc").requeue_after == INTERVAL
    assert cloud.instances == {}


def test_without_unclaimed_instances_the_next_pass_is_an_interval_away():
    _, _, _, _, gc = world()
    assert gc.reconcile("gc").requeue_after == INTERVAL


def test_an_instance_with_a_nodeclaim_stays():
    clock, _, cloud, state, gc = world()
    launched = cloud.create(NodeClaim.from_dict(claim("kept")))
    state.apply("ADDED", launched.to_dict())
    gc.reconcile("gc")
    clock.advance(300)
    gc.reconcile("gc")
    assert list(cloud.instances) == [launched.status.provider_id]


def test_a_launched_nodeclaim_whose_instance_vanished_is_deleted():
    _, kube, cloud, state, gc = world()
    created = kube.create(claim("lost"))
    launched = cloud.create(NodeClaim.from_dict(created))
    stored = launched.to_dict()
    stored["status"]["conditions"] = [{"type": "Launched", "status": "True"}]
    state.apply("ADDED", stored)
    cloud.instances.clear()  # EC2 lost it
    gc.reconcile("gc")
    with pytest.raises(NotFound):
        kube.get("NodeClaim", "lost")
