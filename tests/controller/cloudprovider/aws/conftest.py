"""Fixtures for the AWS provider tests: moto in server mode on 127.0.0.1 (one per
session), a freshly reset and seeded account per test (``env``), and the instance-type
catalogue loaded once per session (moto's unfiltered DescribeInstanceTypes takes ~8 s).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from aws_moto_seed import PRICE_FILE, Env, make_clients, make_pricing, seed_env
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.pricing import PricingProvider, load_price_file
from moto.server import ThreadedMotoServer


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    # Every test seeds its own AMIs; moto's thousands of default ones only slow resets.
    saved = os.environ.get("MOTO_EC2_LOAD_DEFAULT_AMIS")
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    if saved is None:
        del os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"]
    else:
        os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = saved


@pytest.fixture(scope="session")
def catalogue(moto_url: str) -> InstanceTypeCatalogue:
    """Loaded once: its own clock never advances, so it never refreshes."""
    loaded = InstanceTypeCatalogue(make_clients(moto_url).ec2, FakeClock())
    loaded.refresh()
    return loaded


@pytest.fixture(scope="session")
def price_table() -> dict[str, float]:
    return load_price_file(PRICE_FILE)


@pytest.fixture
def env(moto_url: str) -> Env:
    return seed_env(moto_url)


@pytest.fixture(scope="session")
def pricing(
    moto_url: str, catalogue: InstanceTypeCatalogue, price_table: dict[str, float]
) -> PricingProvider:
    """Refreshed once (moto's full spot history takes seconds to parse)."""
    return make_pricing(moto_url, catalogue, price_table)
