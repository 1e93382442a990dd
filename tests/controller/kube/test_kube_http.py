"""The http adapter's own parts: configuration, rate limiting, retries, re-list on 410."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from joiner.backoff import Backoff, Retrier
from joiner.clock import FakeClock
from joiner.kube.api import (
    ObjectList,
    ServiceUnavailable,
    TooManyRequests,
    Unreachable,
    WatchEvent,
)
from joiner.kube.http import ClusterConfig, ConfigError, HttpKube, RetryPolicy, TokenBucket
from joiner.kube.memory import MemoryKube
from joiner.kube.reflector import list_and_watch
from joiner.kube.server import KubeHTTPServer
from joiner.testing.envtest import ControlPlane
from joiner.testing.polling import wait_for
from joiner.yamlio import MAX_INPUT_BYTES
from kube_helpers import pod

# ---------------------------------------------------------------- configuration


def kubeconfig(user: dict[str, Any], cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "current-context": "dev",
        "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://k.example:6443/"}}],
        "users": [{"name": "u", "user": user}],
    }


def test_kubeconfig_token_and_inline_ca(tmp_path: Path):
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    document = kubeconfig(
        {"token": "abc"},
        {
            "server": "https://k.example:6443/",
            "certificate-authority-data": base64.b64encode(pem).decode(),
        },
    )
    config = ClusterConfig.from_kubeconfig_dict(document, base=tmp_path)
    assert config.server == "https://k.example:6443"
    assert config.bearer_token() == "abc"
    assert config.ca_file is not None and Path(config.ca_file).read_bytes() == pem


def test_kubeconfig_file_paths_are_relative_to_the_file(tmp_path: Path):
    (tmp_path / "config").write_text(
        json.dumps(kubeconfig({"client-certificate": "certs/me.crt", "client-key": "certs/me.key"}))
    )
    config = ClusterConfig.from_kubeconfig(str(tmp_path / "config"))
    assert config.client_cert_file == str(tmp_path / "certs" / "me.crt")
    assert config.client_key_file == str(tmp_path / "certs" / "me.key")


def test_kubeconfig_exec_plugin_token(tmp_path: Path):
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": "k8s-aws-v1.xyz", "expirationTimestamp": "2099-01-01T00:00:00Z"},
    }
    script = tmp_path / "token.py"
    script.write_text(f"print({json.dumps(json.dumps(credential))})")
    config = ClusterConfig.from_kubeconfig_dict(
        kubeconfig({"exec": {"command": sys.executable, "args": [str(script)]}})
    )
    assert config.bearer_token() == "k8s-aws-v1.xyz"


def test_kubeconfig_errors_name_the_field(tmp_path: Path):
    document = kubeconfig({"token": "x"})
    with pytest.raises(ConfigError, match=r"contexts\[name=other\]"):
        ClusterConfig.from_kubeconfig_dict(document, context="other")
    del document["current-context"]
    with pytest.raises(ConfigError, match="current-context"):
        ClusterConfig.from_kubeconfig_dict(document)
    with pytest.raises(ConfigError, match="cannot read kubeconfig"):
        ClusterConfig.from_kubeconfig(str(tmp_path / "absent"))


def test_a_kubeconfig_is_read_safely(tmp_path: Path):
    path = tmp_path / "kubeconfig"
    path.write_text("current-context: a\ncurrent-context: b\n")
    with pytest.raises(ConfigError) as caught:
        ClusterConfig.from_kubeconfig(str(path))
    assert str(caught.value) == (
        f"cannot read kubeconfig {path}: duplicate key 'current-context', first at line 1 "
        "(line 2, column 1)"
    )
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError) as caught:
        ClusterConfig.from_kubeconfig(str(path))
    assert str(caught.value) == f"cannot read kubeconfig {path}: not a mapping"
    path.write_text("# padding\n" * (MAX_INPUT_BYTES // 10 + 1))
    with pytest.raises(ConfigError) as caught:
        ClusterConfig.from_kubeconfig(str(path))
    assert str(caught.value) == (
        f"cannot read kubeconfig {path}: larger than 4 MiB, the limit on input size"
    )


def test_in_cluster_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_text("ca")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.100.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    config = ClusterConfig.in_cluster(tmp_path)
    assert config.server == "https://10.100.0.1:443"
    assert config.ca_file == str(tmp_path / "ca.crt")
    (tmp_path / "token").write_text("rotated")
    assert config.bearer_token() == "rotated"  # projected tokens are re-read
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        ClusterConfig.in_cluster(tmp_path)


# ---------------------------------------------------------------- rate limit


def test_token_bucket_allows_burst_then_paces():
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    bucket = TokenBucket(qps=10, burst=3, monotonic=lambda: now[0], sleep=sleep)
    waits = [bucket.acquire() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.1)
    assert waits[4] == pytest.approx(0.1)
    assert sum(slept) == pytest.approx(0.2)


# ---------------------------------------------------------------- retries


class ScriptedServer(ThreadingHTTPServer):
    """Answers requests with a script of (status, headers, body); records the paths."""

    def __init__(self, script: list[tuple[int, dict[str, str], dict[str, Any]]]) -> None:
        self.script = script
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                """Quiet."""

            def _answer(handler) -> None:
                length = int(handler.headers.get("Content-Length") or 0)
                handler.rfile.read(length)
                self.requests.append(f"{handler.command} {handler.path}")
                status, headers, body = self.script[min(len(self.requests), len(self.script)) - 1]
                data = json.dumps(body).encode()
                handler.send_response(status)
                for key, value in headers.items():
                    handler.send_header(key, value)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)

            do_GET = do_POST = _answer

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer([])
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _client(server: ScriptedServer, slept: list[float]) -> HttpKube:
    host, port = server.server_address[:2]
    return HttpKube(
        ClusterConfig(server=f"http://{host}:{port}"),
        retry=RetryPolicy(max_retries=3, base_delay=0.01),
        sleep=slept.append,
    )


def _status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "code": code, "reason": reason, "message": reason}


def test_retries_503_and_429_then_succeeds(scripted: ScriptedServer):
    scripted.script = [
        (503, {}, _status(503, "ServiceUnavailable")),
        (429, {"Retry-After": "2"}, _status(429, "TooManyRequests")),
        (200, {}, {"kind": "Pod", "metadata": {"name": "a"}}),
    ]
    slept: list[float] = []
    got = _client(scripted, slept).get("Pod", "a", "default")
    assert got["metadata"]["name"] == "a"
    assert len(scripted.requests) == 3
    assert slept[1] == 2.0  # Retry-After wins over the backoff


def test_gives_up_after_max_retries(scripted: ScriptedServer):
    scripted.script = [(503, {}, _status(503, "ServiceUnavailable"))]
    with pytest.raises(ServiceUnavailable):
        _client(scripted, []).get("Pod", "a", "default")
    assert len(scripted.requests) == 4


def test_eviction_429_is_not_retried(scripted: ScriptedServer):
    scripted.script = [(429, {}, _status(429, "TooManyRequests"))]
    with pytest.raises(TooManyRequests):
        _client(scripted, []).evict("web-1", "default")
    assert scripted.requests == ["POST /api/v1/namespaces/default/pods/web-1/eviction"]


# ---------------------------------------------------------------- re-list on 410


@pytest.fixture(params=["memory", "http"])
def short_history(request: pytest.FixtureRequest) -> Iterator[Any]:
    """An adapter over a store that keeps a watch history of two changes (a watch cache
    that small), so that a resourceVersion a moment old is already Gone."""
    store = MemoryKube(FakeClock(), watch_history=2)
    if request.param == "memory":
        yield store
        return
    server = KubeHTTPServer(store).start()
    api = HttpKube(ClusterConfig(server=server.url), retry=RetryPolicy(max_retries=0))
    yield api
    api.close()
    server.stop()


def test_list_and_watch_relists_after_gone(short_history):
    api = short_history
    api.create(pod("a"))
    pauses = Retrier(Backoff(base=0.01, cap=0.01))
    stream = list_and_watch(api, "Pod", "default", watch_timeout_seconds=5, retrier=pauses)
    first = next(stream)
    assert isinstance(first, ObjectList)
    assert [i["metadata"]["name"] for i in first.items] == ["a"]
    # While the consumer holds the list, history it has not seen goes out of the window:
    # the watch from the list's version is Gone, so the stream lists again.
    for name in ("b", "x", "y", "z"):
        api.create(pod(name))
    second = next(stream)
    assert isinstance(second, ObjectList)
    assert [i["metadata"]["name"] for i in second.items] == ["a", "b", "x", "y", "z"]
    api.create(pod("c"))
    event = next(stream)
    assert isinstance(event, WatchEvent)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "c")
    stream.close()


# ---------------------------------------------------------------- TLS


@pytest.fixture
def tls_server(store, tmp_path: Path) -> Iterator[tuple[KubeHTTPServer, Path]]:
    """The memory store over HTTPS with a throwaway self-signed certificate."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    server = KubeHTTPServer(store)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.start()
    yield server, cert
    server.stop()


