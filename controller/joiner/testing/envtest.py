"""A real Kubernetes control plane on 127.0.0.1 for tests and benchmarks: etcd and
kube-apiserver, and on request kube-controller-manager and kube-scheduler (the idea of
controller-runtime's envtest).

    plane = ControlPlane(find_envtest(), workdir).start()
    kube = plane.admin_kube()                    # HttpKube as system:masters
    plane.start_controller_manager()             # GC, PDB status, namespaces, node lifecycle
    plane.start_scheduler()                      # binds pods
    token = plane.service_account_token("joiner", "joiner")   # RBAC as that account
    plane.stop()

RBAC is on. With ``audit=True`` the apiserver also writes an audit log, one JSON event per
finished request (who, verb, resource, response code), read back with ``audit_events()``:
the tests prove with it what a service account did and that RBAC refused it nothing.

Every process listens on free ports of 127.0.0.1 and dies with the process
that started it (PR_SET_PDEATHSIG), so a killed test run leaves nothing behind.
Credentials: a CA and serving certificate made here, an admin client certificate in
``system:masters``, and a key pair that signs service-account tokens.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import ipaddress
import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from joiner.kube.api import AlreadyExists
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.kube.resources import Registry, ResourceKind, default_registry
from joiner.testing.assets import KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER

READY_TIMEOUT = 60.0
# Seconds a process gets to exit on SIGTERM before SIGKILL: a plane keeps nothing worth a
# graceful shutdown (kube-apiserver waits for its open watches to end; a stopped HttpWatch
# closes its connection at once, but a test may leave one open).
STOP_TIMEOUT = 2.0
SERVICE_CIDR = "10.0.0.0/24"
# Admission as on a cluster, minus ServiceAccount: the tests create pods without the
# service-account token controller, and that plugin would refuse them.
DISABLED_ADMISSION = ("ServiceAccount",)
# Written by the OpenShift build's controller manager into every namespace; not upstream's.
CONTROLLERS = "*,-service-ca-certificate-publisher-controller"
# Server-side apply as `pulumi up` does it (the Kubernetes provider applies server-side),
# nothing stored, an unknown or duplicate field an error; force: the dry run takes fields
# another manager owns instead of reporting a conflict.
DRY_RUN_APPLY = {
    "dryRun": "All",
    "fieldValidation": "Strict",
    "fieldManager": "joiner-dry-run",
    "force": "true",
}
# Every request once it is answered, without bodies: who did what to which resource, and
# the response code. (RequestReceived would log each request a second time, unanswered.)
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


# Kinds the tests set a cluster up with, beyond what the controller uses.
SETUP_KINDS = (
    ResourceKind("ServiceAccount", "", "v1", "serviceaccounts", True, False),
    ResourceKind(
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        False,
    ),
    ResourceKind("ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", False, False),
    ResourceKind(
        "ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", False, False
    ),
    ResourceKind("Role", "rbac.authorization.k8s.io", "v1", "roles", True, False),
    ResourceKind("RoleBinding", "rbac.authorization.k8s.io", "v1", "rolebindings", True, False),
)


def setup_registry() -> Registry:
    """The controller's kinds plus ``SETUP_KINDS``."""
    registry = default_registry()
    for kind in SETUP_KINDS:
        registry.add(kind)
    return registry


class ControlPlaneError(Exception):
    """A component did not start; the message ends with the tail of its log."""


