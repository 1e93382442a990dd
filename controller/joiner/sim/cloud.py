"""The cloud a simulation runs against, behind one small interface.

``fake``: the scenario's own catalogue in memory (``FakeCloudProvider``).
The simulator needs a little more than the CloudProvider port: whether an
instance still exists (for the kubelet), what an instance costs (for the
report), and the facts of the static nodes present at the start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import Clock
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.cloudprovider.types import CloudProvider, Offering
from joiner.sim.scenario import CapacityKey, ReservationSpec, Scenario, ScenarioError, StaticNode


@dataclass(frozen=True)
class StaticNodeFacts:
    labels: dict[str, str]
    capacity: res.ResourceList
    allocatable: res.ResourceList
    price: float | None


class SimCloud(Protocol):
    provider: CloudProvider
    # The boto3 EC2 client the controller's provider calls through (None: a fake cloud).
    controller_ec2: Any | None

    def resolve_nodeclass(self, nodeclass: EC2NodeClass) -> dict[str, Any]: ...

    def instance_exists(self, provider_id: str) -> bool: ...

    def instance_price(self, provider_id: str) -> float | None: ...

    def static_node(self, node: StaticNode) -> StaticNodeFacts: ...

    def set_available(self, keys: tuple[CapacityKey, ...], available: bool) -> None: ...

    def reclaim(self, provider_id: str) -> None: ...

    def restart_provider(self) -> None: ...

    def fail_launches(self, keys: tuple[CapacityKey, ...]) -> None: ...

    # The scenario's capacity reservations with their ids in the cloud.
    reservations: list[tuple[str, ReservationSpec]]


class FakeSimCloud:
    def __init__(self, scenario: Scenario, clock: Clock) -> None:
        self.reservations: list[tuple[str, ReservationSpec]] = []  # aws only
        self.catalogue = {t.name: t.to_instance_type() for t in scenario.cloud.instance_types}
        self.provider = FakeCloudProvider(list(self.catalogue.values()), clock)
        self.controller_ec2 = None
        self.prices = dict(scenario.cloud.prices or {})

    def resolve_nodeclass(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        return self.provider.resolve_nodeclass(nodeclass)

    def instance_exists(self, provider_id: str) -> bool:
        return provider_id in self.provider.instances

    def instance_price(self, provider_id: str) -> float | None:
        instance = self.provider.instances.get(provider_id)
        return instance.price if instance else None

    def static_node(self, node: StaticNode) -> StaticNodeFacts:
        instance_type = self.catalogue[node.instance_type]  # the loader checked it is there
        offering = next(
            (
                o
                for o in instance_type.offerings
                if o.zone == node.zone and o.capacity_type == node.capacity_type
            ),
            None,
        )
        price = offering.price if offering else self.prices.get(node.instance_type)
        labels = {
            k: r.any_value()
            for k, r in instance_type.requirements.items()
            if len(r) == 1 and r.any_value() is not None
        }
        labels.update({wk.ZONE: node.zone, wk.CAPACITY_TYPE: node.capacity_type})
        return StaticNodeFacts(labels, instance_type.capacity, instance_type.allocatable, price)

    def reclaim(self, provider_id: str) -> None:
        """EC2 takes the instance away (an interruption coming true)."""
        self.provider.instances.pop(provider_id, None)

    def restart_provider(self) -> None:
        """The controller restarted: its provider forgets; the instances stay."""
        self.provider.forget()

    def bind_nodeclasses(self, lookup: Callable[[str], EC2NodeClass | None]) -> None:
        """The fake cloud treats every class as Ready and never reads them."""

    def close(self) -> None:
        """Nothing to release: the fake cloud is plain memory."""

    def set_available(self, keys: tuple[CapacityKey, ...], available: bool) -> None:
        for key in keys:
            for offering in self._matching(key):
                entry = (key.instance_type, offering.zone, offering.capacity_type)
                if available:
                    self.provider.unavailable.discard(entry)
                else:
                    self.provider.unavailable.add(entry)

    def fail_launches(self, keys: tuple[CapacityKey, ...]) -> None:
        """These offerings still look available, but launching them fails with
        insufficient capacity (the rest of a launch's offerings are tried)."""
        for key in keys:
            for offering in self._matching(key):
                entry = (key.instance_type, offering.zone, offering.capacity_type)
                self.provider.no_capacity.add(entry)

    def _matching(self, key: CapacityKey) -> list[Offering]:
        instance_type = self.catalogue.get(key.instance_type)
        if instance_type is None:
            return []
        return [
            o
            for o in instance_type.offerings
            if key.zone in (None, o.zone) and key.capacity_type in (None, o.capacity_type)
        ]


def build_cloud(scenario: Scenario, clock: Clock) -> SimCloud:
    if scenario.cloud.provider == "fake":
        return FakeSimCloud(scenario, clock)
    try:  # moto loads only when a scenario asks for it
        from joiner.sim.embedded_aws import EmbeddedAWS
    except ImportError as err:
        raise ScenarioError(
            f"spec.cloud.provider: aws needs the embedded AWS ({err.name} is missing): "
            "pip install 'joiner[sim]'"
        ) from None
    return EmbeddedAWS(scenario, clock)
