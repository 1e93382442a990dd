"""Pricing: Pricing API (moto answers 500; recorded answers in pricing_api.py), spot
history, the built-in and injected tables, and the estimate."""

from __future__ import annotations

import json

import pytest
from aws_moto_seed import (
    ACCOUNT,
    CLUSTER,
    K8S_VERSION,
    REGION,
    Env,
    client,
    moto_unenforced,
    seed_spot_prices,
)
from joiner.api import labels as wk
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.pricetables import load_price_file
from joiner.cloudprovider.aws.pricing import (
    REFRESH_SECONDS,
    RETRY_AFTER_FAILURE_SECONDS,
    PriceEstimator,
    PricingProvider,
    parse_on_demand_product,
)
from joiner.commands.controller import aws_cloud_factory
from joiner.settings import Settings
from pricing_api import RecordedPricingAPI
from test_aws_pricegen import pricing_client

SPOT, OD = wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND


def provider(env: Env, catalogue: InstanceTypeCatalogue, clock: FakeClock, **kw) -> PricingProvider:
    return PricingProvider(
        clock,
        "us-east-1",
        pricing_client=env.controller.pricing,
        ec2=env.controller.ec2,
        infos=catalogue.infos,
        **kw,
    )


def test_built_in_table_before_and_after_a_failed_pricing_api(
    env: Env, catalogue: InstanceTypeCatalogue
) -> None:
    clock = FakeClock()
    pricing = provider(env, catalogue, clock)
    m5 = catalogue.infos()["m5.xlarge"]
    assert pricing.price(m5, OD, "us-east-1a") == 0.192  # before any refresh
    pricing.refresh_if_due()  # moto's Pricing API fails: keep the table
    assert pricing.on_demand_price("m5.xlarge") == 0.192
    # moto's spot history says $0.00001: implausible, so 40% of on-demand
    assert pricing.price(m5, SPOT, "us-east-1a") == pytest.approx(0.0768)
    generation = pricing.generation
    clock.advance(RETRY_AFTER_FAILURE_SECONDS)
    pricing.refresh_if_due()  # on-demand retried (fails again); spot not due for 12h
    assert pricing.generation == generation
    clock.advance(REFRESH_SECONDS)
    pricing.refresh_if_due()
    assert pricing.generation == generation + 1  # spot refreshed


def test_pricing_api_prices_win_over_the_tables(catalogue: InstanceTypeCatalogue) -> None:
    """eu-west-1 has no table of its own: us-east-1's until the API (recorded) answers."""
    with RecordedPricingAPI() as api:
        pricing = PricingProvider(
            FakeClock(), "eu-west-1", pricing_client=pricing_client(api.url), infos=catalogue.infos
        )
        m5, c5 = catalogue.infos()["m5.large"], catalogue.infos()["c5.large"]
        assert pricing.price(m5, OD, "eu-west-1a") == 0.096
        pricing.refresh_if_due()
        assert pricing.price(m5, OD, "eu-west-1a") == 0.107
        assert pricing.on_demand_price("c6i.xlarge") == 0.192
        assert pricing.price(c5, OD, "eu-west-1a") == 0.085  # not in the answer: the table


def test_an_injected_table_wins_over_the_built_in_one(catalogue: InstanceTypeCatalogue) -> None:
    pricing = PricingProvider(
        FakeClock(), "us-east-1", static_on_demand={"m5.large": 0.5}, infos=catalogue.infos
    )
    assert pricing.price(catalogue.infos()["m5.large"], OD, "us-east-1a") == 0.5
    assert pricing.price(catalogue.infos()["m5.xlarge"], OD, "us-east-1a") == 0.192


