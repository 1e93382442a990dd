"""The controller on a real control plane, for the benchmarks that measure it there.

``Stand`` starts etcd and kube-apiserver (envtest, audit log on) in a scratch directory
on tmpfs, installs Joiner's CRDs, and runs the controller as production does
(``ControllerProcess``: the http adapter, threaded watch feeds, the same settings) in a
process of its own, so its resident memory and CPU time are its own. It authenticates
with a ServiceAccount token, so the audit log tells its requests from everyone else's.

The cloud is the fake provider with Karpenter's synthetic catalogue, in the controller's
process: what is measured is the controller's work and its API path, not an EC2 API's
latency (moto on the same two cores would measure moto). The benchmark plays every
other part of the cluster through ``admin`` clients: kube-scheduler's verdicts, the
workloads, and, with ``EmulatedKubelets``, the kubelets that register the Nodes of the
launched NodeClaims; kube-controller-manager runs as itself.

With ``JOINER_BENCH_PROFILE=<directory>`` the controller's loop runs under cProfile and
leaves its statistics there (``python -m pstats``), one file per controller started.
"""

from __future__ import annotations

import cProfile
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from joiner.api.crds import render_crds
from joiner.clock import RealClock, from_rfc3339
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.testing.envtest import ControlPlane, die_with_parent, free_port
from joiner.testing.kubelets import EmulatedKubelets
from joiner.testing.polling import wait_for

CONTROLLER_NAMESPACE = "joiner-bench"
CONTROLLER_ACCOUNT = "controller"
CONTROLLER_USER = f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{CONTROLLER_ACCOUNT}"
# The controller's ServiceAccount may do anything: the benchmark counts its requests,
# the RBAC tests prove the rendered role.
CONTROLLER_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "joiner-bench-controller"},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "cluster-admin",
    },
    "subjects": [
        {"kind": "ServiceAccount", "name": CONTROLLER_ACCOUNT, "namespace": CONTROLLER_NAMESPACE}
    ],
}
REGION = "test-region-1"
WRITERS = 8  # threads writing the benchmark's objects: what this machine's server takes
WRITER_QPS = 100_000.0  # the writers are the load: not throttled on the client side
QUERY_TIMEOUT = 30.0
PROFILE_ENV = "JOINER_BENCH_PROFILE"  # a directory: the controller's loop is profiled into it
STARTUP_TIMEOUT = 60.0
# The kubelets renew no node Leases (1,000 nodes would cost the shared API server 200
# requests a second, a load a real cluster's control plane carries on machines of its
# own), so kube-controller-manager is told to wait out the benchmark before it takes a
# silent Node for lost.
NODE_MONITOR_GRACE = "--node-monitor-grace-period=1h"
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


# --- the controller's process -------------------------------------------------------------


@dataclass(frozen=True)
class ControllerSpec:
    """What the controller's process needs to know, picklable for ``spawn``."""

    server: str
    ca_file: str
    token: str
    log_file: str
    env: dict[str, str]
    profile: str  # where to write the loop's cProfile statistics ("": no profiling)


def _controller_main(spec: ControllerSpec, connection: Connection) -> None:
    """The controller's process: ``ControllerProcess`` as ``joiner controller`` builds it,
    but for the fake cloud, and a probe answering the benchmark over ``connection``."""
    import logging

    die_with_parent()  # a benchmark killed leaves no controller behind
    from joiner.cloudprovider.fake import FakeCloudProvider, benchmark_instance_types
    from joiner.commands.controller import controller_client
    from joiner.serve import ControllerProcess, JsonFormatter
    from joiner.settings import Settings

    handler = logging.FileHandler(spec.log_file)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().handlers[:] = [handler]
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    settings = Settings.from_env(spec.env)
    config = ClusterConfig(server=spec.server, ca_file=spec.ca_file, token=spec.token)
    kube = controller_client(config, settings)

    def fake_cloud(_lookup: Any) -> tuple[Any, Any]:
        cloud = FakeCloudProvider(benchmark_instance_types(400), RealClock())
        return cloud, cloud.resolve_nodeclass

    stop = threading.Event()
    process = ControllerProcess(settings, kube, fake_cloud, stop, election=None)
    probe = _Probe(process)
    threading.Thread(target=probe.serve, args=(connection, stop), daemon=True).start()
    if not spec.profile:
        process.run()
        return
    profile = cProfile.Profile()  # the controller's loop; the watch threads are not in it
    profile.runcall(process.run)
    profile.dump_stats(spec.profile)


