"""Fixtures of the interruption tests: moto in server mode on 127.0.0.1 (one per
session) serving SQS, EventBridge and EC2; each test gets its own bus, rules and queue."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from joiner.sim.interruption import InterruptionBus
from moto.server import ThreadedMotoServer

REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    saved = os.environ.get("MOTO_EC2_LOAD_DEFAULT_AMIS")
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    if saved is None:
        del os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"]
    else:
        os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = saved


@pytest.fixture
def bus(moto_url: str) -> Iterator[InterruptionBus]:
    """A fresh event bus with the five interruption rules and their queue."""
    created = InterruptionBus(REGION, moto_url)
    yield created
    created.close()
