"""The http adapter: the KubeAPI port over the Kubernetes REST API, with httpx.

Why httpx and our own thin REST layer (measured, see docs/performance.md): the
controller wants plain dicts, and decoding 10,000 pods into generated models
costs 4-15x the CPU of ``json.loads`` on the raw body (kubernetes client models
1.8 s, kr8s 4.4 s, lightkube 0.46 s, httpx + json 0.12-0.25 s). httpx is already a
runtime dependency, is maintained, and streams watches line by line.

Configuration comes from in-cluster service-account files or a kubeconfig
(token, client certificate, or an exec credential plugin such as
``aws eks get-token``). Requests pass a QPS/burst token bucket; 429 and 5xx
answers to reads are retried with exponential backoff and jitter (honouring
Retry-After); writes only on 429 and 503, and never where the status is the
answer itself (an eviction blocked by a PodDisruptionBudget).

Every call has one overall deadline (``timeout``), retries and their waits
included, that holds however slowly the server sends (see ``deadline``); a watch
has its ``timeoutSeconds`` plus that. Whatever goes wrong surfaces as an ApiError
naming the verb and the resource: a Status from the server, a transport failure
(``Unreachable``), a missed deadline (``Timeout``), or a success whose body is not
the verb's answer (``MalformedResponse``: empty, cut off, not JSON, a list
without items), so a broken answer is never read as an empty one.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from joiner import yamlio
from joiner.backoff import Backoff
from joiner.clock import from_rfc3339
from joiner.kube.api import (
    PATCH_CONTENT_TYPES,
    ApiError,
    BadRequest,
    Cause,
    Invalid,
    MalformedResponse,
    ObjectList,
    PatchType,
    PropagationPolicy,
    Timeout,
    Unreachable,
    UnsupportedMediaType,
    WatchEvent,
    error_from_status,
)
from joiner.kube.deadline import DeadlineTransport, within
from joiner.kube.resources import Registry, ResourceKind, default_registry
from joiner.kube.sharing import shared_loads
from joiner.ratelimit import TokenBucket

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# Reads are retried on overload and server errors; writes only where the server
# says it did not act (429, 503), so a create is never sent twice after a 500.
_RETRYABLE_READ = frozenset({429, 500, 502, 503, 504})
_RETRYABLE_WRITE = frozenset({429, 503})
# Every write asks the server to refuse unknown fields (by default it drops them with a
# warning), so a typo in a field the controller writes fails loudly.
_STRICT = {"fieldValidation": "Strict"}
# The Kubernetes verb of each method, for error messages (a GET of a collection: "list").
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_WATCH_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})


class ConfigError(Exception):
    """The cluster configuration is missing or malformed (names the field)."""


@dataclass
class ClusterConfig:
    """Where the API server is and how to authenticate to it."""

    server: str
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False
    token: str | None = None
    token_file: str | None = None  # re-read on use: projected tokens rotate
    client_cert_file: str | None = None
    client_key_file: str | None = None
    exec_command: dict[str, Any] | None = None
    _exec_token: tuple[str, float] | None = field(default=None, repr=False)

    def bearer_token(self) -> str | None:
        if self.token_file:
            return Path(self.token_file).read_text().strip()
        if self.exec_command:
            return self._token_from_exec()
        return self.token

    def _token_from_exec(self) -> str:
        if self._exec_token and self._exec_token[1] > time.time() + 60:
            return self._exec_token[0]
        spec = self.exec_command or {}
        env = dict(os.environ)
        env.update({e["name"]: e["value"] for e in spec.get("env") or []})
        result = subprocess.run(
            [spec["command"], *(spec.get("args") or [])],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if result.returncode != 0:
            raise ConfigError(f"users[].user.exec: {spec['command']} failed: {result.stderr}")
        status = json.loads(result.stdout).get("status") or {}
        token = status.get("token")
        if not token:
            raise ConfigError("users[].user.exec: the credential has no status.token")
        expiry = status.get("expirationTimestamp")
        self._exec_token = (token, from_rfc3339(expiry) if expiry else time.time() + 300)
        return token

    @classmethod
    def in_cluster(cls, directory: Path = SERVICE_ACCOUNT_DIR) -> ClusterConfig:
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise ConfigError("KUBERNETES_SERVICE_HOST is not set: not running in a cluster")
        token_file = directory / "token"
        if not token_file.exists():
            raise ConfigError(f"service account token {token_file} does not exist")
        host = f"[{host}]" if ":" in host else host
        return cls(
            server=f"https://{host}:{port}",
            ca_file=str(directory / "ca.crt"),
            token_file=str(token_file),
        )

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None) -> ClusterConfig:
        location = Path(path or os.environ.get("KUBECONFIG", "~/.kube/config").split(":")[0])
        location = location.expanduser()
        try:
            document = yamlio.load(yamlio.read_text(location)) or {}
        except (OSError, ValueError) as error:  # ValueError: not UTF-8, too large, bad YAML
            raise ConfigError(f"cannot read kubeconfig {location}: {error}") from None
        if not isinstance(document, dict):
            raise ConfigError(f"cannot read kubeconfig {location}: not a mapping")
        return cls.from_kubeconfig_dict(document, context, base=location.parent)

    @classmethod
    def from_kubeconfig_dict(
        cls, document: dict[str, Any], context: str | None = None, base: Path = Path(".")
    ) -> ClusterConfig:
        name = context or document.get("current-context")
        if not name:
            raise ConfigError("kubeconfig: current-context is not set and no context was given")
        ctx = _named(document, "contexts", name)["context"]
        cluster = _named(document, "clusters", ctx.get("cluster"))["cluster"]
        user = _named(document, "users", ctx.get("user"))["user"] if ctx.get("user") else {}
        if not cluster.get("server"):
            raise ConfigError(f"kubeconfig: clusters[{ctx.get('cluster')}].cluster.server is empty")
        return cls(
            server=cluster["server"].rstrip("/"),
            ca_file=_file_or_data(cluster, "certificate-authority", base),
            insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
            token=user.get("token"),
            token_file=_resolve(user.get("tokenFile"), base),
            client_cert_file=_file_or_data(user, "client-certificate", base),
            client_key_file=_file_or_data(user, "client-key", base),
            exec_command=user.get("exec"),
        )

    @classmethod
    def auto(cls) -> ClusterConfig:
        """In-cluster when running in a pod, else the kubeconfig."""
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return cls.in_cluster()
        return cls.from_kubeconfig()


def _named(document: dict[str, Any], section: str, name: Any) -> dict[str, Any]:
    for entry in document.get(section) or []:
        if entry.get("name") == name:
            return entry
    raise ConfigError(f"kubeconfig: {section}[name={name}] not found")


def _resolve(path: str | None, base: Path) -> str | None:
    return None if not path else str((base / Path(path).expanduser()).resolve())


def _file_or_data(section: dict[str, Any], field_name: str, base: Path) -> str | None:
    """A kubeconfig PEM given as a file, or as base64 *-data written to a private file."""
    if section.get(field_name):
        return _resolve(section[field_name], base)
    data = section.get(f"{field_name}-data")
    if not data:
        return None
    handle, path = tempfile.mkstemp(prefix="joiner-kube-", suffix=".pem")
    with os.fdopen(handle, "wb") as out:
        out.write(base64.b64decode(data))
    return path


@dataclass
class RetryPolicy:
    max_retries: int = 5
    base_delay: float = 0.2
    max_delay: float = 10.0

    def delay(self, attempt: int, retry_after: str | None) -> float:
        """The server's Retry-After when it gives one (the call's deadline bounds it),
        else the shared jittered backoff."""
        if retry_after and retry_after.isdigit():
            return float(retry_after)
        return Backoff(self.base_delay, self.max_delay).delay(attempt)


class HttpWatch:
    """A streaming watch over HTTP; iterate for events, stop() to close.

    Opening it is bounded by ``open_timeout``; the stream by ``duration`` (the server
    ends it after ``timeoutSeconds``; None: no bound)."""

    def __init__(
        self,
        open_stream: Callable[[], httpx.Response],
        path: str,
        open_timeout: float,
        duration: float | None,
        managed_fields: bool = True,
        decode: Callable[[str | bytes], Any] = json.loads,
    ) -> None:
        """``managed_fields``, ``decode``: as the HttpKube that opened it has them."""
        self._open, self._path = open_stream, path
        self._open_timeout, self._duration = open_timeout, duration
        self._managed_fields, self._decode = managed_fields, decode
        self._response: httpx.Response | None = None
        self._stopped = False

    def __iter__(self) -> Iterator[WatchEvent]:
        opened = time.monotonic()
        deadline = None if self._duration is None else opened + self._duration
        try:
            with within(opened + self._open_timeout):
                self._response = response = self._open()
                if response.status_code >= 400:
                    response.read()
                    raise _error(response)
            lines = response.iter_lines()
            while not self._stopped:
                with within(deadline):
                    line = next(lines, None)
                if line is None:
                    return  # the server ended the watch (its timeoutSeconds)
                if line:
                    event = _watch_event(line, self._decode)
                    if not self._managed_fields:
                        drop_managed_fields(event.object)
                    yield event
        except httpx.HTTPError as failure:
            if not self._stopped:  # stop() closing the stream is not a failure
                raise _transport_error(failure).during("watch", self._path) from None
        except ApiError as error:
            raise error.during("watch", self._path) from None
        finally:
            self.stop()

    def stop(self) -> None:
        """End the watch, from any thread: the socket is shut down first, so a reader
        blocked on it wakes at once (closing the response alone would leave it blocked,
        and the connection open until the server's timeout)."""
        self._stopped = True
        response = self._response
        if response is None:
            return
        stream = response.extensions.get("network_stream")
        sock = None if stream is None else stream.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        response.close()


def _watch_event(line: str, decode: Callable[[str | bytes], Any] = json.loads) -> WatchEvent:
    try:
        event = decode(line)
    except json.JSONDecodeError as err:
        raise MalformedResponse(f"a watch event is not JSON ({err}): {line[:200]!r}") from None
    if not isinstance(event, dict) or event.get("type") not in _WATCH_EVENT_TYPES:
        raise MalformedResponse(f"not a watch event: {line[:200]!r}")
    obj = event.get("object")
    if event["type"] == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        raise error_from_status(code if isinstance(code, int) else 500, status)
    if not isinstance(obj, dict):
        raise MalformedResponse(f"a {event['type']} watch event without an object")
    return WatchEvent(event["type"], obj)


def drop_managed_fields(body: dict[str, Any]) -> None:
    """Remove metadata.managedFields from an object, or from each item of a list (in
    place: the body was just decoded and is the caller's alone)."""
    items = body.get("items")
    for obj in items if isinstance(items, list) else (body,):
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)


