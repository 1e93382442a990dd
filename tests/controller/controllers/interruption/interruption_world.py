"""The operator with its interruption controller wired to a moto-backed queue, over the
memory adapter and the fake cloud, on a virtual clock (a plain module with a unique
name, so the test modules can import it)."""

from __future__ import annotations

from typing import Any

from joiner.api import labels as wk
from joiner.api.validation import validate_object
from joiner.clock import FakeClock
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.controllers.interruption.controller import InterruptionFeed
from joiner.controllers.interruption.queue import InlineReceiver
from joiner.kube.memory import MemoryKube
from joiner.operator import Operator, OperatorOptions
from joiner.sim.interruption import InterruptionBus, event_entry
from joiner.state.feed import DrainFeed

ZONE_A, ZONE_B = "test-zone-1", "test-zone-2"
REGION = "us-east-1"
MAX_STEPS = 10_000


def catalogue() -> list[InstanceType]:
    """One type, spot in two zones (A cheaper) and on-demand in A."""
    return [
        new_instance_type(
            "c-4x8",
            cpu="4",
            memory="8Gi",
            pods=10,
            offerings=[
                Offering(ZONE_A, wk.CAPACITY_TYPE_SPOT, 0.06),
                Offering(ZONE_B, wk.CAPACITY_TYPE_SPOT, 0.07),
                Offering(ZONE_A, wk.CAPACITY_TYPE_ON_DEMAND, 0.17),
            ],
        )
    ]


NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "NodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
    },
}
NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]}
                ],
            }
        }
    },
}


def big_pod(name: str) -> dict[str, Any]:
    """Three CPUs: one pod per node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "main", "image": "app", "resources": {"requests": {"cpu": "3"}}}
            ]
        },
    }


class World:
    def __init__(
        self,
        bus: InterruptionBus,
        replace_on_rebalance: bool = False,
        feed: InterruptionFeed | None = None,
    ) -> None:
        self.bus = bus
        self.clock = FakeClock()
        self.kube = MemoryKube(self.clock, garbage_collection="manual")
        self.cloud = FakeCloudProvider(catalogue(), self.clock)
        feed = feed or InterruptionFeed(
            bus.queue,
            InlineReceiver(bus.queue),
            poll_interval=1.0,
            workers=4,
        )
        self.operator = Operator(
            self.kube,
            self.cloud,
            self.clock,
            self.cloud.resolve_nodeclass,
            OperatorOptions(replace_on_rebalance=replace_on_rebalance),
            validate=validate_object,
            interruption_feed=feed,
        )
        self.operator.attach(DrainFeed)

    # --- time ----------------------------------------------------------------------------

    def settle(self) -> None:
        for _ in range(MAX_STEPS):
            ran = (
                self.operator.pump() + self.operator.manager.run_due() + self.kube.collect_garbage()
            )
            if not ran:
                return
        raise AssertionError("the operator did not settle")

    def advance(self, seconds: float) -> None:
        end = self.clock.now() + seconds
        self.settle()
        while (due := self.operator.manager.next_due()) is not None and due <= end:
            self.clock.set(max(due, self.clock.now()))
            self.settle()
        self.clock.set(end)
        self.settle()

    # --- setup ----------------------------------------------------------------------------

    def launch(self, count: int) -> list[dict[str, Any]]:
        """``count`` one-pod NodeClaims, launched (not registered: no kubelet here)."""
        for manifest in (NODECLASS, NODEPOOL):
            self.kube.create(manifest)
        for index in range(count):
            self.unschedulable(big_pod(f"app-{index}"))
        self.advance(15)
        claims = self.nodeclaims()
        assert len(claims) == count and all(c["status"].get("providerID") for c in claims)
        return claims

    def unschedulable(self, pod: dict[str, Any]) -> None:
        created = self.kube.create(pod)
        created["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ]
        self.kube.update_status(created)

    # --- EC2 and EventBridge ------------------------------------------------------------------

    def publish(self, kind: str, claim: dict[str, Any]) -> None:
        """The event EC2 / AWS Health sends about the claim's instance, via PutEvents."""
        self.bus.publish(
            [event_entry(kind, instance_id(claim), REGION, self.clock.now(), self.bus.name)]
        )

    def send_raw(self, body: str) -> None:
        """A body put straight on the queue, bypassing the rules."""
        self.bus.sqs.send_message(QueueUrl=self.bus.queue_url, MessageBody=body)

    def queue_depth(self) -> int:
        attributes = self.bus.sqs.get_queue_attributes(
            QueueUrl=self.bus.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    # --- reading ----------------------------------------------------------------------------

    def nodeclaims(self) -> list[dict[str, Any]]:
        return sorted(self.kube.list("NodeClaim").items, key=lambda c: c["metadata"]["name"])

    def claim_names(self) -> list[str]:
        return [c["metadata"]["name"] for c in self.nodeclaims()]

    def event_reasons(self) -> list[tuple[str, str]]:
        """(involved NodeClaim, reason) of the interruption events, in creation order."""
        items = sorted(
            self.kube.list("Event").items, key=lambda e: int(e["metadata"]["resourceVersion"])
        )
        return [
            (e["involvedObject"]["name"], e["reason"])
            for e in items
            if e["reason"] not in ("Launched", "Nominated", "Registered", "Initialized")
        ]

    def metric(self, name: str, **labels: str) -> float:
        value = self.operator.metrics.registry.get_sample_value(name, labels)
        return value or 0.0


def instance_id(claim: dict[str, Any]) -> str:
    return claim["status"]["providerID"].rsplit("/", 1)[1]
