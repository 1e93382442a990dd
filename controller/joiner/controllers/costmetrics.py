"""Price metrics [SPEC 11]: the price of every offering the NodePools can launch, and
what the managed nodes cost per hour (each at the price of the offering it runs on)."""

from __future__ import annotations

from collections.abc import Sequence

from joiner.api import labels as wk
from joiner.cloudprovider.types import CloudProvider, InstanceType
from joiner.controllers.runtime import Result
from joiner.metrics import Metrics
from joiner.state.cluster import ClusterState

KEY = "cost"
INTERVAL = 60.0  # prices move with the pricing refresh and spot markets, not by the second

# (instance type, zone, capacity type) -> USD per hour
Prices = dict[tuple[str, str, str], float]


class CostMetrics:
    name = "metrics.cost"

    def __init__(self, state: ClusterState, cloud: CloudProvider, metrics: Metrics) -> None:
        self.state, self.cloud, self.metrics = state, cloud, metrics
        self._published: Prices = {}
        self._read_from: list[Sequence[InstanceType]] = []  # the lists _published came from

    def reconcile(self, key: str) -> Result:
        catalogues = [self.cloud.get_instance_types(pool) for pool in self.state.nodepools.values()]
        if not _same_lists(catalogues, self._read_from):  # AWS hands out the same lists
            self._publish(_offering_prices(catalogues))  # while no price or type changed
            self._read_from = catalogues
        self.metrics.cluster_cost.set(round(self._cluster_cost(self._published), 6))
        return Result(requeue_after=INTERVAL)

    def _publish(self, prices: Prices) -> None:
        """Set the gauges whose price changed and drop those of offerings gone from every
        pool: a catalogue holds thousands of offerings and few move in a minute."""
        gauge = self.metrics.offering_price
        for instance_type, zone, capacity_type in self._published.keys() - prices.keys():
            gauge.remove(instance_type, capacity_type, zone)
        for (instance_type, zone, capacity_type), price in sorted(prices.items()):
            if self._published.get((instance_type, zone, capacity_type)) != price:
                gauge.labels(instance_type, capacity_type, zone).set(price)
        self._published = prices

    def _cluster_cost(self, prices: Prices) -> float:
        """Managed nodes that are launched, at their offering's price (0 when the offering
        is no longer in any pool's catalogue)."""
        total = 0.0
        for node in self.state.managed_nodes():
            labels = node.labels
            if node.provider_id is None:
                continue
            key = (
                labels.get(wk.INSTANCE_TYPE, ""),
                labels.get(wk.ZONE, ""),
                labels.get(wk.CAPACITY_TYPE, ""),
            )
            total += prices.get(key, 0.0)
        return total


def _offering_prices(catalogues: list[Sequence[InstanceType]]) -> Prices:
    prices: Prices = {}
    for instance_types in catalogues:
        for instance_type in instance_types:
            for offering in instance_type.offerings:
                key = (instance_type.name, offering.zone, offering.capacity_type)
                prices[key] = offering.price
    return prices


def _same_lists(a: list[Sequence[InstanceType]], b: list[Sequence[InstanceType]]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))
