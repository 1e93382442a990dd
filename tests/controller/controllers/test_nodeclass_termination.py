"""An EC2NodeClass is removed only when no NodeClaim uses it, and then the provider
cleans up what it created for it (no orphaned launch templates or profiles)."""

from __future__ import annotations

import pytest
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.controllers.nodeclass import TERMINATION_POLL, NodeClassStatus
from joiner.kube.api import NotFound
from joiner.kube.memory import MemoryKube
from joiner.state.cluster import ClusterState
from joiner.testing import capacity_types, ec2nodeclass, nodeclaim

NODECLASS = ec2nodeclass(cluster="c")
CLAIM = nodeclaim("default-abc", requirements=[capacity_types("spot")])


def test_a_deleted_class_waits_for_its_nodeclaims_then_the_provider_cleans_up():
    clock = FakeClock(0)
    kube = MemoryKube(clock)
    state = ClusterState(clock)
    finalized: list[str] = []
    controller = NodeClassStatus(
        kube, state, clock, lambda nc: {"conditions": []}, lambda nc: finalized.append(nc.name)
    )
    kube.create(NODECLASS)
    controller.reconcile("default")
    assert kube.get("EC2NodeClass", "default")["metadata"]["finalizers"] == [
        "karpenter.k8s.aws/termination"
    ]
    claim = kube.create(CLAIM)
    state.apply("ADDED", claim)
    kube.delete("EC2NodeClass", "default")
    assert controller.reconcile("default").requeue_after == TERMINATION_POLL
    assert finalized == []
    assert kube.get("EC2NodeClass", "default")["metadata"]["deletionTimestamp"]
    kube.delete("NodeClaim", "default-abc")
    state.apply("DELETED", claim)
    assert controller.reconcile("default").requeue_after is None
    assert finalized == ["default"]
    with pytest.raises(NotFound):
        kube.get("EC2NodeClass", "default")


def test_the_fake_cloud_has_nothing_to_clean_up():
    assert FakeCloudProvider([]).finalize_nodeclass(EC2NodeClass.from_dict(NODECLASS)) is None
