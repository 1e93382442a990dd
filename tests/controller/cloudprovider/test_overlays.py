"""NodeOverlays applied to instance types [OVERLAY-2..5]: selection, price and capacity
changes, weight precedence and equal-weight conflicts, as upstream Karpenter resolves them."""

from __future__ import annotations

from typing import Any

import pytest
from joiner.api.nodeoverlay import NodeOverlay, adjusted_price
from joiner.api.nodepool import NodePool
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.cloudprovider.overlays import OverlaidCloudProvider, Resolution, resolve
from joiner.cloudprovider.types import InstanceType, Offering

ZONES = ("z1", "z2")


def _type(name: str, labels: dict[str, str] | None = None) -> InstanceType:
    offerings = [
        Offering(z, ct, 1.0 if ct == "spot" else 2.0) for z in ZONES for ct in ("spot", "on-demand")
    ]
    return new_instance_type(name, offerings=offerings, labels=labels)


TYPES = [_type("m5.large", {"karpenter.k8s.aws/instance-family": "m5"}), _type("c5.large")]


def _pool(name: str = "default", labels: dict[str, str] | None = None) -> NodePool:
    template = {"metadata": {"labels": labels or {}}, "spec": {"nodeClassRef": {"name": "d"}}}
    return NodePool.from_dict({"metadata": {"name": name}, "spec": {"template": template}})


def _overlay(name: str, requirements: list[dict[str, Any]], **spec: Any) -> NodeOverlay:
    return NodeOverlay.from_dict(
        {"metadata": {"name": name}, "spec": {"requirements": requirements, **spec}}
    )


def _on(*types: str) -> dict[str, Any]:
    return {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)}


def _applied(
    overlays: list[NodeOverlay], pools: list[NodePool] | None = None
) -> tuple[dict[str, InstanceType], Resolution]:
    pools = pools or [_pool()]
    cloud = OverlaidCloudProvider(FakeCloudProvider(TYPES))
    cloud.set_resolution(resolve(overlays, pools, cloud.base_instance_types))
    return {it.name: it for it in cloud.get_instance_types(pools[0])}, cloud.resolution


def _prices(it: InstanceType) -> dict[tuple[str, str], float]:
    return {(o.zone, o.capacity_type): o.price for o in it.offerings}


@pytest.mark.parametrize(
    "price, update, expected",
    [
        (2.0, "0.5", 0.5),  # price replaces
        (2.0, "+10%", 2.2),
        (2.0, "-15%", 1.7),
        (2.0, "-100%", 0.0),
        (2.0, "+0.25", 2.25),
        (2.0, "-0.5", 1.5),
        (2.0, "-5", 0.0),  # never below zero
    ],
)
def test_price_and_price_adjustment(price: float, update: str, expected: float) -> None:
    assert adjusted_price(price, update) == pytest.approx(expected)


def test_price_changes_only_the_offerings_the_requirements_select() -> None:
    spot_only = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
    types, resolution = _applied([_overlay("spot-m5", [_on("m5.large"), spot_only], price="0.1")])
    assert _prices(types["m5.large"]) == {
        ("z1", "spot"): 0.1,
        ("z1", "on-demand"): 2.0,
        ("z2", "spot"): 0.1,
        ("z2", "on-demand"): 2.0,
    }
    assert _prices(types["c5.large"]) == _prices(TYPES[1])
    assert resolution.conflicts == frozenset()


def test_capacity_adds_extended_resources_and_keeps_the_rest() -> None:
    types, _ = _applied(
        [_overlay("slices", [_on("c5.large")], capacity={"example.com/slice": "4"})]
    )
    assert types["c5.large"].capacity == {**TYPES[1].capacity, "example.com/slice": 4000}
    assert types["c5.large"].allocatable["example.com/slice"] == 4000
    assert types["m5.large"].capacity == TYPES[0].capacity


