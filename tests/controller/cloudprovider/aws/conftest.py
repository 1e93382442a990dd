"""Fixtures for the AWS provider tests: moto in server mode on 127.0.0.1 (one per
session), a freshly reset and seeded account per test (``env``), and the instance-type
catalogue loaded once per session (moto's unfiltered DescribeInstanceTypes takes ~8 s).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aws_moto_seed import PRICE_FILE, Env, make_clients, seed_env
from moto.server import ThreadedMotoServer

from joiner.clock import FakeClock
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.pricing import load_price_file


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


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
