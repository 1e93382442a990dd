"""Fixtures for the production wiring round trip: moto in server mode seeded like a
cluster's AWS account (reusing the AWS provider tests' seeding module), and a local
Kubernetes API server (the memory store behind KubeHTTPServer)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from joiner.clock import RealClock
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer
from moto.server import ThreadedMotoServer

# The seeding helpers live with the AWS provider tests; one copy, imported from there.
sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "controller" / "cloudprovider" / "aws")
)


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def store() -> MemoryKube:
    return MemoryKube(RealClock())


@pytest.fixture
def apiserver(store: MemoryKube) -> Iterator[KubeHTTPServer]:
    server = KubeHTTPServer(store, "127.0.0.1", 0).start()
    yield server
    server.stop()
