"""Prices of a live cluster's nodes for ``joiner top``: the on-demand price list
embedded in the package (the one the controller falls back to, pricetables.py), for
the node's region; spot at the controller's own default fraction of on-demand
(pricing.SPOT_FRACTION), as it prices spot without a spot price history. ``top``
reads no AWS API: it needs Kubernetes read access only."""

from __future__ import annotations

from collections.abc import Mapping

from joiner.api import labels as wk
from joiner.cloudprovider.aws.pricetables import FALLBACK_REGION, builtin_table
from joiner.cloudprovider.aws.pricing import SPOT_FRACTION


def embedded_price(labels: Mapping[str, str]) -> float | None:
    """USD per hour of the offering a node's labels name; None for a type not listed."""
    instance_type = labels.get(wk.INSTANCE_TYPE)
    if not instance_type:
        return None
    on_demand = _table(labels.get(wk.REGION) or FALLBACK_REGION).get(instance_type)
    if on_demand is None or labels.get(wk.CAPACITY_TYPE) != wk.CAPACITY_TYPE_SPOT:
        return on_demand
    return round(on_demand * SPOT_FRACTION, 6)


def _table(region: str) -> dict[str, float]:
    try:
        return builtin_table(region).prices
    except ValueError:  # not a region's name: the fallback region's list, as the controller
        return builtin_table(FALLBACK_REGION).prices
