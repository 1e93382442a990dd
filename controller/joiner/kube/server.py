"""The memory store served over HTTP with the Kubernetes REST paths.

Tests run the http adapter against it on 127.0.0.1; the simulator can expose its
cluster to ``kubectl`` through it (discovery endpoints included). It binds to a
loopback address by default and has no authentication: it is a test stand-in,
never a production API server. Writes honour ``fieldValidation`` (default ``Warn``:
unknown fields are dropped and named in ``Warning`` headers, as kube-apiserver does).
The emulated controllers of a store served over a wall clock run on its own thread
(``MemoryKube(controllers="threaded")``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from joiner.kube.api import (
    ApiError,
    BadRequest,
    Gone,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
)
from joiner.kube.decoding import FIELD_VALIDATIONS, FieldValidation
from joiner.kube.memory import MemoryKube, MemoryWatch
from joiner.kube.resources import ResourceKind

DEFAULT_WATCH_TIMEOUT = 1800.0
_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
}
_OBJECT_SUBRESOURCES = frozenset({"status", "eviction", "binding"})


@dataclass
class Route:
    """A request path resolved to a kind, namespace, name and subresource."""

    kind: ResourceKind
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_path(store: MemoryKube, path: str) -> Route:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise NotFound(f"the server could not find the requested resource ({path})")
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        raise NotFound(f"the server could not find the requested resource ({path})")
    kind = store.registry.by_path(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if subresource is not None and subresource not in _OBJECT_SUBRESOURCES:
        raise NotFound(f"the server could not find the requested resource ({path})")
    return Route(kind, namespace, name, subresource)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KubeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests and the simulator do not want an access log on stderr."""

    # One entry point per verb; each resolves the route and maps errors to Status.
    def do_GET(self) -> None:
        self._serve(self._get)

    def do_POST(self) -> None:
        self._serve(self._post)

    def do_PUT(self) -> None:
        self._serve(self._put)

    def do_PATCH(self) -> None:
        self._serve(self._patch)

    def do_DELETE(self) -> None:
        self._serve(self._delete)

    def _serve(self, action: Callable[[str, dict[str, list[str]]], None]) -> None:
        url = urlsplit(self.path)
        try:
            action(url.path, parse_qs(url.query))
        except ApiError as error:
            self._send_json(error.code, error.to_status())
        except (ValueError, KeyError, TypeError) as error:
            self._send_json(400, BadRequest(f"bad request: {error}").to_status())

    @property
    def store(self) -> MemoryKube:
        return self.server.store

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError as error:
            raise BadRequest(f"the request body is not JSON: {error}") from None

    def _send_json(self, code: int, body: Any, warnings: list[str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for warning in warnings or ():
            self.send_header("Warning", f"299 - {json.dumps(warning)}")
        self.end_headers()
        self.wfile.write(data)

    # ------------------------------------------------------------- verbs

    def _get(self, path: str, query: dict[str, list[str]]) -> None:
        discovery = self.server.discovery(path)
        if discovery is not None:
            self._send_json(200, discovery)
            return
        route = parse_path(self.store, path)
        if route.name is not None:
            obj = self.store.get(
                route.kind.kind, route.name, route.namespace, api_version=route.kind.api_version
            )
            self._send_json(200, obj)
        elif _flag(query, "watch"):
            self._watch(route, query)
        else:
            self._list(route, query)

    def _list(self, route: Route, query: dict[str, list[str]]) -> None:
        listed = self.store.list(
            route.kind.kind,
            route.namespace,
            label_selector=_param(query, "labelSelector"),
            field_selector=_param(query, "fieldSelector"),
            api_version=route.kind.api_version,
        )
        self._send_json(
            200,
            {
                "apiVersion": route.kind.api_version,
                "kind": route.kind.list_kind_name,
                "metadata": {"resourceVersion": listed.resource_version},
                "items": listed.items,
            },
        )

    def _watch(self, route: Route, query: dict[str, list[str]]) -> None:
        timeout = float(_param(query, "timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            watch = self.store.watch(
                route.kind.kind,
                route.namespace,
                resource_version=_param(query, "resourceVersion"),
                label_selector=_param(query, "labelSelector"),
                field_selector=_param(query, "fieldSelector"),
                timeout_seconds=timeout,
                allow_bookmarks=_flag(query, "allowWatchBookmarks"),
                api_version=route.kind.api_version,
            )
        except (Gone, BadRequest) as error:
            # The API server reports these inside the stream, as an ERROR event.
            self._chunk({"type": "ERROR", "object": error.to_status()})
            self._chunk(None)
            return
        self._stream(watch)

    def _stream(self, watch: MemoryWatch) -> None:
        self.server.track(watch)
        try:
            for event in watch:
                self._chunk({"type": event.type, "object": event.object})
            self._chunk(None)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away; stopping the watch below is all there is to do
        finally:
            watch.stop()
            self.server.untrack(watch)

    def _chunk(self, event: dict[str, Any] | None) -> None:
        data = b"" if event is None else json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _post(self, path: str, query: dict[str, list[str]]) -> None:
        route = parse_path(self.store, path)
        body = self._body()
        if route.subresource == "eviction" and route.name:
            self.store.evict(route.name, route.namespace or "")
            self._send_json(201, _success_status())
        elif route.subresource == "binding" and route.name:
            target = (body or {}).get("target") or {}
            self.store.bind(route.name, route.namespace or "", str(target.get("name") or ""))
            self._send_json(201, _success_status())
        elif route.name is None:
            warnings: list[str] = []
            created = self.store.create(
                self._in_route(route, body),
                field_validation=_field_validation(query),
                warnings=warnings,
            )
            self._send_json(201, created, warnings)
        else:
            raise MethodNotAllowed(f"POST is not supported on {path}")

    def _put(self, path: str, query: dict[str, list[str]]) -> None:
        route = parse_path(self.store, path)
        body = self._in_route(route, self._body())
        if route.name is None or body["metadata"].get("name") != route.name:
            raise BadRequest(
                f"the name of the object ({body['metadata'].get('name')}) does not match the "
                f"name on the URL ({route.name})"
            )
        validation, warnings = _field_validation(query), []
        if route.subresource == "status":
            written = self.store.update_status(body, field_validation=validation, warnings=warnings)
        elif route.subresource is None:
            written = self.store.update(body, field_validation=validation, warnings=warnings)
        else:
            raise MethodNotAllowed(f"PUT is not supported on {path}")
        self._send_json(200, written, warnings)

    def _patch(self, path: str, query: dict[str, list[str]]) -> None:
        route = parse_path(self.store, path)
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        patch_type = _PATCH_TYPES.get(content_type)
        if patch_type is None:
            raise UnsupportedMediaType(f"the patch content type {content_type!r} is not supported")
        if route.name is None or route.subresource not in (None, "status"):
            raise MethodNotAllowed(f"PATCH is not supported on {path}")
        warnings: list[str] = []
        patched = self.store.patch(
            route.kind.kind,
            route.name,
            self._body(),
            route.namespace,
            patch_type=patch_type,  # type: ignore[arg-type]
            subresource=route.subresource,
            api_version=route.kind.api_version,
            field_validation=_field_validation(query),
            warnings=warnings,
        )
        self._send_json(200, patched, warnings)

    def _delete(self, path: str, query: dict[str, list[str]]) -> None:
        route = parse_path(self.store, path)
        if route.name is None or route.subresource is not None:
            raise MethodNotAllowed(f"DELETE is not supported on {path}")
        options = self._body() or {}
        grace = options.get("gracePeriodSeconds", _param(query, "gracePeriodSeconds"))
        deleted = self.store.delete(
            route.kind.kind,
            route.name,
            route.namespace,
            propagation_policy=options.get("propagationPolicy")
            or _param(query, "propagationPolicy")
            or "Background",
            preconditions=options.get("preconditions"),
            grace_period_seconds=None if grace is None else int(grace),
            api_version=route.kind.api_version,
        )
        self._send_json(200, deleted)

    @staticmethod
    def _in_route(route: Route, body: Any) -> dict[str, Any]:
        """The body with the kind and namespace of the URL (a mismatch is a 400)."""
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        body.setdefault("apiVersion", route.kind.api_version)
        body.setdefault("kind", route.kind.kind)
        if body["kind"] != route.kind.kind:
            raise BadRequest(
                f"the kind {body['kind']!r} does not match the URL ({route.kind.kind})"
            )
        metadata = body.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise BadRequest("metadata must be a JSON object")
        if route.kind.namespaced and route.namespace:
            if metadata.get("namespace") not in (None, "", route.namespace):
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            metadata["namespace"] = route.namespace
        return body


def _param(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _field_validation(query: dict[str, list[str]]) -> FieldValidation:
    """The request's ``fieldValidation`` (the server's default: Warn)."""
    value = _param(query, "fieldValidation") or "Warn"
    if value not in FIELD_VALIDATIONS:
        raise BadRequest(
            f'fieldValidation: Invalid value: "{value}": fieldValidation must be one of '
            '"Ignore", "Warn", or "Strict"'
        )
    return value  # type: ignore[return-value]


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return (_param(query, name) or "").lower() in ("1", "true")


def _success_status() -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


class KubeHTTPServer(ThreadingHTTPServer):
    """A threaded HTTP server over one MemoryKube; start() runs it in the background."""

    daemon_threads = True

    def __init__(self, store: MemoryKube, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.store = store
        self._watches: set[MemoryWatch] = set()
        self._watches_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> KubeHTTPServer:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="kube-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: end the open watches, then the listener."""
        with self._watches_lock:
            watches = list(self._watches)
        for watch in watches:
            watch.stop()
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def track(self, watch: MemoryWatch) -> None:
        with self._watches_lock:
            self._watches.add(watch)

    def untrack(self, watch: MemoryWatch) -> None:
        with self._watches_lock:
            self._watches.discard(watch)

    def discovery(self, path: str) -> dict[str, Any] | None:
        """The discovery documents kubectl reads (/api, /apis, /api/v1, /apis/g/v)."""
        kinds = list(self.store.registry)
        parts = [p for p in path.split("/") if p]
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["apis"]:
            return _group_list(kinds)
        if parts == ["api", "v1"]:
            return _resource_list("v1", [k for k in kinds if not k.group])
        if len(parts) == 3 and parts[0] == "apis":
            group_version = f"{parts[1]}/{parts[2]}"
            matching = [k for k in kinds if k.api_version == group_version]
            return _resource_list(group_version, matching) if matching else None
        if parts == ["version"]:
            return {"major": "1", "minor": "33", "gitVersion": "v1.33.0-joiner-memory"}
        return None


def _group_list(kinds: list[ResourceKind]) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for kind in kinds:
        if kind.group and kind.version not in groups.setdefault(kind.group, []):
            groups[kind.group].append(kind.version)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {
                    "groupVersion": f"{group}/{versions[0]}",
                    "version": versions[0],
                },
            }
            for group, versions in sorted(groups.items())
        ],
    }


def _resource_list(group_version: str, kinds: list[ResourceKind]) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    for kind in kinds:
        resources.append(
            {
                "name": kind.plural,
                "singularName": kind.kind.lower(),
                "namespaced": kind.namespaced,
                "kind": kind.kind,
                "verbs": verbs,
            }
        )
        if kind.status_subresource:
            resources.append(
                {
                    "name": f"{kind.plural}/status",
                    "singularName": "",
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    if group_version == "v1":
        resources += [
            {
                "name": "pods/eviction",
                "singularName": "",
                "namespaced": True,
                "group": "policy",
                "version": "v1",
                "kind": "Eviction",
                "verbs": ["create"],
            },
            {
                "name": "pods/binding",
                "singularName": "",
                "namespaced": True,
                "kind": "Binding",
                "verbs": ["create"],
            },
        ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
