"""Fixtures: the contract suite runs once per target (``targets.py``).

``memory``: the MemoryKube itself. ``http``: HttpKube over real HTTP against the same
MemoryKube served by KubeHTTPServer on 127.0.0.1 (a random free port). ``real``: HttpKube
against the envtest tier's kube-apiserver with kube-controller-manager, Joiner's CRDs
installed (the tier's part: skipped, or failed when required, where it is missing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from joiner.api.crds import render_crds
from joiner.clock import FakeClock
from joiner.kube.api import TooManyRequests
from joiner.kube.http import ClusterConfig, HttpKube, RetryPolicy
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer
from joiner.testing.envtest import ControlPlane
from joiner.testing.polling import wait_for
from targets import HttpTarget, MemoryTarget, RealTarget, Target

CRD_KINDS = ("NodePool", "NodeClaim", "EC2NodeClass")


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


@pytest.fixture(scope="session")
def contract_plane(controller_manager: ControlPlane) -> ControlPlane:
    """The session's control plane with kube-controller-manager and Joiner's CRDs served
    (a watch right after a CRD is installed is refused for a moment: 429, "storage is
    (re)initializing")."""
    controller_manager.install_crds(render_crds())
    kube = controller_manager.admin_kube()
    try:
        wait_for(lambda: all(_watchable(kube, kind) for kind in CRD_KINDS), "CRD watches", 30.0)
    finally:
        kube.close()
    return controller_manager


def _watchable(kube: HttpKube, kind: str) -> bool:
    with contextlib.suppress(TooManyRequests):
        for _ in kube.watch(kind, resource_version="0", timeout_seconds=1):
            break
        return True
    return False


@pytest.fixture(
    params=["memory", "http", pytest.param("real", marks=pytest.mark.envtest)],
)
def env(request: pytest.FixtureRequest, store: MemoryKube, clock: FakeClock) -> Iterator[Target]:
    namespace = f"contract-{request.node.originalname.removeprefix('test_')[:40]}".replace(
        "_", "-"
    ).rstrip("-")
    if request.param == "memory":
        yield MemoryTarget(store, store, clock, namespace)
        return
    if request.param == "http":
        srv = request.getfixturevalue("server")
        api = HttpKube(
            ClusterConfig(server=srv.url), retry=RetryPolicy(max_retries=2, base_delay=0.01)
        )
        target = HttpTarget(api, store, clock, namespace, srv.url)
        yield target
        api.close()
        target.client.close()
        return
    request.getfixturevalue("contract_plane")
    real = RealTarget(
        request.getfixturevalue("control_plane"), request.getfixturevalue("namespace")
    )
    yield real
    real.close()