class _Probe:
    """Counts what the controller's loop handles and answers the benchmark's questions.
    It wraps the operator's event handler and the provisioner's pass: the benchmark's
    instruments, nothing the controller decides by."""

    def __init__(self, process: Any) -> None:
        self.operator = process.operator
        self.events: Counter[str] = Counter()
        self.last_event: dict[str, float] = {}  # kind -> time.time() of its last event handled
        self.passes: list[dict[str, Any]] = []
        handle, provision = self.operator.handle, self.operator.provisioner.provision

        def counted(kind: str, event_type: str, obj: dict[str, Any]) -> None:
            handle(kind, event_type, obj)
            self.events[kind] += 1
            self.last_event[kind] = time.time()

        def timed() -> Any:
            started = time.time()
            plan = provision()
            if plan is not None:
                self.passes.append(_pass_record(plan, started, time.time()))
            return plan

        self.operator.handle = counted
        self.operator.provisioner.provision = timed

    def stats(self) -> dict[str, Any]:
        state = self.operator.state
        return {
            "synced": state.synced,
            "ready_pools": len(self.operator.provisioner.ready_nodepools()),
            "running_pods": sum(  # list(): a copy taken at once, under the GIL
                1
                for pod in list(state.pods.values())
                if (pod.get("status") or {}).get("phase") == "Running"
            ),
            "events": dict(self.events),
            "last_event": dict(self.last_event),
            "passes": list(self.passes),
        }

    def serve(self, connection: Connection, stop: threading.Event) -> None:
        while True:
            request = connection.recv()
            if request == "stop":
                stop.set()
                return
            connection.send(self.stats())


def _pass_record(plan: Any, started: float, ended: float) -> dict[str, Any]:
    return {
        "started": started,
        "ended": ended,
        "nodeclaims": len(plan.nodeclaims),
        "placed": sum(len(c.pods) for c in plan.nodeclaims) + len(plan.existing),
        "unplaceable": len(plan.unplaceable),
    }