def test_spot_history_prices_per_zone(
    env: Env, catalogue: InstanceTypeCatalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_spot_prices(
        monkeypatch,
        {("m5.xlarge", "us-east-1a"): "0.0701", ("m5.xlarge", "us-east-1b"): "0.0655"},
    )
    pricing = provider(env, catalogue, FakeClock())
    pricing.refresh_if_due()
    m5 = catalogue.infos()["m5.xlarge"]
    assert pricing.price(m5, SPOT, "us-east-1a") == 0.0701
    assert pricing.price(m5, SPOT, "us-east-1b") == 0.0655
    assert pricing.price(m5, SPOT, "us-east-1c") == pytest.approx(0.0768)  # no history there


def test_isolated_vpc_prices_from_the_built_in_list_and_estimates_the_rest(
    env: Env, catalogue: InstanceTypeCatalogue, price_table: dict[str, float]
) -> None:
    pricing = provider(env, catalogue, FakeClock(), isolated_vpc=True)
    pricing.refresh_if_due()
    infos = catalogue.infos()
    # us-east-1 list prices, as published
    assert pricing.price(infos["m5.large"], OD, "us-east-1a") == 0.096
    assert pricing.price(infos["c6i.xlarge"], OD, "us-east-1a") == 0.17
    assert pricing.price(infos["r7g.2xlarge"], OD, "us-east-1a") == 0.4284
    # a type the list lacks: the estimate fitted to the list's prices
    assert "r9g.large" not in price_table
    estimate = PriceEstimator(price_table, infos).estimate(infos["r9g.large"])
    assert pricing.price(infos["r9g.large"], OD, "us-east-1a") == estimate
    assert estimate > 0


def test_isolated_vpc_setting_prices_at_the_list_prices(
    env: Env, catalogue: InstanceTypeCatalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ISOLATED_VPC=true`` through the controller command's own wiring: no pricing
    client at all, and us-east-1's list prices from the first decision on."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", env.controller_keys.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", env.controller_keys.secret_access_key)
    client(env, "eks", env.admin_keys).create_cluster(
        name=CLUSTER,
        version=K8S_VERSION,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/cluster",
        resourcesVpcConfig={"subnetIds": sorted(env.subnets.values())},
    )
    settings = Settings.from_env(
        {"CLUSTER_NAME": CLUSTER, "AWS_REGION": REGION, "ISOLATED_VPC": "true"}
    )
    with moto_unenforced(env):
        build = aws_cloud_factory(settings, endpoint_url=env.url)
    cloud, _ = build(lambda name: None)
    assert cloud.clients.pricing is None
    infos = catalogue.infos()
    prices = {
        name: cloud.pricing.price(infos[name], OD, "us-east-1a")
        for name in ("m5.large", "c6i.xlarge", "r7g.2xlarge")
    }
    assert prices == {"m5.large": 0.096, "c6i.xlarge": 0.17, "r7g.2xlarge": 0.4284}


def test_every_type_has_a_positive_price(catalogue: InstanceTypeCatalogue) -> None:
    pricing = PricingProvider(FakeClock(), "us-east-1", infos=catalogue.infos)
    for info in catalogue.infos().values():
        for capacity_type in (OD, SPOT):
            assert pricing.price(info, capacity_type, "us-east-1a") > 0, info["InstanceType"]


def test_estimate_with_nothing_known_uses_the_fixed_coefficients(
    catalogue: InstanceTypeCatalogue,
) -> None:
    estimator = PriceEstimator({}, catalogue.infos())
    # 4 x 0.0357 + 16 GiB x 0.0034
    assert estimator.estimate(catalogue.infos()["m5.xlarge"]) == pytest.approx(0.1972)
    gpu = estimator.estimate(catalogue.infos()["p4d.24xlarge"])
    assert gpu == pytest.approx(96 * 0.0357 + 1152 * 0.0034 + 8 * 0.5)


def test_estimate_of_an_unpriced_type_follows_its_generation(
    catalogue: InstanceTypeCatalogue, price_table: dict[str, float]
) -> None:
    known = {k: v for k, v in price_table.items() if k not in ("m5.2xlarge", "c6g.4xlarge")}
    estimator = PriceEstimator(known, catalogue.infos())
    m5 = estimator.estimate(catalogue.infos()["m5.2xlarge"])
    c6g = estimator.estimate(catalogue.infos()["c6g.4xlarge"])
    assert m5 == pytest.approx(0.384, rel=0.01)  # m5 prices are linear in size
    assert c6g == pytest.approx(0.544, rel=0.03)
    # a family with no known price falls back to its category and generation
    del known["m7i-flex.large"]
    known = {k: v for k, v in known.items() if not k.startswith("m7i-flex.")}
    flex = PriceEstimator(known, catalogue.infos()).estimate(catalogue.infos()["m7i-flex.large"])
    assert flex == pytest.approx(price_table["m7i-flex.large"], rel=0.25)


def test_get_products_entry_is_parsed() -> None:
    entry = {
        "product": {"attributes": {"instanceType": "m5.large", "regionCode": "us-east-1"}},
        "terms": {
            "OnDemand": {
                "SKU.JRTCKXETXF": {
                    "priceDimensions": {
                        "SKU.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "pricePerUnit": {"USD": "0.0960000000"},
                        }
                    }
                }
            }
        },
    }
    assert parse_on_demand_product(json.dumps(entry)) == ("m5.large", 0.096)
    assert parse_on_demand_product(json.dumps({"product": {}, "terms": {}})) is None


def test_price_file_errors_name_the_entry(tmp_path) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text(json.dumps({"prices": {"m5.large": "cheap"}}))
    with pytest.raises(ValueError, match=r"price of 'm5\.large' must be a number"):
        load_price_file(bad)
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"m5.large": 0.096}))
    assert load_price_file(flat) == {"m5.large": 0.096}
