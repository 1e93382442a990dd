"""Fixtures: the contract suite runs once per adapter.

``memory``: the MemoryKube itself. ``http``: HttpKube over real HTTP against the
same MemoryKube served by KubeHTTPServer on 127.0.0.1 (a random free port),
started and stopped here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from joiner.clock import FakeClock
from joiner.kube.api import KubeAPI
from joiner.kube.http import ClusterConfig, HttpKube, RetryPolicy
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer


@dataclass
class Env:
    """The adapter under test and the store behind it (for server-side actions)."""

    api: KubeAPI
    store: MemoryKube
    clock: FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(clock: FakeClock) -> MemoryKube:
    return MemoryKube(clock)


@pytest.fixture
def server(store: MemoryKube) -> Iterator[KubeHTTPServer]:
    srv = KubeHTTPServer(store, "127.0.0.1", 0).start()
    yield srv
    srv.stop()


@pytest.fixture(params=["memory", "http"])
def env(request: pytest.FixtureRequest, store: MemoryKube, clock: FakeClock) -> Iterator[Env]:
    if request.param == "memory":
        yield Env(store, store, clock)
        return
    srv = request.getfixturevalue("server")
    api = HttpKube(ClusterConfig(server=srv.url), retry=RetryPolicy(max_retries=2, base_delay=0.01))
    yield Env(api, store, clock)
    api.close()
