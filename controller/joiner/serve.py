"""The production run loop of ``joiner controller``: watches feed the operator, a
leader-election thread renews the Lease, and only the leader runs reconciles.
Prometheus metrics and the health probes are served on their own ports; logs are
one JSON object per line.

The loop waits on the feed (an event wakes it at once) or until the next reconcile
is due; it never sleeps in decision code. Leadership is checked before every
reconcile, and every write of the reconcilers goes through a ``LeaderFence``, so a
replica whose Lease lapsed (a long pause, an unreachable API server) stops acting
before its next write. The background loops (watches, the interruption queue poller,
leader election) retry their failures with a backoff, count them in a metric, and
/healthz fails should one of them die.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import ipaddress
import json
import logging
import math
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from prometheus_client import CONTENT_TYPE_LATEST, Gauge

from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.validation import validate_object
from joiner.background import BackgroundLoop
from joiner.clock import Clock, RealClock
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers.interruption.aws import production_feed
from joiner.controllers.nodeclass import Resolver
from joiner.kube.api import KubeAPI
from joiner.leader import LeaderElector, LeaderFence
from joiner.metrics import Metrics
from joiner.operator import Operator, OperatorOptions
from joiner.settings import Settings
from joiner.state.feed import ThreadedFeed

log = logging.getLogger(__name__)

# NodeClaims of one scheduling decision created concurrently (Karpenter creates them all
# at once; the client's QPS/burst still paces them)
NODECLAIM_CREATES_AT_ONCE = 8

RECONCILE_SLICE = 50  # reconciles between two looks at the feed
MAX_IDLE = 1.0  # seconds the loop waits at most, so a stop request is seen promptly
STALL_LIMIT = 60.0  # /healthz fails when the loop has not turned for this long

_PYTHON_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
# LogRecord attributes that are not user-supplied ``extra`` fields.
_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class StartupError(Exception):
    """The controller cannot start; the message says why in one line, naming the setting."""


# --- structured logs ------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """Route every logger to ``stream`` (stderr) as JSON lines at ``level`` (settings form)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_PYTHON_LOG_LEVELS[level])
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise


# --- the metrics and probe endpoints ---------------------------------------------------

# A cloud provider is built knowing how to look EC2NodeClasses up (by name, from the
# operator's view of the cluster); it returns the provider and its node class resolver.
NodeClassLookup = Callable[[str], EC2NodeClass | None]
CloudFactory = Callable[[NodeClassLookup], tuple[CloudProvider, Resolver]]

# path -> () -> (status code, content type, body)
Route = Callable[[], tuple[int, str, bytes]]


class EndpointServer(ThreadingHTTPServer):
    """A tiny GET-only HTTP server for /metrics, /healthz and /readyz."""

    daemon_threads = True

    def __init__(self, host: str, port: int, routes: dict[str, Route]) -> None:
        self.routes = routes
        if ipaddress.ip_address(host).version == 6:
            self.address_family = socket.AF_INET6  # the class default is IPv4 only
        super().__init__((host, port), _EndpointHandler)
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> EndpointServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() would wait forever for a loop never started
            self.shutdown()
            self._thread.join()
        self.server_close()


class _EndpointHandler(BaseHTTPRequestHandler):
    server: EndpointServer

    def log_message(self, format: str, *args: Any) -> None:
        """Probes every few seconds would drown the log."""

    def do_GET(self) -> None:
        route = self.server.routes.get(self.path.split("?", 1)[0])
        code, content_type, body = route() if route else (404, "text/plain", b"not found\n")
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _listen(setting: str, host: str, port: int, routes: dict[str, Route]) -> EndpointServer:
    try:
        return EndpointServer(host, port, routes)
    except OSError as err:
        # An address no interface has is the address's fault, anything else the port's.
        blamed = "BIND_ADDRESS" if err.errno == errno.EADDRNOTAVAIL else setting
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise StartupError(f"{blamed}: cannot listen on {where}: {err.strerror}") from None


def _text(ok: bool, what: str) -> tuple[int, str, bytes]:
    return (200 if ok else 503), "text/plain", f"{what}\n".encode()


# --- leadership -------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderElection:
    """Where the Lease lives and who this replica is; timings as client-go's defaults."""

    namespace: str
    identity: str
    name: str = "karpenter-leader-election"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


# --- the controller process --------------------------------------------------------------


