"""Fixtures of the interruption tests, on the session's moto server (``moto_url``, in
tests/conftest.py) serving SQS, EventBridge and EC2: each test gets its own bus, rules
and queue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from joiner.sim.interruption import InterruptionBus

REGION = "us-east-1"


@pytest.fixture
def bus(moto_url: str) -> Iterator[InterruptionBus]:
    """A fresh event bus with the five interruption rules and their queue."""
    created = InterruptionBus(REGION, moto_url)
    yield created
    created.close()
