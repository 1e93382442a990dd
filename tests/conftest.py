"""Fixtures several test directories share. Moto in server mode on 127.0.0.1, one per
session (the AWS provider tests, the interruption tests and the e2e round trip): each
user resets or scopes what it creates (seed_env resets the account, interruption buses
are per test). A local Kubernetes API server, the memory store behind KubeHTTPServer on
the wall clock (the production process tests and the e2e round trip)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from joiner.clock import RealClock
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer
from moto.server import ThreadedMotoServer


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    # Every test seeds its own AMIs; moto's thousands of default ones only slow resets.
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
def store() -> MemoryKube:
    return MemoryKube(RealClock())


@pytest.fixture
def apiserver(store: MemoryKube) -> Iterator[KubeHTTPServer]:
    server = KubeHTTPServer(store, "127.0.0.1", 0).start()
    yield server
    server.stop()