@dataclass
class _Credentials:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_public: Path
    sa_private: Path


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (+ controller manager, scheduler) from ``assets``."""

    assets: Path
    workdir: Path
    port: int = 0
    audit: bool = False  # write the audit log that ``audit_events()`` reads
    _processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _etcd_url: str = field(default="", repr=False)
    _credentials: _Credentials | None = field(default=None, repr=False)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._credentials = _make_credentials(self.workdir / "pki")
        try:
            self._etcd_url = self._start_etcd()
            self._start_apiserver(self._etcd_url)
            self._write_admin_kubeconfig()
        except BaseException:
            self.stop()
            raise
        return self

    def start_controller_manager(self, *flags: str) -> None:
        """Garbage collection, PDB status, namespace finalization, node lifecycle;
        ``flags`` are added to kube-controller-manager's command line."""
        if KUBE_CONTROLLER_MANAGER in self._processes:
            return
        creds = self._creds
        self._spawn(
            KUBE_CONTROLLER_MANAGER,
            f"--kubeconfig={self.admin_kubeconfig}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
            f"--controllers={CONTROLLERS}",
            f"--service-account-private-key-file={creds.sa_private}",
            f"--root-ca-file={creds.ca_cert}",
            f"--cluster-signing-cert-file={creds.ca_cert}",
            f"--cluster-signing-key-file={creds.ca_key}",
            "--use-service-account-credentials=false",
            *flags,
        )

    def start_scheduler(self) -> None:
        if KUBE_SCHEDULER in self._processes:
            return
        self._spawn(
            KUBE_SCHEDULER,
            f"--kubeconfig={self.admin_kubeconfig}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
        )

    def stop(self) -> None:
        """Stop every process started, newest first, by process id."""
        for name in reversed(list(self._processes)):
            process = self._processes.pop(name)
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self._creds.ca_cert

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    def admin_config(self) -> ClusterConfig:
        creds = self._creds
        return ClusterConfig(
            server=self.url,
            ca_file=str(creds.ca_cert),
            client_cert_file=str(creds.admin_cert),
            client_key_file=str(creds.admin_key),
        )

    def token_config(self, token: str) -> ClusterConfig:
        return ClusterConfig(server=self.url, ca_file=str(self.ca_file), token=token)

    def admin_kube(self, **options: Any) -> HttpKube:
        """An admin client that also knows ``SETUP_KINDS``."""
        options.setdefault("registry", setup_registry())
        return HttpKube(self.admin_config(), **options)

    def write_kubeconfig(self, path: Path, *, token: str | None = None) -> Path:
        """A kubeconfig for the admin, or for whoever ``token`` belongs to."""
        creds = self._creds
        user: dict[str, str] = (
            {"token": token}
            if token
            else {"client-certificate": str(creds.admin_cert), "client-key": str(creds.admin_key)}
        )
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "envtest",
                    "cluster": {"server": self.url, "certificate-authority": str(creds.ca_cert)},
                }
            ],
            "users": [{"name": "user", "user": user}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "user"}}],
            "current-context": "envtest",
        }
        path.write_text(json.dumps(document, indent=2))
        return path

    def service_account_token(self, namespace: str, name: str, seconds: int = 3600) -> str:
        """A bound token of the ServiceAccount ``namespace/name`` (created if absent), from
        the TokenRequest API: requests with it are authorized by RBAC as that account."""
        kube = self.admin_kube()
        try:
            space = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            _ensure(kube, space)
            account = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace},
            }
            _ensure(kube, account)
            answer = kube._request(  # TokenRequest is a subresource the port does not model
                "POST",
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {"expirationSeconds": seconds},
                },
            )
        finally:
            kube.close()
        return str(answer["status"]["token"])

    def cluster_role_kubeconfig(
        self, path: Path, namespace: str, name: str, rules: list[dict[str, Any]]
    ) -> Path:
        """A kubeconfig at ``path`` of ServiceAccount ``namespace/name``, bound to a
        ClusterRole ``name`` of ``rules`` and nothing else (the caller deletes the
        ClusterRole and ClusterRoleBinding ``name``)."""
        rbac = "rbac.authorization.k8s.io/v1"
        kube = self.admin_kube()
        try:
            meta = {"name": name}
            kube.create(
                {"apiVersion": rbac, "kind": "ClusterRole", "metadata": meta, "rules": rules}
            )
            kube.create(
                {
                    "apiVersion": rbac,
                    "kind": "ClusterRoleBinding",
                    "metadata": meta,
                    "roleRef": {
                        "apiGroup": rbac.split("/")[0],
                        "kind": "ClusterRole",
                        "name": name,
                    },
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
                }
            )
        finally:
            kube.close()
        return self.write_kubeconfig(path, token=self.service_account_token(namespace, name))

    @property
    def audit_log(self) -> Path:
        return self.workdir / "audit.log"

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log so far (``audit.k8s.io/v1`` Events, oldest first). The apiserver
        writes an event just after it answers: a caller that needs the event of a request
        it made a moment ago polls."""
        if not self.audit:
            raise ControlPlaneError("the audit log is off: start the plane with audit=True")
        if not self.audit_log.exists():
            return []
        lines = self.audit_log.read_text().splitlines()
        # The last line may be half written while the apiserver is busy.
        return [json.loads(line) for line in lines if line.endswith("}")]

    def install_crds(self, crds: Iterable[dict[str, Any]]) -> None:
        """Create the CustomResourceDefinitions that do not exist yet and wait until the
        server serves each of them (condition Established)."""
        kube = self.admin_kube()
        try:
            names = []
            for crd in crds:
                _ensure(kube, crd)
                names.append(crd["metadata"]["name"])
            deadline = time.monotonic() + READY_TIMEOUT
            while not all(_established(kube, name) for name in names):
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"CRDs not established: {', '.join(names)}")
                time.sleep(0.05)
        finally:
            kube.close()

    def dry_run(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` applied server-side as a dry run (created or updated, nothing stored),
        every field checked (``fieldValidation=Strict``): what the server would store, or
        the ApiError that names the field it refuses. ``obj``'s kind must be one the
        admin's registry knows (``setup_registry``)."""
        kube = self.admin_kube()
        try:
            kind = kube.registry.lookup(obj["kind"], obj["apiVersion"])
            metadata = obj["metadata"]
            path = kind.object_path(metadata["name"], metadata.get("namespace"))
            return dict(
                kube._request(  # server-side apply with dry run: the port has no such call
                    "PATCH",
                    path,
                    params=DRY_RUN_APPLY,
                    body=obj,
                    content_type="application/apply-patch+yaml",
                )
            )
        finally:
            kube.close()

    def watches_served(self, resource: str, scope: str) -> int:
        """The watches of ``resource`` (``configmaps``) kube-apiserver is serving now,
        namespaced or cluster-wide (``scope``): its ``apiserver_longrunning_requests``."""
        kube = self.admin_kube()
        try:
            metrics = kube._client.get("/metrics", headers=kube._headers()).text
        finally:
            kube.close()
        wanted = (f'resource="{resource}"', f'scope="{scope}"', 'verb="WATCH"')
        for line in metrics.splitlines():
            if line.startswith("apiserver_longrunning_requests{") and all(
                w in line for w in wanted
            ):
                return int(float(line.rsplit(" ", 1)[1]))
        return 0

    def compact_etcd(self, resource_version: str) -> None:
        """Compact etcd's history up to ``resource_version`` (a resourceVersion is an
        etcd revision), as the API server does every five minutes."""
        body = json.dumps({"revision": int(resource_version), "physical": True}).encode()
        request = urllib.request.Request(f"{self._etcd_url}/v3/kv/compaction", data=body)
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()

    def openapi(self, group_versions: Iterable[str]) -> list[dict[str, Any]]:
        """The server's OpenAPI v3 document of each group-version (``api/v1``,
        ``apis/apps/v1``), as ``joiner.kube.coreschema`` is generated from."""
        kube = self.admin_kube()
        try:
            return [dict(kube._request("GET", f"/openapi/v3/{gv}")) for gv in group_versions]
        finally:
            kube.close()

    def log(self, name: str) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- internals -------------------------------------------------------------------------

    @property
    def _creds(self) -> _Credentials:
        if self._credentials is None:
            raise ControlPlaneError("the control plane is not started")
        return self._credentials

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        data = self.workdir / "etcd"
        self._spawn(
            "etcd",
            f"--data-dir={data}",
            "--name=envtest",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=envtest=http://127.0.0.1:{peer}",
            "--quota-backend-bytes=8589934592",
        )
        url = f"http://127.0.0.1:{client}"
        self._wait_ready("etcd", lambda: _http_ok(f"{url}/health"))
        return url

    def _start_apiserver(self, etcd_url: str) -> None:
        creds = self._creds
        self.port = self.port or free_port()
        self._spawn(
            "kube-apiserver",
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={creds.serving_cert}",
            f"--tls-private-key-file={creds.serving_key}",
            f"--client-ca-file={creds.ca_cert}",
            f"--service-account-issuer=https://127.0.0.1:{self.port}",
            f"--service-account-key-file={creds.sa_public}",
            f"--service-account-signing-key-file={creds.sa_private}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            f"--disable-admission-plugins={','.join(DISABLED_ADMISSION)}",
            *self._audit_flags(),
        )
        context = ssl.create_default_context(cafile=str(creds.ca_cert))
        context.load_cert_chain(str(creds.admin_cert), str(creds.admin_key))
        self._wait_ready("kube-apiserver", lambda: _http_ok(f"{self.url}/readyz", context=context))

    def _audit_flags(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.workdir / "audit-policy.json"
        policy.write_text(json.dumps(AUDIT_POLICY))
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",  # each event is written by the request it records
        ]

    def _write_admin_kubeconfig(self) -> None:
        self.write_kubeconfig(self.admin_kubeconfig)

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 (the child keeps it)
        with log:
            self._processes[name] = subprocess.Popen(
                [str(self.assets / name), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            )

    def _wait_ready(self, name: str, ready: Any) -> None:
        process = self._processes[name]
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {process.returncode}: {self._tail(name)}"
                )
            if ready():
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{name} not ready after {READY_TIMEOUT:.0f} s: {self._tail(name)}")

    def _tail(self, name: str) -> str:
        return " | ".join(self.log(name).strip().splitlines()[-5:])


