"""The operator on a virtual clock, over the memory adapter and the fake cloud, with the
test playing kubelet and kube-scheduler by hand. (A plain module, not conftest, so the
tests import it by a name no other test directory uses.)"""

from __future__ import annotations

from typing import Any

from joiner import testing
from joiner.api import labels as wk
from joiner.api.conditions import FALSE, TRUE, is_true, set_condition
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.kube.controllermanager import NODE_LIFECYCLE_DELAY
from joiner.operator import OperatorOptions

ZONE_A, ZONE_B = "test-zone-1", "test-zone-2"


def catalogue() -> list[InstanceType]:
    """Three sizes, each spot in zone A and on-demand in zone B, priced so a bigger type
    always costs more."""

    def offerings(price: float) -> list[Offering]:
        return [
            Offering(ZONE_A, wk.CAPACITY_TYPE_SPOT, price),
            Offering(ZONE_B, wk.CAPACITY_TYPE_ON_DEMAND, price * 2),
        ]

    return [
        new_instance_type("small", cpu="2", memory="4Gi", pods=10, offerings=offerings(0.02)),
        new_instance_type("medium", cpu="4", memory="8Gi", pods=20, offerings=offerings(0.04)),
        new_instance_type("large", cpu="8", memory="16Gi", pods=40, offerings=offerings(0.08)),
    ]


def pending_pod(
    name: str,
    cpu: str,
    memory: str = "256Mi",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod as a workload controller creates it (Pending, not yet looked at)."""
    return testing.pod(name, cpu, memory, labels=labels or {}, **spec)


class Harness(testing.OperatorRig):
    """The operator on a virtual clock with the test playing kubelet and kube-scheduler."""

    def __init__(
        self,
        instance_types: list[InstanceType] | None = None,
        batch_idle: float = 1.0,
        batch_max: float = 10.0,
    ) -> None:
        super().__init__(
            instance_types or catalogue(),
            OperatorOptions(batch_idle=batch_idle, batch_max=batch_max),
        )
        self.start = self.clock.now()

    # --- setup ----------------------------------------------------------------------------

    def install(self, *manifests: dict[str, Any]) -> None:
        for manifest in manifests:
            self.kube.create(manifest)
        self.settle()

    def default_setup(self) -> None:
        self.install(testing.ec2nodeclass(), testing.nodepool())

    # --- reading ----------------------------------------------------------------------------

    def nodeclaims(self) -> list[dict[str, Any]]:
        return sorted(
            self.kube.list("NodeClaim").items,
            key=lambda c: (c["metadata"]["creationTimestamp"], c["metadata"]["name"]),
        )

    def events(self, reason: str | None = None) -> list[tuple[str, str, str]]:
        """(involved object's kind, its name, reason) in creation order."""
        items = sorted(
            self.kube.list("Event").items, key=lambda e: int(e["metadata"]["resourceVersion"])
        )
        return [
            (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"])
            for e in items
            if reason is None or e["reason"] == reason
        ]

    def create_unschedulable(self, pod: dict[str, Any]) -> None:
        """Create the pod and mark it as kube-scheduler does when no node fits it."""
        testing.create_unschedulable(self.kube, pod)

    def pod(self, name: str) -> dict[str, Any]:
        return self.kube.get("Pod", name, "default")

    # --- playing kubelet and kube-scheduler ------------------------------------------------------

    def register_node(self, claim_name: str, node_name: str | None = None) -> str:
        """The instance's kubelet creates a NotReady Node carrying the providerID and the
        labels user data gave it, tainted unregistered."""
        claim = self.kube.get("NodeClaim", claim_name)
        name = node_name or f"node-{claim_name}"
        node = testing.kubelet_node(claim, name)
        set_condition(node["status"]["conditions"], "Ready", FALSE, self.clock.now())
        self.kube.create(node)
        return name

    def initialized_node(self, cpu: str = "1") -> tuple[str, str]:
        """One NodeClaim taken through launch, registration and initialization, empty
        again: (claim name, node name)."""
        self.create_unschedulable(pending_pod("seed", cpu))
        self.advance(1)
        [claim] = self.nodeclaims()
        name = claim["metadata"]["name"]
        node_name = self.register_node(name)
        self.set_node_ready(node_name)
        self.advance(NODE_LIFECYCLE_DELAY)  # the not-ready taint goes
        assert is_true(self.kube.get("NodeClaim", name)["status"]["conditions"], "Initialized")
        self.kube.delete("Pod", "seed", "default")  # unbound: gone at once
        self.settle()
        return name, node_name

    def set_node_ready(self, node_name: str, ready: bool = True) -> None:
        node = self.kube.get("Node", node_name)
        status = TRUE if ready else FALSE
        set_condition(node["status"]["conditions"], "Ready", status, self.clock.now())
        self.kube.update_status(node)

    def bind_running(self, pod_name: str, node_name: str) -> None:
        """kube-scheduler binds the pod; the kubelet runs it and reports it Ready."""
        self.kube.bind(pod_name, "default", node_name)
        pod = self.pod(pod_name)
        pod["status"]["phase"] = "Running"
        set_condition(pod["status"]["conditions"], "Ready", TRUE, self.clock.now())
        self.kube.update_status(pod)

    def finish_terminating_pods(self) -> list[str]:
        """The kubelet stops the containers of pods being deleted; returns their names."""
        gone = []
        for pod in self.kube.list("Pod").items:
            if pod["metadata"].get("deletionTimestamp"):
                self.kube.delete("Pod", pod["metadata"]["name"], "default", grace_period_seconds=0)
                gone.append(pod["metadata"]["name"])
        return sorted(gone)
