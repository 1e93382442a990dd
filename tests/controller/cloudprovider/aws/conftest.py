"""Fixtures for the AWS provider tests, on the session's moto server (``moto_url``, in
tests/conftest.py): a freshly reset and seeded account per test (``env``), and the instance-type
catalogue loaded once per session (moto's unfiltered DescribeInstanceTypes takes ~8 s).
"""

from __future__ import annotations

import pytest
from aws_moto_seed import REGION, Env, make_clients, make_pricing, seed_env
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.pricetables import builtin_table
from joiner.cloudprovider.aws.pricing import PricingProvider


@pytest.fixture(scope="session")
def catalogue(moto_url: str) -> InstanceTypeCatalogue:
    """Loaded once: its own clock never advances, so it never refreshes."""
    loaded = InstanceTypeCatalogue(make_clients(moto_url).ec2, FakeClock())
    loaded.refresh()
    return loaded


@pytest.fixture(scope="session")
def price_table() -> dict[str, float]:
    """The package's us-east-1 list prices."""
    return dict(builtin_table(REGION).prices)


@pytest.fixture
def env(moto_url: str) -> Env:
    return seed_env(moto_url)


@pytest.fixture(scope="session")
def pricing(moto_url: str, catalogue: InstanceTypeCatalogue) -> PricingProvider:
    """Refreshed once (moto's full spot history takes seconds to parse)."""
    return make_pricing(moto_url, catalogue)