def _ensure(kube: HttpKube, obj: dict[str, Any]) -> None:
    with contextlib.suppress(AlreadyExists):
        kube.create(obj)


def _established(kube: HttpKube, name: str) -> bool:
    crd = kube.get("CustomResourceDefinition", name)
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Called in a child process: SIGTERM to it when the thread that started it ends."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


# -- certificates ----------------------------------------------------------------------------


def _make_credentials(directory: Path) -> _Credentials:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _rsa_key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envtest-ca")])
    ca = (
        _builder(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    serving_key = _rsa_key()
    serving = (
        _builder(_name("kube-apiserver"), ca_name, serving_key)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(_key_usage(), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    admin_key = _rsa_key()
    admin = (
        _builder(_name("envtest-admin", organization="system:masters"), ca_name, admin_key)
        .add_extension(_key_usage(), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    sa_key = _rsa_key()
    paths = _Credentials(
        ca_cert=_write(directory / "ca.crt", _cert_pem(ca)),
        ca_key=_write(directory / "ca.key", _key_pem(ca_key)),
        serving_cert=_write(directory / "serving.crt", _cert_pem(serving)),
        serving_key=_write(directory / "serving.key", _key_pem(serving_key)),
        admin_cert=_write(directory / "admin.crt", _cert_pem(admin)),
        admin_key=_write(directory / "admin.key", _key_pem(admin_key)),
        sa_public=_write(
            directory / "sa.pub",
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        ),
        sa_private=_write(directory / "sa.key", _key_pem(sa_key)),
    )
    return paths


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _builder(
    subject: x509.Name, issuer: x509.Name, key: rsa.RSAPrivateKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=7))
    )


def _key_usage(cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    path.chmod(0o600)
    return path
