"""Fixtures for the AWS provider tests, on the session's moto server (``moto_url``, in
tests/conftest.py): a freshly reset and seeded account per test (``env``), and the instance-type
catalogue loaded once per session (moto's unfiltered DescribeInstanceTypes takes ~8 s).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aws_moto_seed import (
    REGION,
    Env,
    enforce_iam,
    make_clients,
    make_pricing,
    new_audit,
    seed_env,
)
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.pricetables import builtin_table
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.infra.callaudit import CallAudit


@pytest.fixture(scope="session")
def session_audit(moto_url: str) -> CallAudit:
    """Checks the calls of the session's catalogue and prices against the controller
    policy (they run before any test's account is seeded, with moto enforcing nothing)."""
    return new_audit(make_clients(moto_url))


@pytest.fixture(scope="session")
def catalogue(moto_url: str, session_audit: CallAudit) -> InstanceTypeCatalogue:
    """Loaded once: its own clock never advances, so it never refreshes."""
    clients = make_clients(moto_url)
    session_audit.watch(clients.ec2)
    loaded = InstanceTypeCatalogue(clients.ec2, FakeClock())
    loaded.refresh()
    return loaded


@pytest.fixture(scope="session")
def price_table() -> dict[str, float]:
    """The package's us-east-1 list prices."""
    return dict(builtin_table(REGION).prices)


@pytest.fixture
def env(moto_url: str) -> Iterator[Env]:
    """Seeded; moto enforces IAM while the test runs, and every call the controller made
    must be one its policy allows (``enforce_iam``)."""
    seeded = seed_env(moto_url)
    with enforce_iam(seeded):
        yield seeded


@pytest.fixture(scope="session")
def pricing(
    moto_url: str, catalogue: InstanceTypeCatalogue, session_audit: CallAudit
) -> PricingProvider:
    """Refreshed once (moto's full spot history takes seconds to parse)."""
    clients = make_clients(moto_url)
    session_audit.watch(clients.ec2, clients.pricing)
    return make_pricing(clients, catalogue)