def _error(response: httpx.Response) -> ApiError:
    try:
        body = json.loads(response.content) if response.content else None
    except json.JSONDecodeError:
        body = {"message": response.text[:500]}
    return error_from_status(response.status_code, body)


def _transport_error(failure: httpx.HTTPError) -> ApiError:
    what = f"{type(failure).__name__}: {failure}"
    if isinstance(failure, httpx.TimeoutException):
        return Timeout(f"no complete answer in time ({what})")
    if isinstance(failure, httpx.DecodingError):
        return MalformedResponse(f"the response body cannot be decoded ({what})")
    return Unreachable(what)


def _json_object(
    content: bytes, decode: Callable[[str | bytes], Any] = json.loads
) -> dict[str, Any]:
    """A success body, which for every verb is one JSON object."""
    if not content:
        raise MalformedResponse("the response body is empty")
    try:
        body = decode(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise MalformedResponse(f"the response body is not JSON, perhaps cut off ({err})") from None
    if not isinstance(body, dict):
        raise MalformedResponse("the response body is not a JSON object")
    return body


def _checked(body: dict[str, Any], check: Callable[[dict[str, Any]], str | None]) -> dict[str, Any]:
    problem = check(body)
    if problem:
        raise MalformedResponse(problem)
    return body


def _list_problem(body: dict[str, Any]) -> str | None:
    """Why a list body cannot be taken as the collection (None: it can)."""
    items = body.get("items")
    if "items" not in body or not (items is None or isinstance(items, list)):
        return "the list has no items array"
    metadata = body.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    if not isinstance(version, str) or not version:
        return "the list has no metadata.resourceVersion"
    return None


def tls_context(config: ClusterConfig) -> ssl.SSLContext:
    """Server verification against the cluster CA, and the client certificate if any."""
    context = ssl.create_default_context(cafile=config.ca_file)
    if config.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.client_cert_file:
        context.load_cert_chain(config.client_cert_file, config.client_key_file)
    return context


class HttpKube:
    """The KubeAPI port over HTTP (the production adapter)."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        registry: Registry | None = None,
        qps: float = 50.0,
        burst: int = 100,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        managed_fields: bool = True,
        shared_strings: bool = False,
        page_size: int | None = None,
    ) -> None:
        """``timeout``: the deadline of one call, retries and their waits included.
        ``managed_fields=False``: objects come back without metadata.managedFields.
        ``shared_strings=True``: objects come back with their repeated strings shared
        (``joiner.kube.sharing``), for a client whose objects fill a long-lived cache.
        ``page_size``: lists are read that many items a request (None: all at once)."""
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be >= 1")
        self.config = config
        self._managed_fields, self._page_size = managed_fields, page_size
        self._decode = shared_loads if shared_strings else json.loads
        self.registry = registry or default_registry()
        self.limiter = TokenBucket(qps, burst, sleep=sleep)
        self._retry = retry or RetryPolicy()
        self._timeout = timeout
        self._sleep = sleep
        self._client = httpx.Client(
            base_url=config.server,
            transport=DeadlineTransport(tls_context(config)),
            timeout=timeout,
            headers={"Accept": "application/json", "User-Agent": "joiner-controller"},
        )

    def close(self) -> None:
        self._client.close()

    # ----------------------------------------------------------- transport

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        token = self.config.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _request(
        self,
        method: str,
        path: str,
        *,
        verb: str | None = None,
        params: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry_statuses: frozenset[int] | None = None,
        check: Callable[[dict[str, Any]], str | None] = lambda body: None,
    ) -> dict[str, Any]:
        """One call on ``path``, retried as the method allows until its deadline;
        ``verb`` names it in errors (default: the method's); ``check`` says what is wrong
        with a success body, if anything."""
        verb = verb or _VERBS[method]
        if retry_statuses is None:
            retry_statuses = _RETRYABLE_READ if method == "GET" else _RETRYABLE_WRITE
        content = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        headers = self._headers({"Content-Type": content_type} if content is not None else None)
        deadline = time.monotonic() + self._timeout
        attempt = 0
        while True:
            self.limiter.acquire()
            retry_after: str | None = None
            try:
                with within(deadline):
                    response = self._client.request(
                        method, path, params=params, content=content, headers=headers
                    )
                if response.status_code < 400:
                    body = _checked(_json_object(response.content, self._decode), check)
                    if not self._managed_fields:
                        drop_managed_fields(body)
                    return body
                retry_after = response.headers.get("Retry-After")
                failure = _error(response)
                retryable = response.status_code in retry_statuses
            except httpx.HTTPError as transport_failure:
                failure, retryable = _transport_error(transport_failure), method == "GET"
            except MalformedResponse as malformed:  # a read may simply be asked again
                failure, retryable = malformed, method == "GET"
            delay = self._retry.delay(attempt, retry_after)
            if not retryable or attempt >= self._retry.max_retries:
                raise failure.during(verb, path)
            if time.monotonic() + delay >= deadline:
                raise failure.during(verb, path)
            self._sleep(delay)
            attempt += 1

    # --------------------------------------------------------------- reads

    def get(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> dict[str, Any]:
        rk = self.registry.lookup(kind, api_version)
        return self._request("GET", rk.object_path(name, self._namespace(rk, namespace)))

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        api_version: str | None = None,
    ) -> ObjectList:
        rk = self.registry.lookup(kind, api_version)
        params = _selector_params(label_selector, field_selector)
        if self._page_size is not None:
            params["limit"] = str(self._page_size)
        items: list[dict[str, Any]] = []
        version = ""
        while True:  # a page at a time, as client-go's reflector lists (each page is decoded
            # and stripped before the next arrives); all pages are one snapshot, the first's
            body = self._request(
                "GET",
                rk.collection_path(namespace),
                verb="list",
                params=params,
                check=_list_problem,
            )
            metadata = body.get("metadata") or {}
            version = version or str(metadata.get("resourceVersion", ""))
            items.extend(body.get("items") or [])
            if not metadata.get("continue"):
                break
            params = {**params, "continue": str(metadata["continue"])}
        for item in items:  # list items carry neither kind nor apiVersion on the wire
            item.setdefault("kind", rk.kind)
            item.setdefault("apiVersion", rk.api_version)
        return ObjectList(items, version)

    def watch(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: float | None = None,
        allow_bookmarks: bool = False,
        api_version: str | None = None,
    ) -> HttpWatch:
        rk = self.registry.lookup(kind, api_version)
        params = _selector_params(label_selector, field_selector)
        params["watch"] = "1"
        if resource_version:
            params["resourceVersion"] = resource_version
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(max(1, int(timeout_seconds)))
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        path = rk.collection_path(namespace)

        def open_stream() -> httpx.Response:
            self.limiter.acquire()
            request = self._client.build_request(
                "GET",
                path,
                params=params,
                headers=self._headers(),
                timeout=httpx.Timeout(self._timeout, read=None),  # reads: the deadline
            )
            return self._client.send(request, stream=True)

        # The server ends the watch after timeoutSeconds; one request timeout more for it
        # to do so, and a watch that outstays that is cut off (a Timeout).
        duration = None if timeout_seconds is None else timeout_seconds + self._timeout
        return HttpWatch(
            open_stream, path, self._timeout, duration, self._managed_fields, self._decode
        )

    # -------------------------------------------------------------- writes

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        rk, metadata = self._kind_of(obj)
        namespace = (metadata.get("namespace") or "default") if rk.namespaced else None
        return self._request("POST", rk.collection_path(namespace), params=_STRICT, body=obj)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        rk, metadata = self._kind_of(obj)
        path = rk.object_path(
            self._name(rk, metadata), self._namespace(rk, metadata.get("namespace"))
        )
        return self._request("PUT", path, params=_STRICT, body=obj)

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        rk, metadata = self._kind_of(obj)
        path = rk.object_path(
            self._name(rk, metadata), self._namespace(rk, metadata.get("namespace"))
        )
        return self._request("PUT", f"{path}/status", params=_STRICT, body=obj)

    def patch(
        self,
        kind: str,
        name: str,
        patch: dict[str, Any] | list[dict[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        api_version: str | None = None,
    ) -> dict[str, Any]:
        rk = self.registry.lookup(kind, api_version)
        path = rk.object_path(name, self._namespace(rk, namespace))
        if subresource:
            path = f"{path}/{subresource}"
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise UnsupportedMediaType(f"unknown patch type {patch_type!r}")
        return self._request("PATCH", path, params=_STRICT, body=patch, content_type=content_type)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy = "Background",
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
        api_version: str | None = None,
    ) -> dict[str, Any]:
        rk = self.registry.lookup(kind, api_version)
        options: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation_policy,
        }
        if preconditions:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = rk.object_path(name, self._namespace(rk, namespace))
        return self._request("DELETE", path, body=options)

    def evict(self, pod_name: str, namespace: str) -> None:
        rk = self.registry.lookup("Pod", "v1")
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod_name, "namespace": namespace},
        }
        # A 429 here is the PodDisruptionBudget's answer, not overload: never retried.
        self._request(
            "POST",
            f"{rk.object_path(pod_name, namespace)}/eviction",
            body=eviction,
            retry_statuses=_RETRYABLE_WRITE - {429},
        )

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        rk = self.registry.lookup("Pod", "v1")
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod_name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self._request("POST", f"{rk.object_path(pod_name, namespace)}/binding", body=binding)

    # ------------------------------------------------------------- helpers

    def _kind_of(self, obj: Any) -> tuple[ResourceKind, dict[str, Any]]:
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise Invalid("Object 'Kind' is missing", [Cause("kind", "Required value")])
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict):
            raise Invalid("metadata is required", [Cause("metadata", "Required value")])
        api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else None
        return self.registry.lookup(obj["kind"], api_version), metadata

    @staticmethod
    def _name(rk: ResourceKind, metadata: dict[str, Any]) -> str:
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise Invalid(
                f"{rk.kind} is invalid: metadata.name: Required value",
                [Cause("metadata.name", "Required value", "FieldValueRequired")],
            )
        return name

    @staticmethod
    def _namespace(rk: ResourceKind, namespace: str | None) -> str | None:
        if rk.namespaced and not namespace:
            raise BadRequest(f"a namespace is required for namespaced kind {rk.kind}")
        return namespace if rk.namespaced else None


def _selector_params(label_selector: str | None, field_selector: str | None) -> dict[str, str]:
    params = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params