class ControllerChild:
    """The controller's process, seen from the benchmark."""

    def __init__(self, spec: ControllerSpec) -> None:
        context = multiprocessing.get_context("spawn")
        self._connection, child_end = context.Pipe()
        self.process = context.Process(
            target=_controller_main, args=(spec, child_end), name="joiner-controller"
        )
        self.process.start()
        self.log_file = Path(spec.log_file)

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    def stats(self) -> dict[str, Any]:
        if not self.process.is_alive():
            raise RuntimeError(f"the controller exited; its log: {self.log_file}")
        self._connection.send("stats")
        if not self._connection.poll(QUERY_TIMEOUT):
            raise RuntimeError("the controller did not answer")
        return dict(self._connection.recv())

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS for the controller")

    def cpu_seconds(self) -> float:
        """User and system CPU of every thread of the controller so far."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND

    def stop(self) -> None:
        if self.process.is_alive():
            self._connection.send("stop")
            self.process.join(STARTUP_TIMEOUT)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


# --- the stand -------------------------------------------------------------------------------


class Stand:
    """A control plane with Joiner's CRDs, the controller in its own process, and the
    emulated kubelets; ``with Stand(...) as stand:`` stops all of it."""

    def __init__(self, assets: Path, env: dict[str, str]) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="joiner-bench-", dir=_tmpfs()))
        self.plane = ControlPlane(assets, self.workdir / "plane", audit=True)
        self.env = env
        self.admin: HttpKube | None = None
        self.controller: ControllerChild | None = None
        self.kubelets: EmulatedKubelets | None = None
        self._kubelet_kube: HttpKube | None = None
        self._writers = ThreadPoolExecutor(WRITERS, thread_name_prefix="writer")
        self._local = threading.local()
        self._clients: list[HttpKube] = []
        self._clients_lock = threading.Lock()

    def __enter__(self) -> Stand:
        try:
            self.plane.start()
            # Its node lifecycle controller lifts the not-ready taint admission puts on every
            # new Node (the controller initializes a NodeClaim only once it is gone).
            self.plane.start_controller_manager(NODE_MONITOR_GRACE)
            self.plane.install_crds(render_crds())
            self.admin = self.plane.admin_kube(qps=WRITER_QPS, burst=int(WRITER_QPS))
            self.admin.create(CONTROLLER_BINDING)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            if self.controller is not None:
                self.controller.stop()
            if self.kubelets is not None:
                self.kubelets.stop()
            self._writers.shutdown()
            for client in [*self._clients, self.admin, self._kubelet_kube]:
                if client is not None:
                    client.close()
        finally:
            self.plane.stop()
            shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def kube(self) -> HttpKube:
        assert self.admin is not None, "the stand is not started"
        return self.admin

    # -- the parts -----------------------------------------------------------------------

    def start_controller(self) -> ControllerChild:
        """The controller, once it has listed every kind and a NodePool is ready."""
        token = self.plane.service_account_token(CONTROLLER_NAMESPACE, CONTROLLER_ACCOUNT)
        spec = ControllerSpec(
            server=self.plane.url,
            ca_file=str(self.plane.ca_file),
            token=token,
            log_file=str(self.workdir / "controller.log"),
            profile=_profile_path(),
            env={
                **self.env,
                "BIND_ADDRESS": "127.0.0.1",
                "METRICS_PORT": str(free_port()),
                "HEALTH_PROBE_PORT": str(free_port()),
            },
        )
        self.controller = ControllerChild(spec)
        wait_for(
            lambda: (s := self.controller.stats())["synced"] and s["ready_pools"],  # type: ignore[union-attr]
            "the controller to sync and see a ready NodePool",
            STARTUP_TIMEOUT,
        )
        return self.controller

    def stop_controller(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def start_kubelets(self) -> None:
        """Kubelets for every launched NodeClaim (the fake cloud's instances live in the
        controller's process, so each launched one is taken to exist)."""
        self._kubelet_kube = self.plane.admin_kube(qps=WRITER_QPS, burst=int(WRITER_QPS))
        self.kubelets = EmulatedKubelets(
            self._kubelet_kube, lambda _provider_id: True, REGION, heartbeats=False
        ).start()

    # -- writing in parallel --------------------------------------------------------------

    def write_all(self, write: Callable[[HttpKube, Any], Any], items: Iterable[Any]) -> list[Any]:
        """``write(client, item)`` for every item on ``WRITERS`` threads, each with a
        client of its own; the results in order."""
        return list(self._writers.map(lambda item: write(self._writer_client(), item), items))

    def _writer_client(self) -> HttpKube:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self.plane.admin_kube(qps=WRITER_QPS, burst=int(WRITER_QPS))
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    # -- the audit log ----------------------------------------------------------------------

    def controller_requests(self, since: float = 0.0) -> list[Request]:
        """The controller's requests answered at or after ``since`` (time.time())."""
        return [
            r
            for r in requests_in(self.plane.audit_events())
            if r.user == CONTROLLER_USER and r.answered >= since
        ]


@dataclass(frozen=True)
class Request:
    user: str
    verb: str
    resource: str  # resource[/subresource]
    code: int
    answered: float  # time.time() of the answer


def requests_in(audit: Iterable[dict[str, Any]]) -> Iterator[Request]:
    """One Request per finished request of the audit log (a watch logs the start of its
    answer and its end: only the end counts, or the start while it is still open)."""
    open_watches: dict[str, Request] = {}
    for event in audit:
        ref = event.get("objectRef") or {}
        subresource = ref.get("subresource")
        request = Request(
            user=event["user"]["username"],
            verb=event["verb"],
            resource=ref.get("resource", "") + (f"/{subresource}" if subresource else ""),
            code=int((event.get("responseStatus") or {}).get("code", 0)),
            answered=from_rfc3339(event["stageTimestamp"]),
        )
        if event["stage"] == "ResponseStarted":
            open_watches[event["auditID"]] = request
        elif event["stage"] == "ResponseComplete":
            open_watches.pop(event["auditID"], None)
            yield request
    yield from open_watches.values()


def count_by_call(requests: Iterable[Request]) -> Counter[tuple[str, str]]:
    return Counter((r.verb, r.resource) for r in requests)


# --- helpers -----------------------------------------------------------------------------------


def _profile_path() -> str:
    """``$PROFILE_ENV/controller-<n>.prof`` when the variable names a directory."""
    directory = os.environ.get(PROFILE_ENV, "")
    if not directory:
        return ""
    Path(directory).mkdir(parents=True, exist_ok=True)
    return str(Path(directory) / f"controller-{time.time_ns()}.prof")


def _tmpfs() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