def test_https_with_cluster_ca(tls_server):
    server, cert = tls_server
    url = server.url.replace("http://", "https://")
    trusted = HttpKube(ClusterConfig(server=url, ca_file=str(cert), token="t"))
    assert [i["metadata"]["name"] for i in trusted.list("Namespace")] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]
    trusted.close()
    insecure = HttpKube(ClusterConfig(server=url, insecure_skip_tls_verify=True))
    assert len(insecure.list("Namespace")) == 4
    insecure.close()
    untrusted = HttpKube(ClusterConfig(server=url), retry=RetryPolicy(max_retries=0))
    with pytest.raises(Unreachable, match=r"^list /api/v1/namespaces: ConnectError: .*CERTIFICATE"):
        untrusted.list("Namespace")
    untrusted.close()


# ---------------------------------------------------------------- stopping a watch


def _blocked_reader(watch: Any) -> threading.Thread:
    """A thread iterating the watch, blocked reading once the listing is through."""
    reader = threading.Thread(target=lambda: list(watch), daemon=True)
    reader.start()
    return reader


def test_stop_ends_a_watch_whose_reader_is_blocked_on_the_real_server(
    control_plane: ControlPlane, namespace: str
):
    """stop() from another thread shuts the socket down: the blocked reader wakes and
    kube-apiserver stops serving the watch at once (it used to wait for the watch's
    timeout, and a stopping apiserver waited for it)."""
    before = control_plane.watches_served("configmaps", "namespace")
    kube = control_plane.admin_kube()
    listed = kube.list("ConfigMap", namespace).resource_version
    kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": namespace}}
    )
    watch = kube.watch("ConfigMap", namespace, resource_version=listed, timeout_seconds=300)
    reader = _blocked_reader(watch)  # reads the ADDED, then waits
    wait_for(
        lambda: control_plane.watches_served("configmaps", "namespace") == before + 1,
        "the watch to open",
        10.0,
    )
    watch.stop()
    reader.join(timeout=2.0)
    assert not reader.is_alive()
    wait_for(
        lambda: control_plane.watches_served("configmaps", "namespace") == before,
        "the server to end it",
        2.0,
    )
    kube.close()


def test_stop_wakes_a_reader_blocked_on_the_in_memory_server(server: KubeHTTPServer):
    kube = HttpKube(ClusterConfig(server=server.url))
    watch = kube.watch("ConfigMap", "default", timeout_seconds=300)
    reader = _blocked_reader(watch)
    wait_for(lambda: server._watches, "the watch to open", 5.0)
    watch.stop()
    reader.join(timeout=2.0)
    assert not reader.is_alive()
    kube.close()
