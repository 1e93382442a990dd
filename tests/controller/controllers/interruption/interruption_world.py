"""The operator with its interruption controller wired to a moto-backed queue, over the
memory adapter and the fake cloud, on a virtual clock (a plain module with a unique
name, so the test modules can import it)."""

from __future__ import annotations

from typing import Any

from joiner import testing
from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.controllers.interruption.controller import InterruptionFeed
from joiner.controllers.interruption.queue import InlineReceiver
from joiner.operator import OperatorOptions
from joiner.sim.interruption import InterruptionBus, event_entry

ZONE_A, ZONE_B = "test-zone-1", "test-zone-2"
REGION = "us-east-1"


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


def big_pod(name: str) -> dict[str, Any]:
    """Three CPUs: one pod per node."""
    return testing.pod(name, cpu="3")


class World(testing.OperatorRig):
    def __init__(
        self,
        bus: InterruptionBus,
        replace_on_rebalance: bool = False,
        feed: InterruptionFeed | None = None,
    ) -> None:
        super().__init__(
            catalogue(),
            OperatorOptions(replace_on_rebalance=replace_on_rebalance),
            feed
            or InterruptionFeed(bus.queue, InlineReceiver(bus.queue), poll_interval=1.0, workers=4),
        )
        self.bus = bus

    # --- setup ----------------------------------------------------------------------------

    def launch(self, count: int) -> list[dict[str, Any]]:
        """``count`` one-pod NodeClaims, launched (not registered: no kubelet here)."""
        for manifest in (testing.ec2nodeclass(), testing.nodepool()):
            self.kube.create(manifest)
        for index in range(count):
            self.unschedulable(big_pod(f"app-{index}"))
        self.advance(15)
        claims = self.nodeclaims()
        assert len(claims) == count and all(c["status"].get("providerID") for c in claims)
        return claims

    def unschedulable(self, pod: dict[str, Any]) -> None:
        testing.create_unschedulable(self.kube, pod)

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
            (e["involvedObject"]["name"], e["reason"]) for e in items if e["reason"] != "Nominated"
        ]

    def metric(self, name: str, **labels: str) -> float:
        value = self.operator.metrics.registry.get_sample_value(name, labels)
        return value or 0.0


def instance_id(claim: dict[str, Any]) -> str:
    return claim["status"]["providerID"].rsplit("/", 1)[1]
