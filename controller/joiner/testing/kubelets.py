"""The simulator's kubelet (``joiner.sim.kubelet``) against a real API server, for the
end-to-end tests on an envtest control plane:

    kubelets = EmulatedKubelets(plane.admin_kube(), instance_exists, "us-east-1").start()
    ...
    kubelets.stop()

For every NodeClaim whose instance exists a Node registers (with the NodeClaim's labels
and taints, as user data gives a real node) and becomes Ready; its node Lease is renewed
as a kubelet does, so the real node lifecycle controller keeps it Ready; the pods the real
kube-scheduler binds to it run, and its terminating pods finish deleting. Orphaned pods
are left to the real pod garbage collector. Everything goes through the KubeAPI given
(the http adapter), on its own thread and the wall clock.
"""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Any

from joiner.clock import Clock, RealClock, to_micro_time
from joiner.controllers.runtime import DONE, Manager, Result
from joiner.kube.api import AlreadyExists, Conflict, KubeAPI, NotFound
from joiner.sim.kubelet import InstanceExists, Kubelet
from joiner.state.feed import ThreadedFeed

NODE_LEASE_NAMESPACE = "kube-node-lease"
HEARTBEAT = 10.0  # seconds between renewals, the kubelet's default
LEASE_DURATION = 40  # seconds, the kubelet's nodeLeaseDurationSeconds
MAX_IDLE = 0.2  # seconds the loop waits at most, so stop() is seen promptly


class NodeHeartbeats:
    """Renews ``kube-node-lease/<node>`` every ``HEARTBEAT`` while the Node exists: the
    node lifecycle controller marks a Node whose Lease is not renewed NotReady."""

    name = "kubelet.heartbeat"

    def __init__(self, kube: KubeAPI, clock: Clock) -> None:
        self.kube, self.clock = kube, clock
        self.nodes: dict[str, str] = {}  # name -> uid of the Nodes that exist

    def reconcile(self, node_name: str) -> Result:
        uid = self.nodes.get(node_name)
        if uid is None:
            return DONE  # the Node went; the garbage collector takes its Lease
        with contextlib.suppress(Conflict, NotFound):
            self._renew(node_name, uid)
        return Result(requeue_after=HEARTBEAT)

    def _renew(self, node_name: str, uid: str) -> None:
        renewed = {"renewTime": to_micro_time(self.clock.now())}
        try:
            lease = self.kube.get("Lease", node_name, NODE_LEASE_NAMESPACE)
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                self.kube.create(_node_lease(node_name, uid, renewed))
            return
        lease["spec"].update(renewed)
        self.kube.update(lease)


def _node_lease(node_name: str, uid: str, renewed: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": node_name,
            "namespace": NODE_LEASE_NAMESPACE,
            # As the kubelet does: the Lease goes with its Node.
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": uid}
            ],
        },
        "spec": {"holderIdentity": node_name, "leaseDurationSeconds": LEASE_DURATION, **renewed},
    }


class EmulatedKubelets:
    """The kubelets of every instance the controller launches, on one thread."""

    def __init__(
        self,
        kube: KubeAPI,
        instance_exists: InstanceExists,
        region: str,
        ready_delay: float = 0.0,
    ) -> None:
        self.clock = RealClock()
        self.manager = Manager(self.clock, pump=lambda: self.feed.pump())
        self.kubelet = Kubelet(
            kube,
            self.clock,
            instance_exists,
            launch_delay=0.0,
            ready_delay=ready_delay,
            region=region,
            enqueue=lambda key, delay: self.manager.enqueue(Kubelet.name, key, delay),
        )
        self.heartbeats = NodeHeartbeats(kube, self.clock)
        self.manager.register(self.kubelet)
        self.manager.register(self.heartbeats)
        self.feed = ThreadedFeed(kube, ("NodeClaim", "Pod", "Node"), self._handle, _ignore)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="emulated-kubelets", daemon=True)

    def start(self) -> EmulatedKubelets:
        self.feed.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.feed.stop()

    def _handle(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        if kind == "Node":
            self._track_node(event_type, obj)
            return
        if kind == "Pod":
            keys = self.kubelet.keys_for_pod(event_type, obj)
        else:
            keys = [] if event_type == "DELETED" else self.kubelet.keys_for_nodeclaim(obj)
        for key, delay in keys:
            self.manager.enqueue(Kubelet.name, key, delay)

    def _track_node(self, event_type: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if event_type == "DELETED":
            self.heartbeats.nodes.pop(name, None)
        elif name not in self.heartbeats.nodes:
            self.heartbeats.nodes[name] = node["metadata"]["uid"]
            self.manager.enqueue(NodeHeartbeats.name, name)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.manager.run_due()
            due = self.manager.next_due()
            until_due = math.inf if due is None else due - self.clock.now()
            self.feed.wait(max(0.0, min(MAX_IDLE, until_due)))


def _ignore(kind: str) -> None:
    """The initial listing needs no action: every object arrives as an event."""
