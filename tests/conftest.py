"""Fixtures several test directories share. Moto in server mode on 127.0.0.1, one per
session (the AWS provider tests, the interruption tests and the e2e round trip): each
user resets or scopes what it creates (seed_env resets the account, interruption buses
are per test). A local Kubernetes API server, the memory store behind KubeHTTPServer on
the wall clock (the production process tests and the e2e round trip).

Tiers of real parts: a test that uses ``control_plane`` (a real kube-apiserver, see
``joiner.testing.envtest``), ``envtest_assets`` or ``control_plane_assets`` (the binaries,
for a control plane of its own) belongs to the ``envtest`` tier; one that uses
``karpenter_oracle`` (upstream's scheduler) to the ``oracle`` tier. Where a tier's part
cannot be found, its tests are skipped and the run ends with one line saying why and
which variable to set. ``JOINER_REQUIRED_TIERS=envtest,oracle`` (set by ``.ci/run``) turns
a skipped or empty tier into a failed run."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from joiner.clock import RealClock
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer
from joiner.sim import moto_reservations
from joiner.testing.assets import (
    CONTROL_PLANE,
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    AssetsUnavailable,
    find_envtest,
    find_oracle,
)
from joiner.testing.envtest import ControlPlane
from moto.server import ThreadedMotoServer

# No per-example deadline: speed is measured by the benchmarks, and on a shared machine a
# deadline fails a correct property test whenever the machine is busy.
settings.register_profile("joiner", deadline=None)
settings.load_profile("joiner")

# tier -> the fixtures whose use puts a test in it
TIERS = {
    "envtest": ("control_plane", "envtest_assets", "control_plane_assets"),
    "oracle": ("karpenter_oracle",),
}
REQUIRED_TIERS_ENV = "JOINER_REQUIRED_TIERS"
_unavailable: dict[str, str] = {}  # tier -> why its part is missing
_outcomes: dict[str, dict[str, int]] = {tier: {} for tier in TIERS}


def pytest_configure(config: pytest.Config) -> None:
    for tier, fixtures in TIERS.items():
        config.addinivalue_line("markers", f"{tier}: uses a real part ({', '.join(fixtures)})")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for tier, fixtures in TIERS.items():
            if set(fixtures) & set(getattr(item, "fixturenames", ())):
                item.add_marker(tier)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        for tier in TIERS:
            if tier in report.keywords:
                counts = _outcomes[tier]
                counts[report.outcome] = counts.get(report.outcome, 0) + 1


def _required_tiers() -> set[str]:
    return {t.strip() for t in os.environ.get(REQUIRED_TIERS_ENV, "").split(",") if t.strip()}


def pytest_sessionfinish(session: pytest.Session) -> None:
    for tier in _required_tiers() & set(TIERS):
        counts = _outcomes[tier]
        if counts.get("skipped") or not counts.get("passed"):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: object) -> None:
    write = terminalreporter.write_line  # type: ignore[attr-defined]
    required = _required_tiers()
    for tier in TIERS:
        counts = _outcomes[tier]
        if tier in _unavailable:
            write(f"{tier} tier not run: {_unavailable[tier]}")
        if tier in required and (counts.get("skipped") or not counts.get("passed")):
            write(
                f"{tier} tier is required ({REQUIRED_TIERS_ENV}) but ran "
                f"{counts.get('passed', 0)} tests and skipped {counts.get('skipped', 0)}"
            )


def _tier_part(tier: str, find: Callable[[], Path]) -> Path:
    """The part ``find`` locates; when there is none, the tier's tests are skipped (or fail,
    when the tier is required) with the one-line reason."""
    try:
        return find()
    except AssetsUnavailable as error:
        _unavailable[tier] = str(error)
        if tier in _required_tiers():
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd and kube-apiserver, RBAC on, for the whole session; tests isolate by namespace
    (``namespace``) or by object names. ``controller_manager`` and ``kube_scheduler``
    add those components to it."""
    assets = _tier_part("envtest", find_envtest)
    # etcd writes on every change: tmpfs keeps the tier quick where there is one
    scratch = Path(tempfile.mkdtemp(prefix="joiner-envtest-", dir=_tmpfs()))
    plane = ControlPlane(assets, scratch).start()
    yield plane
    plane.stop()
    shutil.rmtree(scratch, ignore_errors=True)


def _tmpfs() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture
def plane_workdir() -> Iterator[Path]:
    """A scratch directory for a control plane of a test's own, on tmpfs where there is
    one (etcd writes on every change), removed after the test."""
    scratch = Path(tempfile.mkdtemp(prefix="joiner-plane-", dir=_tmpfs()))
    yield scratch
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def envtest_assets() -> Path:
    """The directory of every envtest binary (apiserver, etcd, controller manager,
    scheduler), for a test that starts a control plane of its own."""
    return _tier_part(
        "envtest", lambda: find_envtest((*CONTROL_PLANE, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER))
    )


@pytest.fixture(scope="session")
def control_plane_assets() -> Path:
    """The directory of etcd and kube-apiserver, for what starts a control plane of its
    own without the controller manager or the scheduler (a benchmark)."""
    return _tier_part("envtest", find_envtest)


@pytest.fixture(scope="session")
def controller_manager(control_plane: ControlPlane) -> ControlPlane:
    _tier_part("envtest", lambda: find_envtest((*CONTROL_PLANE, KUBE_CONTROLLER_MANAGER)))
    control_plane.start_controller_manager()
    return control_plane


@pytest.fixture(scope="session")
def kube_scheduler(control_plane: ControlPlane) -> ControlPlane:
    _tier_part("envtest", lambda: find_envtest((*CONTROL_PLANE, KUBE_SCHEDULER)))
    control_plane.start_scheduler()
    return control_plane


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace of the real server for one test, deleted after it."""
    name = _namespace_name(request.node.name)
    kube = control_plane.admin_kube()
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    kube.delete("Namespace", name)
    kube.close()


def _namespace_name(test_name: str) -> str:
    digest = hashlib.sha1(test_name.encode()).hexdigest()[:8]
    stem = "".join(c if c.isalnum() else "-" for c in test_name.lower()).strip("-")[:40]
    return f"{stem.rstrip('-')}-{digest}"


@pytest.fixture(scope="session")
def karpenter_oracle() -> Path:
    """The executable of upstream Karpenter's scheduler (``joiner.testing.assets``)."""
    return _tier_part("oracle", find_oracle)


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    # Every test seeds its own AMIs; moto's thousands of default ones only slow resets.
    saved = os.environ.get("MOTO_EC2_LOAD_DEFAULT_AMIS")
    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto_reservations.install()  # moto has no capacity reservations: Joiner's emulation
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
def store() -> Iterator[MemoryKube]:
    """The in-memory API server on the wall clock, its emulated controllers running."""
    kube = MemoryKube(RealClock(), controllers="threaded")
    yield kube
    kube.close()


@pytest.fixture
def apiserver(store: MemoryKube) -> Iterator[KubeHTTPServer]:
    server = KubeHTTPServer(store, "127.0.0.1", 0).start()
    yield server
    server.stop()
