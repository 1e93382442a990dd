"""The production process (joiner.serve) on the wall clock: the http adapter against a
local API server, two replicas with leader election, metrics and probes over HTTP, JSON
logs. The fake cloud stands in for EC2 here (tests/e2e runs the AWS provider on moto)."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import socket
import threading
import time
from dataclasses import dataclass
from functools import partial

import httpx
import pytest
from joiner.api import labels as wk
from joiner.background import BackgroundLoop
from joiner.clock import Clock, FakeClock, RealClock
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer
from joiner.serve import ControllerProcess, LeaderElection, StartupError, configure_logging
from joiner.settings import Settings
from joiner.testing import create_unschedulable, ec2nodeclass, nodepool, pod, polling, requirement
from joiner.testing.envtest import free_port

WAIT = 20.0  # seconds a condition may take on a loaded machine


wait_for = partial(polling.wait_for, timeout=WAIT)


@dataclass
class Replica:
    process: ControllerProcess
    stop: threading.Event
    thread: threading.Thread
    kube: HttpKube

    def url(self, server: str, path: str) -> str:
        port = (
            self.process.metrics_server if server == "metrics" else self.process.health_server
        ).port
        return f"http://127.0.0.1:{port}{path}"

    def shutdown(self) -> None:
        self.stop.set()
        self.thread.join(timeout=WAIT)
        assert not self.thread.is_alive()


@pytest.fixture
def cloud() -> FakeCloudProvider:
    return FakeCloudProvider([new_instance_type("small", cpu="2", memory="4Gi")], RealClock())


def settings() -> Settings:
    return Settings.from_env(
        {
            "CLUSTER_NAME": "test",
            "BATCH_IDLE_DURATION": "100ms",
            "BATCH_MAX_DURATION": "1s",
            "BIND_ADDRESS": "127.0.0.1",
            "METRICS_PORT": str(free_port()),
            "HEALTH_PROBE_PORT": str(free_port()),
        }
    )


def start_replica(
    apiserver: KubeHTTPServer,
    cloud: FakeCloudProvider,
    identity: str,
    lease_duration: float = 2.0,
    retry_period: float = 0.2,
    clock: Clock | None = None,
) -> Replica:
    kube = HttpKube(ClusterConfig(server=apiserver.url))
    stop = threading.Event()
    election = LeaderElection(
        namespace="kube-system",
        identity=identity,
        lease_duration=lease_duration,
        renew_deadline=lease_duration * 0.75,
        retry_period=retry_period,
    )
    process = ControllerProcess(
        settings(),
        kube,
        lambda lookup: (cloud, cloud.resolve_nodeclass),
        stop,
        election,
        clock=clock,
    )
    thread = threading.Thread(target=process.run, name=f"replica-{identity}", daemon=True)
    thread.start()
    return Replica(process, stop, thread, kube)


def unreachable_process(cloud: FakeCloudProvider, config: Settings) -> ControllerProcess:
    """A single replica (no leader election) whose API server is not there."""
    return ControllerProcess(
        config,
        HttpKube(ClusterConfig(server=f"http://127.0.0.1:{free_port()}")),
        lambda lookup: (cloud, cloud.resolve_nodeclass),
        threading.Event(),
        None,
    )


def install_pool(store: MemoryKube) -> None:
    store.create(ec2nodeclass())
    store.create(nodepool(requirements=[requirement(wk.CAPACITY_TYPE, "Exists")]))


def unschedulable_pod(store: MemoryKube, name: str) -> None:
    create_unschedulable(store, pod(name, cpu="1500m"))


def claims_of(store: MemoryKube) -> list[dict]:
    return store.list("NodeClaim").items


def created(replica: Replica) -> float:
    metric = replica.process.operator.metrics.nodeclaims_created.labels("default", "provisioning")
    return metric._value.get()


def test_only_the_leader_acts_and_the_follower_takes_over_on_shutdown(
    store: MemoryKube, apiserver: KubeHTTPServer, cloud: FakeCloudProvider
) -> None:
    install_pool(store)
    # A long lease: a takeover within seconds can only come from the release.
    a = start_replica(apiserver, cloud, "replica-a", lease_duration=30.0)
    wait_for(lambda: a.process.leading, "replica a to lead")
    b = start_replica(apiserver, cloud, "replica-b", lease_duration=30.0)
    try:
        wait_for(lambda: b.process.operator.state.synced, "replica b to sync")
        unschedulable_pod(store, "p0")
        [claim] = wait_for(lambda: claims_of(store), "a NodeClaim")
        wait_for(lambda: claim["metadata"]["name"] in b.process.operator.state.nodeclaims, "b")
        time.sleep(1.0)  # several of b's loop turns: it must not act as a follower
        assert (created(a), created(b)) == (1, 0)
        assert len(claims_of(store)) == 1
        assert b.process.leading is False

        a.shutdown()  # SIGTERM: releases the lease
        # Released, not expired: b takes over within a retry period or two, long before
        # the 30s lease a renewed a moment ago would run out.
        wait_for(lambda: b.process.leading, "replica b to take over", timeout=10.0)
        unschedulable_pod(store, "p1")
        wait_for(lambda: created(b) == 1, "b to create a NodeClaim")
        assert len(claims_of(store)) == 2
        lease = store.get("Lease", "karpenter-leader-election", "kube-system")
        assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == (
            "replica-b",
            1,
        )
    finally:
        a.stop.set()
        b.shutdown()


def test_a_leader_that_cannot_renew_stops_acting(
    store: MemoryKube, apiserver: KubeHTTPServer, cloud: FakeCloudProvider
) -> None:
    install_pool(store)
    a = start_replica(apiserver, cloud, "replica-a")
    try:
        wait_for(lambda: a.process.leading, "replica a to lead")
        # Another replica holds the lease now (as if a had been partitioned away).
        lease = store.get("Lease", "karpenter-leader-election", "kube-system")
        lease["spec"].update(holderIdentity="other", renewTime="2099-01-01T00:00:00.000000Z")
        store.update(lease)
        wait_for(lambda: not a.process.leading, "replica a to step down", timeout=3.0)
        unschedulable_pod(store, "p0")
        time.sleep(1.0)
        assert claims_of(store) == []
    finally:
        a.shutdown()


def test_a_leader_paused_past_its_renew_deadline_does_not_act(
    store: MemoryKube, apiserver: KubeHTTPServer, cloud: FakeCloudProvider
) -> None:
    """The whole process stalls (a GC pause, a frozen VM) for longer than the renew
    deadline. When it resumes, its reconcile loop must not act on the leadership it had
    before the pause: only a renewal after it gives that back."""
    install_pool(store)
    clock = FakeClock(time.time())
    # One election tick at start-up, then none until the test ticks by hand.
    a = start_replica(apiserver, cloud, "replica-a", retry_period=3600.0, clock=clock)
    try:
        wait_for(lambda: a.process.operator.provisioner.ready_nodepools(), "a ready pool")
        clock.advance(1.5 + 0.1)  # the pause: past the 1.5 s renew deadline
        unschedulable_pod(store, "p0")
        wait_for(lambda: "default/p0" in a.process.operator.state.pods, "a to see the pod")
        clock.advance(2.0)  # the provisioning batch window has long closed
        time.sleep(1.0)  # many turns of a's loop
        assert claims_of(store) == []
        assert a.process.elector.tick() is True  # the election thread resumes: renewed
        clock.advance(0.5)  # still within the renewed deadline
        wait_for(lambda: claims_of(store), "a NodeClaim once a leads again")
    finally:
        a.shutdown()


def test_metrics_probes_and_json_logs(
    store: MemoryKube, apiserver: KubeHTTPServer, cloud: FakeCloudProvider
) -> None:
    install_pool(store)
    logs = io.StringIO()
    configure_logging("info", logs)
    a = start_replica(apiserver, cloud, "replica-a")
    try:
        wait_for(lambda: a.process.leading, "replica a to lead")
        unschedulable_pod(store, "p0")
        wait_for(lambda: claims_of(store), "a NodeClaim")
        health = httpx.get(a.url("health", "/healthz"))
        assert (health.status_code, health.text) == (200, "ok\n")
        ready = wait_for(
            lambda: (r := httpx.get(a.url("health", "/readyz"))).status_code == 200 and r,
            "readyz",
        )
        assert ready.text == "ok\n"
        assert httpx.get(a.url("health", "/nope")).status_code == 404
        body = httpx.get(a.url("metrics", "/metrics")).text
        assert (
            'karpenter_nodeclaims_created_total{nodepool="default",reason="provisioning"} 1.0'
            in body
        )
        assert 'leader_election_master_status{name="karpenter-leader-election"} 1.0' in body
        assert "karpenter_cluster_state_synced 1.0" in body
    finally:
        a.shutdown()
        logging.getLogger().handlers.clear()
    entries = [json.loads(line) for line in logs.getvalue().splitlines()]
    messages = [(e["level"], e["message"]) for e in entries]
    assert ("info", "controller started") in messages
    assert ("info", "controller stopping") in messages
    created_entry = next(e for e in entries if e["message"] == "created nodeclaim")
    assert created_entry["nodepool"] == "default"
    assert created_entry["logger"] == "joiner.controllers.provisioning"
    assert created_entry["nodeclaim"] == claims_of(store)[0]["metadata"]["name"]
    assert {"time", "level", "logger", "message"} <= set(entries[0])


def test_not_ready_until_the_cluster_state_is_synced(cloud: FakeCloudProvider) -> None:
    """Against an API server that is not there, /readyz says why and /healthz stays up."""
    kube = HttpKube(ClusterConfig(server=f"http://127.0.0.1:{free_port()}"))
    stop = threading.Event()
    process = ControllerProcess(
        settings(),
        kube,
        lambda lookup: (cloud, cloud.resolve_nodeclass),
        stop,
        None,
    )
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    replica = Replica(process, stop, thread, kube)
    try:
        wait_for(lambda: process.health_server.port, "probes")
        ready = wait_for(lambda: _get(replica.url("health", "/readyz")), "the probe server")
        assert (ready.status_code, ready.text) == (503, "cluster state not synced\n")
        assert _get(replica.url("health", "/healthz")).status_code == 200
        assert process.leading  # DISABLE_LEADER_ELECTION: a single replica always acts
        # Each watch loop's failed list is counted (and retried after a backoff).
        failed = 'joiner_background_loop_failures_total{loop="watch-Pod"}'
        wait_for(lambda: failed in httpx.get(replica.url("metrics", "/metrics")).text, failed)
    finally:
        replica.shutdown()


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url)
    except httpx.TransportError:
        return None


def test_healthz_fails_when_the_loop_stalls(cloud: FakeCloudProvider) -> None:
    process = unreachable_process(cloud, settings())
    try:
        assert process._healthz() == (200, "text/plain", b"ok\n")
        process._heartbeat -= 61
        assert process._healthz() == (503, "text/plain", b"controller loop stalled\n")
    finally:
        process.metrics_server.stop()
        process.health_server.stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_healthz_fails_when_a_background_loop_dies(cloud: FakeCloudProvider) -> None:
    """Background loops survive any Exception; should one die anyway, the pod restarts."""
    process = unreachable_process(cloud, settings())

    def fatal() -> None:
        raise SystemExit("a thread that ends for good")

    dead = BackgroundLoop("watch-Pod", fatal, threading.Event())
    try:
        dead.start()
        dead.join(WAIT)
        process._loops.append(dead)
        assert process._healthz() == (503, "text/plain", b"background loop died: watch-Pod\n")
    finally:
        process.metrics_server.stop()
        process.health_server.stop()


def test_json_formatter_carries_extra_fields_and_errors() -> None:
    stream = io.StringIO()
    configure_logging("warn", stream)
    logger = logging.getLogger("joiner.test")
    try:
        logger.info("dropped below the level")
        logger.warning("drain blocked", extra={"nodeclaim": "default-abc", "pods": 3})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("reconcile failed", extra={"controller": "x", "key": "k"})
    finally:
        logging.getLogger().handlers.clear()
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert {k: v for k, v in first.items() if k != "time"} == {
        "level": "warning",
        "logger": "joiner.test",
        "message": "drain blocked",
        "nodeclaim": "default-abc",
        "pods": 3,
    }
    assert first["time"].endswith("+00:00")
    assert (second["level"], second["controller"], second["key"]) == ("error", "x", "k")
    assert second["error"].splitlines()[-1] == "ValueError: boom"


def test_a_port_in_use_is_a_one_line_startup_error(cloud: FakeCloudProvider) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {"CLUSTER_NAME": "test", "BIND_ADDRESS": "127.0.0.1", "HEALTH_PROBE_PORT": str(port)}
        env["METRICS_PORT"] = str(free_port())
        with pytest.raises(StartupError) as error:
            unreachable_process(cloud, Settings.from_env(env))
    assert str(error.value) == (
        f"HEALTH_PROBE_PORT: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


@pytest.mark.parametrize("address, url_host", [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]")])
def test_endpoints_listen_on_the_bind_address_only(
    cloud: FakeCloudProvider, address: str, url_host: str
) -> None:
    config = dataclasses.replace(settings(), bind_address=address)
    process = unreachable_process(cloud, config)
    try:
        for server in (process.metrics_server, process.health_server):
            assert server.server_address[0] == address
            server.start()
        health = httpx.get(f"http://{url_host}:{process.health_server.port}/healthz")
        assert (health.status_code, health.text) == (200, "ok\n")
        metrics = httpx.get(f"http://{url_host}:{process.metrics_server.port}/metrics")
        assert metrics.status_code == 200
    finally:
        process.metrics_server.stop()
        process.health_server.stop()


def test_an_address_of_no_interface_blames_bind_address(cloud: FakeCloudProvider) -> None:
    config = dataclasses.replace(settings(), bind_address="192.0.2.1")  # TEST-NET-1
    with pytest.raises(StartupError) as error:
        unreachable_process(cloud, config)
    assert str(error.value) == (
        f"BIND_ADDRESS: cannot listen on 192.0.2.1:{config.metrics_port}: "
        "Cannot assign requested address"
    )


def test_a_crashing_loop_is_logged_and_exits_nonzero(cloud: FakeCloudProvider) -> None:
    logs = io.StringIO()
    configure_logging("info", logs)
    process = unreachable_process(cloud, settings())

    def broken() -> int:
        raise RuntimeError("bug in a watch handler")

    process.operator.pump = broken  # type: ignore[method-assign]
    try:
        assert process.run() == 1
    finally:
        logging.getLogger().handlers.clear()
    entries = [json.loads(line) for line in logs.getvalue().splitlines()]
    failed = next(e for e in entries if e["message"] == "controller loop failed")
    assert failed["level"] == "error"
    assert failed["error"].splitlines()[-1] == "RuntimeError: bug in a watch handler"
    assert entries[-1]["message"] == "controller stopping"