class ControllerProcess:
    """The operator plus everything around it in production; ``run()`` blocks until
    ``stop`` is set, then releases the Lease and closes the endpoints."""

    def __init__(
        self,
        settings: Settings,
        kube: KubeAPI,
        cloud_factory: CloudFactory,
        stop: threading.Event,
        election: LeaderElection | None,
        clock: Clock | None = None,
    ) -> None:
        self.settings, self.stop = settings, stop
        self.clock = clock or RealClock()
        metrics = Metrics()  # first: the interruption feed reports to it
        # Late bound: the operator (and its state) is built with the cloud.
        cloud, resolve_nodeclass = cloud_factory(
            lambda name: self.operator.state.nodeclasses.get(name)
        )
        feed, self.interruption_receiver = (
            production_feed(
                settings.interruption_queue,
                settings.aws_region,
                lambda: self.leading,
                on_failure=self._count_failure,
            )
            if settings.interruption_queue
            else (None, None)
        )
        self.operator = Operator(
            kube if election is None else LeaderFence(kube, lambda: self.leading),
            cloud,
            self.clock,
            resolve_nodeclass,
            dataclasses.replace(
                OperatorOptions.from_settings(settings),
                nodeclaim_creates_at_once=NODECLAIM_CREATES_AT_ONCE,
            ),
            metrics=metrics,
            validate=validate_object,
            interruption_feed=feed,
        )
        self.leader_gauge = Gauge(
            "leader_election_master_status",
            "1 while this replica holds the leader-election Lease.",
            ["name"],
            registry=metrics.registry,
        )
        self.elector = self._elector(kube, election)
        self._election_stop = threading.Event()
        self._election = (
            BackgroundLoop(
                "leader-election",
                self.elector.tick,
                self._election_stop,
                interval=self.elector.retry_period,
                on_failure=self._count_failure,
            )
            if self.elector
            else None
        )
        self._heartbeat = time.monotonic()
        self._loops: list[BackgroundLoop] = []  # started by run(); /healthz watches them
        host = settings.bind_address
        self.metrics_server = _listen(
            "METRICS_PORT", host, settings.metrics_port, {"/metrics": self._metrics}
        )
        try:
            self.health_server = _listen(
                "HEALTH_PROBE_PORT",
                host,
                settings.health_probe_port,
                {"/healthz": self._healthz, "/readyz": self._readyz},
            )
        except StartupError:
            self.metrics_server.stop()
            raise

    def _elector(self, kube: KubeAPI, election: LeaderElection | None) -> LeaderElector | None:
        if election is None:
            self.leader_gauge.labels("disabled").set(1)
            return None
        return LeaderElector(
            kube,
            self.clock,
            election.identity,
            election.namespace,
            name=election.name,
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
            on_change=lambda leading: self.leader_gauge.labels(election.name).set(int(leading)),
        )

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading

    def _count_failure(self, loop: str, err: Exception) -> None:
        self.operator.metrics.background_failures.labels(loop).inc()

    # --- endpoints ---------------------------------------------------------------------

    def _metrics(self) -> tuple[int, str, bytes]:
        return 200, CONTENT_TYPE_LATEST, self.operator.metrics.exposition()

    def _healthz(self) -> tuple[int, str, bytes]:
        if time.monotonic() - self._heartbeat >= STALL_LIMIT:
            return _text(False, "controller loop stalled")
        dead = [loop.name for loop in self._loops if not loop.alive]
        return _text(not dead, f"background loop died: {', '.join(dead)}" if dead else "ok")

    def _readyz(self) -> tuple[int, str, bytes]:
        synced = self.operator.state.synced
        return _text(synced, "ok" if synced else "cluster state not synced")

    # --- running -----------------------------------------------------------------------

    def run(self) -> int:
        self.metrics_server.start()
        self.health_server.start()
        self.operator.attach(functools.partial(ThreadedFeed, on_failure=self._count_failure))
        self._loops = list(self.operator.feed.loops)
        if self.interruption_receiver is not None:
            self._loops.append(self.interruption_receiver.loop)
        if self._election is not None:
            self._loops.append(self._election)
        for loop in self._loops:
            loop.start()
        log.info(
            "controller started",
            extra={
                "cluster": self.settings.cluster_name,
                "bind_address": self.settings.bind_address,
                "metrics_port": self.metrics_server.port,
                "health_port": self.health_server.port,
            },
        )
        try:
            self._loop()
        except Exception:  # a bug: say so in the log's format, exit nonzero to be restarted
            log.exception("controller loop failed")
            return 1
        finally:
            self._shutdown()
        return 0

    def _loop(self) -> None:
        while not self.stop.is_set():
            self._turn()

    def _turn(self) -> None:
        self._heartbeat = time.monotonic()
        self.operator.pump()  # followers keep their view warm to take over quickly
        ran = self.operator.manager.run_due(RECONCILE_SLICE, proceed=lambda: self.leading)
        if not ran:
            self.operator.feed.wait(self._idle_time())

    def _idle_time(self) -> float:
        due = self.operator.manager.next_due() if self.leading else None
        until_due = math.inf if due is None else due - self.clock.now()
        return max(0.0, min(MAX_IDLE, until_due))

    def _shutdown(self) -> None:
        log.info("controller stopping")
        self.operator.feed.stop()
        if self.interruption_receiver is not None:
            self.interruption_receiver.stop()
        if self._election is not None:
            self._election_stop.set()
            self._election.join()
            self.elector.release()  # type: ignore[union-attr]
        self.metrics_server.stop()
        self.health_server.stop()


def run_controller(
    settings: Settings,
    kube: KubeAPI,
    cloud_factory: CloudFactory,
    stop: threading.Event,
    election: LeaderElection | None,
) -> int:
    """Run until ``stop`` is set (SIGTERM); returns the exit code."""
    return ControllerProcess(settings, kube, cloud_factory, stop, election).run()
