"""CapacityBuffers inside the scheduler [joiner.buffers]: the operator over the memory API
server and the fake cloud on a virtual clock, the test playing kubelet and kube-scheduler.

Chunks are virtual pods: NodeClaims are launched to hold them, a real pod may take their
room (and the buffer is then held elsewhere), consolidation never removes the room they
hold, a NodePool's limits cap them (and the buffer's condition says so), and the status
is written as the API defines it."""

from __future__ import annotations

from typing import Any

from ctl_harness import Harness, pending_pod
from joiner import testing
from joiner.api.conditions import get_condition
from joiner.buffers.resolution import Unresolved
from joiner.kube.controllermanager import NODE_LIFECYCLE_DELAY

BUFFER_API = "autoscaling.x-k8s.io/v1beta1"


def _pod_template(cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    chunk = testing.pod("chunk", cpu, memory, labels={"app": "spare"})
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": "default"},
        "template": {"metadata": chunk["metadata"], "spec": chunk["spec"]},
    }


def _buffer(name: str = "spare", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": BUFFER_API,
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec or {"podTemplateRef": {"name": "chunk"}, "replicas": 2},
    }


def _status(h: Harness, name: str = "spare") -> dict[str, Any]:
    return dict(h.kube.get("CapacityBuffer", name, "default").get("status") or {})


def _condition(h: Harness, type_: str, name: str = "spare") -> tuple[str, str, str]:
    found = get_condition(_status(h, name).get("conditions"), type_)
    assert found is not None, _status(h, name)
    return found["status"], found["reason"], found["message"]


def _requests(h: Harness) -> list[dict[str, str]]:
    return [c["spec"]["resources"]["requests"] for c in h.nodeclaims()]


def _up(h: Harness, claim: dict[str, Any]) -> str:
    """The claim's node registered and ready: its name."""
    node = h.register_node(claim["metadata"]["name"])
    h.set_node_ready(node)
    h.advance(NODE_LIFECYCLE_DELAY)
    return node


def _one_chunk_held_on_a_node(h: Harness) -> str:
    """A buffer of one 1500m chunk, its NodeClaim launched and its node up: the node."""
    h.default_setup()
    h.install(_pod_template(cpu="1500m"), _buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    h.advance(3)
    [claim] = h.nodeclaims()
    return _up(h, claim)


def test_nodeclaims_are_launched_to_hold_the_chunks_and_the_status_says_so() -> None:
    h = Harness()
    h.default_setup()
    h.install(_pod_template(cpu="1500m"), _buffer())
    h.advance(3)
    # both chunks on one medium node (4 CPU), no pod in the cluster
    assert _requests(h) == [{"cpu": "3", "memory": "2Gi", "pods": "2"}]
    assert h.kube.list("Pod").items == []
    status = _status(h)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "provisioningStrategy": "buffer.x-k8s.io/active-capacity",
        "replicas": 2,
        "podTemplateRef": {"name": "chunk"},
        "podTemplateGeneration": 1,
    }
    assert _condition(h, "ReadyForProvisioning") == ("True", "AttributesSetSuccessfully", "")
    assert _condition(h, "Provisioning") == ("True", "CapacityHeld", "2 of 2 chunks held")
    h.advance(600)  # held: nothing more is launched
    assert len(h.nodeclaims()) == 1


def test_pending_pods_come_first_and_the_chunks_get_what_they_leave() -> None:
    """A NodeClaim in flight with room for 1 CPU holds the buffer's 1-CPU chunk; a pod of
    1 CPU arrives: it is nominated to that NodeClaim, and the chunk gets a new one."""
    h = Harness()
    h.default_setup()
    h.create_unschedulable(pending_pod("first", "500m"))
    h.advance(2)
    [launching] = h.nodeclaims()
    h.install(_pod_template(cpu="1"), _buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    h.advance(3)
    assert len(h.nodeclaims()) == 1  # the chunk is held in the NodeClaim's spare room
    assert _condition(h, "Provisioning") == ("True", "CapacityHeld", "1 of 1 chunks held")
    h.create_unschedulable(pending_pod("second", "1"))
    h.advance(3)
    name = launching["metadata"]["name"]
    assert h.operator.state.nomination("default/second") == name
    [_, chunk_claim] = h.nodeclaims()
    assert chunk_claim["spec"]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1Gi",
        "pods": "1",
    }
    assert _condition(h, "Provisioning") == ("True", "CapacityHeld", "1 of 1 chunks held")


def test_a_real_pod_takes_the_room_and_the_buffer_is_held_again_elsewhere() -> None:
    h = Harness()
    node = _one_chunk_held_on_a_node(h)
    h.kube.create(pending_pod("web", "1500m"))
    h.bind_running("web", node)  # kube-scheduler: the real pod takes the chunk's room
    h.advance(3)
    claims = h.nodeclaims()
    assert len(claims) == 2
    assert _condition(h, "Provisioning") == ("True", "CapacityHeld", "1 of 1 chunks held")


