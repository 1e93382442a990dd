"""The three targets of the KubeAPI contract suite, behind one interface.

* ``memory``: the MemoryKube itself, on a FakeClock; its emulated controllers run when
  a test waits (``eventually`` moves the virtual clock to their next work).
* ``http``: HttpKube over real HTTP to the same kind of store, served by KubeHTTPServer
  on 127.0.0.1.
* ``real``: HttpKube against kube-apiserver v1.36 with kube-controller-manager (the
  envtest tier's session control plane), as an admin.

A test uses only what every target has: ``api`` (the adapter under test), its own
namespace, ``name()`` for cluster-scoped objects (the real plane is shared by the whole
session), ``now()`` for the server's time, ``eventually()`` for what a controller does
after a write, ``write_with_field_validation()`` for a request the http adapter would
never send, and ``compact()`` for the storage below the watch history.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import ssl
import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from joiner.clock import FakeClock, from_rfc3339
from joiner.kube.api import ApiError, KubeAPI, NotFound, error_from_status
from joiner.kube.memory import MemoryKube
from joiner.testing.envtest import ControlPlane
from joiner.testing.polling import wait_for

T = TypeVar("T")
WAIT = 30.0  # seconds a test waits at most for a controller (the namespace one takes ~10)
CLUSTER_SCOPED = ("NodeClaim", "NodePool", "Node", "Namespace")


def suffix_for(test_name: str) -> str:
    return hashlib.sha1(test_name.encode()).hexdigest()[:8]


class Target:
    """What the contract tests see of a server."""

    api: KubeAPI
    namespace: str
    suffix: str

    def name(self, base: str) -> str:
        """A cluster-scoped name no other test uses."""
        return f"{base}-{self.suffix}"

    def now(self) -> float:
        raise NotImplementedError

    def eventually(self, condition: Callable[[], T], what: str, timeout: float = WAIT) -> T:
        """The first truthy value of ``condition()`` while the server's controllers act."""
        raise NotImplementedError

    def compact(self, resource_version: str) -> None:
        raise NotImplementedError

    def write_with_field_validation(
        self, verb: str, obj: dict[str, Any], validation: str, patch: Any = None
    ) -> tuple[dict[str, Any], list[str]]:
        """``create`` (obj) or merge ``patch`` (of obj) with the given ``fieldValidation``:
        the answer and the warnings."""
        raise NotImplementedError

    def stamped_within(self, stamp: str, start: float, end: float) -> bool:
        """A server timestamp (whole seconds) lies in [start, end]."""
        return int(start) <= from_rfc3339(stamp) <= end


class MemoryTarget(Target):
    """The store itself (``api`` is the store or an http adapter in front of it)."""

    def __init__(self, api: KubeAPI, store: MemoryKube, clock: FakeClock, namespace: str) -> None:
        self.api, self.store, self.clock = api, store, clock
        self.namespace, self.suffix = namespace, suffix_for(namespace)
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    def now(self) -> float:
        return self.clock.now()

    def eventually(self, condition: Callable[[], T], what: str, timeout: float = WAIT) -> T:
        deadline = self.clock.now() + timeout
        while True:
            value = condition()
            if value:
                return value
            due = self.store.next_due()
            if due is None or due > deadline:
                raise AssertionError(f"{what}: nothing more happens within {timeout} s")
            self.clock.set(max(due, self.clock.now()))
            self.store.run_controllers()

    def compact(self, resource_version: str) -> None:
        """Nothing: the store has no storage below its watch history."""

    def write_with_field_validation(
        self, verb: str, obj: dict[str, Any], validation: str, patch: Any = None
    ) -> tuple[dict[str, Any], list[str]]:
        warnings: list[str] = []
        options: dict[str, Any] = {"field_validation": validation, "warnings": warnings}
        if verb == "create":
            return self.store.create(obj, **options), warnings
        metadata = obj["metadata"]
        written = self.store.patch(
            obj["kind"], metadata["name"], patch, metadata.get("namespace"), **options
        )
        return written, warnings


class HttpTarget(MemoryTarget):
    """The http adapter in front of the store's HTTP server at ``url``."""

    def __init__(
        self, api: KubeAPI, store: MemoryKube, clock: FakeClock, namespace: str, url: str
    ) -> None:
        super().__init__(api, store, clock, namespace)
        self.client = httpx.Client(base_url=url)

    def write_with_field_validation(
        self, verb: str, obj: dict[str, Any], validation: str, patch: Any = None
    ) -> tuple[dict[str, Any], list[str]]:
        return _raw_write(self.client, self.api, verb, obj, validation, patch)


class RealTarget(Target):
    """kube-apiserver with kube-controller-manager; the wall clock."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.plane, self.namespace, self.suffix = plane, namespace, suffix_for(namespace)
        self.api = plane.admin_kube()
        context = ssl.create_default_context(cafile=str(plane.ca_file))
        config = plane.admin_config()
        context.load_cert_chain(str(config.client_cert_file), str(config.client_key_file))
        self.client = httpx.Client(base_url=plane.url, verify=context)

    def now(self) -> float:
        return time.time()

    def eventually(self, condition: Callable[[], T], what: str, timeout: float = WAIT) -> T:
        return wait_for(condition, what, timeout, interval=0.02)

    def compact(self, resource_version: str) -> None:
        self.plane.compact_etcd(resource_version)

    def write_with_field_validation(
        self, verb: str, obj: dict[str, Any], validation: str, patch: Any = None
    ) -> tuple[dict[str, Any], list[str]]:
        return _raw_write(self.client, self.api, verb, obj, validation, patch)

    def close(self) -> None:
        """Remove this test's cluster-scoped objects (finalizers first) and the clients."""
        for kind in CLUSTER_SCOPED:
            for obj in self.api.list(kind).items:
                name = obj["metadata"]["name"]
                if not name.endswith(self.suffix) or name == self.namespace:
                    continue
                with contextlib.suppress(NotFound):
                    if obj["metadata"].get("finalizers") and kind != "Namespace":
                        self.api.patch(kind, name, {"metadata": {"finalizers": None}})
                    self.api.delete(kind, name)
        self.api.close()  # type: ignore[attr-defined]
        self.client.close()


def _raw_write(
    client: httpx.Client, api: KubeAPI, verb: str, obj: dict[str, Any], validation: str, patch: Any
) -> tuple[dict[str, Any], list[str]]:
    """The request the http adapter would send, with another ``fieldValidation``."""
    rk = api.registry.lookup(obj["kind"], obj["apiVersion"])  # type: ignore[attr-defined]
    metadata = obj["metadata"]
    params = {"fieldValidation": validation}
    if verb == "create":
        answer = client.post(rk.collection_path(metadata.get("namespace")), params=params, json=obj)
    else:
        answer = client.patch(
            rk.object_path(metadata["name"], metadata.get("namespace")),
            params=params,
            content=json.dumps(patch),
            headers={"Content-Type": "application/merge-patch+json"},
        )
    if answer.status_code >= 400:
        raise _status_error(answer)
    return answer.json(), [_warning_text(w) for w in answer.headers.get_list("warning")]


def _status_error(answer: httpx.Response) -> ApiError:
    return error_from_status(answer.status_code, answer.json())


def _warning_text(header: str) -> str:
    """``299 - "unknown field \\"x\\""`` -> ``unknown field "x"``."""
    return json.loads(header.split(" ", 2)[2])
