"""NodeOverlay (karpenter.sh/v1alpha1, gate NodeOverlay): typed view over the dict form
[OVERLAY].

An overlay selects instance types (and offerings) by ``requirements`` and changes what
the scheduler and consolidation see of them: the price of the offerings it selects
(``price`` replaces it, ``priceAdjustment`` shifts it by an amount or a percentage), and
``capacity`` adds extended resources. Validation lives in ``joiner.api.validation``;
which overlay wins where several select the same type is ``joiner.cloudprovider.overlays``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from joiner.api.requirements import Requirements
from joiner.api.resources import ResourceList, parse_resource_list

KIND = "NodeOverlay"
VERSION = "v1alpha1"
# The resources a node's own description sets; upstream's CRD refuses them in capacity.
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


def adjusted_price(price: float, update: str) -> float:
    """The price after an overlay's ``price`` ("0.5": replaces it) or ``priceAdjustment``
    ("+0.1", "-0.2": add; "+10%", "-15%": scale), never below zero, as upstream."""
    if not update.startswith(("+", "-")):
        return float(update)
    if update.endswith("%"):
        return max(price + price * float(update[:-1]) / 100, 0.0)
    return max(price + float(update), 0.0)


@dataclass(frozen=True)
class NodeOverlay:
    name: str
    requirements: Requirements
    weight: int = 0  # unset counts as 0, below every weight one may write (1..10000)
    price: str | None = None
    price_adjustment: str | None = None
    capacity: ResourceList = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> NodeOverlay:
        spec = raw.get("spec") or {}
        return cls(
            name=raw["metadata"]["name"],
            requirements=Requirements.from_node_selector_requirements(
                spec.get("requirements") or []
            ),
            weight=spec.get("weight") or 0,
            price=spec.get("price"),
            price_adjustment=spec.get("priceAdjustment"),
            capacity=parse_resource_list(spec.get("capacity")),
        )

    @property
    def price_update(self) -> str | None:
        """``price`` or ``priceAdjustment``, whichever is set (the CRD allows one)."""
        return self.price if self.price is not None else self.price_adjustment