def test_consolidation_never_removes_the_room_chunks_hold() -> None:
    """An empty node (no real pod) that holds the buffer's chunk stays; once the buffer
    is deleted, the same node is consolidated."""
    h = Harness()
    h.kube.create(testing.ec2nodeclass())
    h.kube.create(
        testing.nodepool(disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"})
    )
    h.install(_pod_template(cpu="1500m"), _buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    h.advance(3)
    [claim] = h.nodeclaims()
    _up(h, claim)
    h.advance(300)
    assert [c["metadata"]["name"] for c in h.nodeclaims()] == [claim["metadata"]["name"]]
    assert not h.events("DisruptionTerminating")
    h.kube.delete("CapacityBuffer", "spare", "default")
    h.advance(120)
    assert ("NodeClaim", claim["metadata"]["name"], "DisruptionTerminating") in h.events()


def test_a_pool_limit_caps_the_buffer_and_its_condition_says_so() -> None:
    h = Harness()
    h.kube.create(testing.ec2nodeclass())
    h.kube.create(testing.nodepool(limits={"cpu": "4"}))
    h.install(_pod_template(cpu="1500m"), _buffer(podTemplateRef={"name": "chunk"}, replicas=3))
    h.advance(3)
    assert _requests(h) == [{"cpu": "3", "memory": "2Gi", "pods": "2"}]  # a medium: 4 CPU
    assert _condition(h, "Provisioning") == (
        "False",
        "PoolLimitReached",
        "2 of 3 chunks held; all available instance types exceed limits for nodepool "
        "(NodePool=default), limits on cpu leave no room for a node, nodepool=default",
    )


def test_a_buffer_that_resolves_to_nothing_launches_nothing_and_says_why() -> None:
    h = Harness()
    h.default_setup()
    h.install(_buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    h.advance(3)
    assert h.nodeclaims() == []
    assert _condition(h, "ReadyForProvisioning") == (
        "False",
        "PodTemplateNotFound",
        "spec.podTemplateRef.name: no PodTemplate 'chunk' in default",
    )
    assert "Provisioning" not in [c["type"] for c in _status(h)["conditions"]]
    h.install(_pod_template())  # the template appears: resolved on the next resync
    h.advance(20)
    assert len(h.nodeclaims()) == 1
    assert _condition(h, "Provisioning") == ("True", "CapacityHeld", "2 of 2 chunks held")


def test_an_older_buffer_keeps_its_room_when_a_newer_one_is_capped() -> None:
    """Pool limit 4 CPU: the "web" buffer's 1500m chunk is held; the "batch" buffer, made
    later (though first by name), asks for three more, gets what the limit leaves (one)
    and says why not more."""
    h = Harness()
    h.kube.create(testing.ec2nodeclass())
    h.kube.create(testing.nodepool(limits={"cpu": "4"}))
    h.install(
        _pod_template(cpu="1500m"), _buffer("web", podTemplateRef={"name": "chunk"}, replicas=1)
    )
    h.advance(3)
    h.install(_buffer("batch", podTemplateRef={"name": "chunk"}, replicas=3))
    h.advance(30)
    assert _condition(h, "Provisioning", "web") == ("True", "CapacityHeld", "1 of 1 chunks held")
    status, reason, message = _condition(h, "Provisioning", "batch")
    assert (status, reason) == ("False", "PoolLimitReached")
    assert message.startswith("1 of 3 chunks held; ")


def test_a_chunk_no_instance_type_fits_is_not_held_and_the_condition_says_so() -> None:
    h = Harness()
    h.default_setup()
    h.install(_pod_template(cpu="16"), _buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    h.advance(3)
    assert h.nodeclaims() == []
    assert _condition(h, "Provisioning") == (
        "False",
        "NoOffering",
        "0 of 1 chunks held; no instance type has enough resources, requests cpu=16, "
        "memory=1Gi, pods=1 (pod + daemonsets), nodepool=default",
    )


def _windowed(windows: str, **spec: Any) -> dict[str, Any]:
    buffer = _buffer(**spec)
    buffer["metadata"]["annotations"] = {"joiner.sh/capacity-windows": windows}
    return buffer


def test_a_time_window_sizes_the_buffer_from_its_start_to_its_end() -> None:
    """No chunk outside the window, two inside it: the size changes at each edge (the
    buffer is resolved then, not at its next 15 s resync), and the status says which
    window is active and until when."""
    h = Harness()
    h.default_setup()
    h.advance(7)  # the buffer's resyncs fall at :07, :22, :37, :52 past each minute
    window = "[{name: morning, schedule: '5 0 * * *', duration: 10m, replicas: 2}]"
    h.install(_pod_template(), _windowed(window, podTemplateRef={"name": "chunk"}, replicas=0))
    h.advance(292)  # 00:04:59
    assert h.nodeclaims() == []
    assert _status(h)["replicas"] == 0
    assert _condition(h, "joiner.sh/TimeWindow") == (
        "False",
        "OutsideWindows",
        "outside every window: the spec's size until 2026-01-01T00:05:00Z",
    )
    h.advance(3)  # 00:05:02: resolved at 00:05:00, one batch window (1 s) later a launch
    assert _requests(h) == [{"cpu": "2", "memory": "2Gi", "pods": "2"}]
    assert _status(h)["replicas"] == 2
    assert _condition(h, "joiner.sh/TimeWindow") == (
        "True",
        "WindowActive",
        "window 0 'morning' (5 0 * * * UTC, 10m): replicas 2 until 2026-01-01T00:15:00Z",
    )
    h.advance(600)  # 00:15:02
    assert _status(h)["replicas"] == 0
    assert _condition(h, "joiner.sh/TimeWindow") == (
        "False",
        "OutsideWindows",
        "outside every window: the spec's size until 2026-01-02T00:05:00Z",
    )


def test_the_next_resolution_is_at_the_next_window_edge_when_it_comes_first() -> None:
    h = Harness()
    h.default_setup()
    window = "[{schedule: '5 0 * * *', duration: 10m, replicas: 2}]"
    h.install(_pod_template(), _windowed(window, podTemplateRef={"name": "chunk"}, replicas=0))
    h.advance(290)  # 00:04:50
    result = h.operator.buffer_controller.reconcile("default/spare")
    assert result.requeue_after == 10.0
    h.advance(20)  # 00:05:10: the next edge, the end, is far: the resync comes first
    assert h.operator.buffer_controller.reconcile("default/spare").requeue_after == 15.0


def test_bad_time_windows_hold_nothing_and_the_condition_names_the_field() -> None:
    h = Harness()
    h.default_setup()
    window = "[{schedule: '5 0 * * *', timeZone: Europe/Pariss, duration: 10m, replicas: 2}]"
    h.install(_pod_template(), _windowed(window, podTemplateRef={"name": "chunk"}, replicas=1))
    h.advance(3)
    assert h.nodeclaims() == []
    assert _condition(h, "ReadyForProvisioning") == (
        "False",
        "InvalidWindows",
        "metadata.annotations[joiner.sh/capacity-windows][0].timeZone: unknown time zone "
        "'Europe/Pariss' (an IANA name like Europe/Paris, or UTC)",
    )


def _spare_pool(spare: str, **overrides: Any) -> dict[str, Any]:
    pool = testing.nodepool(**overrides)
    pool["metadata"]["annotations"] = {"joiner.sh/spare-capacity": spare}
    return pool


def test_a_pools_spare_capacity_is_held_on_its_nodes() -> None:
    """{cpu: 3, memory: 6Gi} is three chunks of 1 CPU and 2 GiB, pinned to the pool: one
    4-CPU NodeClaim of that pool holds them; the pool's taint is tolerated."""
    h = Harness()
    h.kube.create(testing.ec2nodeclass())
    taint = {"key": "team", "value": "web", "effect": "NoSchedule"}
    h.kube.create(_spare_pool('{cpu: "3", memory: 6Gi}', taints=[taint]))
    h.advance(3)
    [claim] = h.nodeclaims()
    assert claim["spec"]["resources"]["requests"] == {"cpu": "3", "memory": "6Gi", "pods": "3"}
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    buffer = h.operator.buffers.resolutions["NodePool/default"]
    assert buffer.replicas == 3 and buffer.template["spec"]["tolerations"] == [
        {"key": "team", "operator": "Exists", "effect": "NoSchedule"}
    ]
    h.advance(600)  # held: nothing more is launched
    assert len(h.nodeclaims()) == 1


def test_a_pools_spare_capacity_follows_its_annotation() -> None:
    """Changed (no new generation: an annotation) and removed: the buffer follows; a bad
    value holds nothing."""
    h = Harness()
    h.kube.create(testing.ec2nodeclass())
    h.kube.create(_spare_pool('{cpu: "1"}'))
    h.advance(3)
    assert h.operator.buffers.resolutions["NodePool/default"].replicas == 1
    pool = h.kube.get("NodePool", "default")
    pool["metadata"]["annotations"]["joiner.sh/spare-capacity"] = '{cpu: "2"}'
    h.kube.update(pool)
    h.advance(1)
    assert h.operator.buffers.resolutions["NodePool/default"].replicas == 2
    pool = h.kube.get("NodePool", "default")
    pool["metadata"]["annotations"]["joiner.sh/spare-capacity"] = "{gpu: 1}"
    h.kube.update(pool)
    h.advance(1)
    assert h.operator.buffers.resolutions["NodePool/default"] == Unresolved(
        h.operator.buffers.resolutions["NodePool/default"].buffer,
        "InvalidSpareCapacity",
        "metadata.annotations[joiner.sh/spare-capacity].gpu: only cpu and memory (for "
        "another resource, a CapacityBuffer)",
    )
    pool = h.kube.get("NodePool", "default")
    del pool["metadata"]["annotations"]["joiner.sh/spare-capacity"]
    h.kube.update(pool)
    h.advance(1)
    assert "NodePool/default" not in h.operator.buffers.resolutions