def test_higher_weight_sets_the_price_lower_weight_still_adds_its_resources() -> None:
    overlays = [
        _overlay(
            "a-low",
            [_on("m5.large")],
            weight=1,
            priceAdjustment="+100%",
            capacity={"example.com/a": "1"},
        ),
        _overlay(
            "z-high", [_on("m5.large")], weight=50, price="0.3", capacity={"example.com/b": "2"}
        ),
    ]
    types, resolution = _applied(overlays)
    assert set(_prices(types["m5.large"]).values()) == {0.3}
    assert types["m5.large"].capacity["example.com/a"] == 1000
    assert types["m5.large"].capacity["example.com/b"] == 2000
    assert resolution.conflicts == frozenset()


def test_equal_weight_price_overlays_on_one_offering_conflict_and_the_later_is_not_applied() -> (
    None
):
    overlays = [
        _overlay(
            "b-second", [_on("m5.large")], weight=5, price="9", capacity={"example.com/x": "1"}
        ),
        _overlay(
            "a-first",
            [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}],
            weight=5,
            price="0.2",
        ),
    ]
    types, resolution = _applied(overlays)
    assert resolution.conflicts == frozenset({"b-second"})
    assert set(_prices(types["m5.large"]).values()) == {0.2}
    assert "example.com/x" not in types["m5.large"].capacity  # all or nothing


def test_equal_weight_capacity_conflicts_only_on_the_same_resource() -> None:
    overlays = [
        _overlay("a", [_on("m5.large")], capacity={"example.com/x": "1"}),
        _overlay("b", [_on("m5.large")], capacity={"example.com/y": "1"}),
        _overlay("c", [_on("m5.large")], capacity={"example.com/x": "2"}),
    ]
    types, resolution = _applied(overlays)
    assert resolution.conflicts == frozenset({"c"})
    assert types["m5.large"].capacity["example.com/x"] == 1000
    assert types["m5.large"].capacity["example.com/y"] == 1000


def test_equal_weight_on_disjoint_offerings_is_no_conflict() -> None:
    spot = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
    od = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
    types, resolution = _applied(
        [_overlay("a", [spot], price="0.5"), _overlay("b", [od], price="0.7")]
    )
    assert resolution.conflicts == frozenset()
    assert _prices(types["c5.large"])[("z1", "on-demand")] == 0.7


def test_nodepool_and_template_labels_select_per_pool() -> None:
    gpu, default = _pool("gpu", {"example.com/team": "ml"}), _pool("default")
    overlay = _overlay(
        "team", [{"key": "example.com/team", "operator": "In", "values": ["ml"]}], price="0.01"
    )
    by_pool = _overlay(
        "pool",
        [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
        price="0.02",
    )
    cloud = OverlaidCloudProvider(FakeCloudProvider(TYPES))
    cloud.set_resolution(resolve([overlay, by_pool], [gpu, default], cloud.base_instance_types))
    assert {o.price for it in cloud.get_instance_types(gpu) for o in it.offerings} == {0.01}
    assert {o.price for it in cloud.get_instance_types(default) for o in it.offerings} == {0.02}


def test_a_custom_label_no_pool_defines_selects_nothing() -> None:
    overlay = _overlay(
        "team", [{"key": "example.com/team", "operator": "In", "values": ["ml"]}], price="0.01"
    )
    types, _ = _applied([overlay])
    assert _prices(types["m5.large"]) == _prices(TYPES[0])


def test_the_overlaid_list_is_the_same_object_until_something_changes() -> None:
    cloud = OverlaidCloudProvider(FakeCloudProvider(TYPES))
    pool = _pool()
    assert cloud.get_instance_types(pool) is cloud.base_instance_types(pool)  # no overlays
    cloud.set_resolution(
        resolve([_overlay("p", [_on("m5.large")], price="1")], [pool], cloud.base_instance_types)
    )
    first = cloud.get_instance_types(pool)
    assert cloud.get_instance_types(pool) is first
    cloud.set_resolution(resolve([], [pool], cloud.base_instance_types))
    assert cloud.get_instance_types(pool) is cloud.base_instance_types(pool)
