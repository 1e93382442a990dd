"""Prices of offerings: on-demand from the Pricing API, spot from the spot price history,
and an estimate whenever neither is known, so every offering always has a price.

Sources, in order of preference [SPEC 5]:
1. on-demand: the Pricing API (GetProducts, us-east-1 endpoint), refreshed every 12h;
   spot: DescribeSpotPriceHistory per zone, refreshed every 12h.
2. a static table injected at construction (the simulator's price file), over
3. the on-demand table shipped in the package for the region (``pricetables``), used
   before the first refresh, when the API fails and with ISOLATED_VPC.
4. an estimate: a linear model ``price = a*vCPU + b*GiB + c*accelerators`` fitted by least
   squares to the known prices of the same family (else category and generation, else
   category, else every known type; a group needs 3 known prices), with fixed
   coefficients when nothing is known (fitted once to c5/m5/r5 us-east-1 list prices:
   $0.0357 per vCPU-hour, $0.0034 per GiB-hour and $0.50 per GPU/accelerator-hour).
Spot without a plausible history price defaults to ``SPOT_FRACTION`` (40%) of the
on-demand price. A history price below ``MIN_PLAUSIBLE_SPOT_FRACTION`` (5%) of on-demand
is not plausible (moto reports $0.00001 for everything) and is ignored. A reserved
offering (in a capacity reservation) costs the on-demand price / ``RESERVED_PRICE_DIVISOR``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
from botocore.exceptions import BotoCoreError, ClientError

from joiner.api import labels as wk
from joiner.clock import Clock
from joiner.cloudprovider.aws.instancetypes import vcpus
from joiner.cloudprovider.aws.pricetables import builtin_table

log = logging.getLogger(__name__)

REFRESH_SECONDS = 12 * 3600
RETRY_AFTER_FAILURE_SECONDS = 15 * 60
SPOT_FRACTION = 0.4
MIN_PLAUSIBLE_SPOT_FRACTION = 0.05
# A reserved offering costs the on-demand price over this (upstream's): next to free, as a
# reservation is paid for whether used or not, yet in the types' on-demand order.
RESERVED_PRICE_DIVISOR = 10_000_000.0
DEFAULT_PER_VCPU = 0.0357
DEFAULT_PER_GIB = 0.0034
DEFAULT_PER_ACCELERATOR = 0.50
MIN_FIT_POINTS = 3
SPOT_PRODUCT_DESCRIPTIONS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
# What an on-demand EC2 price is in the Price List: Linux, no pre-installed software,
# shared tenancy, an instance in use (not a capacity reservation), the on-demand market.
PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "preInstalledSw": "NA",
    "tenancy": "Shared",
    "capacitystatus": "Used",
    "marketoption": "OnDemand",
}
PAGE_SIZE = 100  # GetProducts' largest MaxResults


def _features(info: Mapping[str, Any]) -> list[float]:
    gpus = sum(g["Count"] for g in (info.get("GpuInfo") or {}).get("Gpus") or ())
    neuron = sum(d["Count"] for d in (info.get("NeuronInfo") or {}).get("NeuronDevices") or ())
    return [float(vcpus(info)), info["MemoryInfo"]["SizeInMiB"] / 1024, float(gpus + neuron)]


class PriceEstimator:
    """The linear estimate model described in the module docstring."""

    def __init__(self, known: Mapping[str, float], infos: Mapping[str, Mapping[str, Any]]):
        self._groups: dict[tuple[str, ...], list[str]] = {}
        for name in known:
            if name in infos:
                for key in self._group_keys(name):
                    self._groups.setdefault(key, []).append(name)
        self._known, self._infos = known, infos
        self._fits: dict[tuple[str, ...], np.ndarray | None] = {}

    @staticmethod
    def _group_keys(name: str) -> list[tuple[str, ...]]:
        labels = wk.instance_type_labels(name)
        category = labels.get(wk.INSTANCE_CATEGORY, "")
        generation = labels.get(wk.INSTANCE_GENERATION, "")
        return [(labels[wk.INSTANCE_FAMILY], "family"), (category, generation), (category,), ()]

    def estimate(self, info: Mapping[str, Any]) -> float:
        features = np.array(_features(info))
        for key in self._group_keys(info["InstanceType"]):
            coefficients = self._fit(key)
            if coefficients is not None:
                return round(float(features @ coefficients), 6)
        default = np.array([DEFAULT_PER_VCPU, DEFAULT_PER_GIB, DEFAULT_PER_ACCELERATOR])
        return round(float(features @ default), 6)

    def _fit(self, key: tuple[str, ...]) -> np.ndarray | None:
        if key not in self._fits:
            names = self._groups.get(key, [])
            self._fits[key] = self._least_squares(names) if len(names) >= MIN_FIT_POINTS else None
        return self._fits[key]

    def _least_squares(self, names: list[str]) -> np.ndarray | None:
        x = np.array([_features(self._infos[n]) for n in names])
        y = np.array([self._known[n] for n in names])
        active = [i for i in range(x.shape[1]) if x[:, i].any()]
        # Drop features whose coefficient comes out negative (a price never falls as a
        # machine grows) and refit on the rest.
        while active:
            solution, *_ = np.linalg.lstsq(x[:, active], y, rcond=None)
            if (solution >= 0).all():
                coefficients = np.zeros(x.shape[1])
                coefficients[active] = solution
                return coefficients
            active = [a for a, s in zip(active, solution, strict=True) if s >= 0]
        return None


class PricingProvider:
    """Current prices; ``refresh_if_due`` calls the APIs when their period has passed."""

    def __init__(
        self,
        clock: Clock,
        region: str,
        pricing_client: Any | None = None,
        ec2: Any | None = None,
        static_on_demand: Mapping[str, float] | None = None,
        isolated_vpc: bool = False,
        infos: Callable[[], Mapping[str, Mapping[str, Any]]] = dict,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self._clock = clock
        self._region = region
        self._pricing = None if isolated_vpc else pricing_client
        self._ec2 = ec2
        table = builtin_table(region)
        log.info(
            "built-in on-demand prices for %s: %d types (%s, %s)",
            region,
            len(table.prices),
            table.source,
            table.as_of,
        )
        self._static = {**table.prices, **(static_on_demand or {})}
        self._infos = infos
        self._refresh_seconds = refresh_seconds
        self._on_demand: dict[str, float] = {}
        self._spot: dict[tuple[str, str], float] = {}
        self._next_on_demand = 0.0
        self._next_spot = 0.0
        self._estimator: PriceEstimator | None = None
        self._estimator_key: tuple[int, int] | None = None
        self.generation = 0

    # --- refresh -------------------------------------------------------------------

    def refresh_if_due(self) -> None:
        now = self._clock.now()
        if self._pricing is not None and now >= self._next_on_demand:
            self._next_on_demand = now + self._attempt(self._refresh_on_demand, "on-demand")
        if self._ec2 is not None and now >= self._next_spot:
            self._next_spot = now + self._attempt(self._refresh_spot, "spot")

    def _attempt(self, refresh: Callable[[], None], what: str) -> float:
        """Run one refresh; the delay until the next attempt."""
        try:
            refresh()
        except (BotoCoreError, ClientError) as error:
            log.warning("%s price refresh failed, using fallback prices: %s", what, error)
            return RETRY_AFTER_FAILURE_SECONDS
        self.generation += 1
        return self._refresh_seconds

    def _refresh_on_demand(self) -> None:
        prices = fetch_on_demand_prices(self._pricing, self._region)
        if prices:
            self._on_demand = prices

    def _refresh_spot(self) -> None:
        latest: dict[tuple[str, str], tuple[datetime, float]] = {}
        paginator = self._ec2.get_paginator("describe_spot_price_history")
        start = datetime.fromtimestamp(self._clock.now(), tz=UTC)
        for page in paginator.paginate(
            ProductDescriptions=SPOT_PRODUCT_DESCRIPTIONS, StartTime=start
        ):
            for entry in page["SpotPriceHistory"]:
                key = (entry["InstanceType"], entry["AvailabilityZone"])
                stamp, price = entry["Timestamp"], float(entry["SpotPrice"])
                if key not in latest or stamp > latest[key][0]:
                    latest[key] = (stamp, price)
        self._spot = {key: price for key, (_, price) in latest.items()}

    # --- prices --------------------------------------------------------------------

    def on_demand_price(self, name: str) -> float | None:
        """The known on-demand price (Pricing API, else the static tables), or None."""
        return self._on_demand.get(name, self._static.get(name))

    def price(self, info: Mapping[str, Any], capacity_type: str, zone: str) -> float:
        """Price of one offering in USD per hour; never missing."""
        name = info["InstanceType"]
        on_demand = self.on_demand_price(name)
        if on_demand is None:
            on_demand = self._estimator_for().estimate(info)
        if capacity_type == wk.CAPACITY_TYPE_RESERVED:
            return on_demand / RESERVED_PRICE_DIVISOR
        if capacity_type != wk.CAPACITY_TYPE_SPOT:
            return on_demand
        spot = self._spot.get((name, zone))
        if spot is not None and spot >= on_demand * MIN_PLAUSIBLE_SPOT_FRACTION:
            return spot
        return round(on_demand * SPOT_FRACTION, 6)

    def _estimator_for(self) -> PriceEstimator:
        infos = self._infos()
        key = (self.generation, id(infos))
        if self._estimator is None or self._estimator_key != key:
            self._estimator = PriceEstimator({**self._static, **self._on_demand}, infos)
            self._estimator_key = key
        return self._estimator


def fetch_on_demand_prices(pricing_client: Any, region: str) -> dict[str, float]:
    """Every on-demand price of ``region`` from the Pricing API, page by page."""
    filters = [
        {"Type": "TERM_MATCH", "Field": field, "Value": value}
        for field, value in {**PRODUCT_FILTERS, "regionCode": region}.items()
    ]
    prices: dict[str, float] = {}
    paginator = pricing_client.get_paginator("get_products")
    pages = paginator.paginate(
        ServiceCode="AmazonEC2",
        Filters=filters,
        FormatVersion="aws_v1",
        PaginationConfig={"PageSize": PAGE_SIZE},
    )
    for page in pages:
        for item in page.get("PriceList", ()):
            parsed = parse_on_demand_product(item)
            if parsed is not None:
                prices[parsed[0]] = parsed[1]
    return prices


def parse_on_demand_product(item: str | Mapping[str, Any]) -> tuple[str, float] | None:
    """(instance type, USD per hour) from one GetProducts PriceList entry."""
    product = json.loads(item) if isinstance(item, str) else item
    name = product.get("product", {}).get("attributes", {}).get("instanceType")
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if name and usd is not None and float(usd) > 0:
                return name, float(usd)
    return None
