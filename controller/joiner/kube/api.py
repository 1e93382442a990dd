"""The KubeAPI port: the one narrow interface the controller uses to talk to Kubernetes.

Objects are plain dicts in Kubernetes JSON form. Kinds are named by their Kind
("Pod", "NodeClaim"); ``api_version`` disambiguates when two groups share a Kind.
Errors mirror the API server's Status responses so that callers handle the same
exceptions whichever adapter (memory or http) sits behind the port.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

PatchType = Literal["merge", "strategic", "json"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]

# Content types the API server uses for each patch type.
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


@dataclass(frozen=True)
class Cause:
    """One field-level reason of a 422 Invalid (Status.details.causes[])."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


class ApiError(Exception):
    """An API error with the HTTP status code and Status reason of the API server.

    The http adapter names the call that failed (``verb`` and ``resource``, the request
    path); ``str()`` then leads with them, so a log line says what was being done."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str, causes: list[Cause] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.causes: list[Cause] = list(causes or [])
        self.verb: str | None = None
        self.resource: str | None = None

    def during(self, verb: str, resource: str) -> ApiError:
        """Name the failed call (``"list"``, ``"/api/v1/pods"``); returns the error."""
        self.verb, self.resource = verb, resource
        return self

    def __str__(self) -> str:
        if self.verb is None:
            return self.message
        return f"{self.verb} {self.resource}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        """The metav1.Status body the API server returns for this error."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.causes:
            status["details"] = {
                "causes": [
                    {"field": c.field, "message": c.message, "reason": c.reason}
                    for c in self.causes
                ]
            }
        return status


class BadRequest(ApiError):
    code, reason = 400, "BadRequest"


class Forbidden(ApiError):
    code, reason = 403, "Forbidden"


class NotFound(ApiError):
    code, reason = 404, "NotFound"


class MethodNotAllowed(ApiError):
    code, reason = 405, "MethodNotAllowed"


class AlreadyExists(ApiError):
    code, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    code, reason = 409, "Conflict"


class UnsupportedMediaType(ApiError):
    code, reason = 415, "UnsupportedMediaType"


class Gone(ApiError):
    code, reason = 410, "Expired"


class Invalid(ApiError):
    code, reason = 422, "Invalid"


class TooManyRequests(ApiError):
    code, reason = 429, "TooManyRequests"


class InternalError(ApiError):
    code, reason = 500, "InternalError"


class ServiceUnavailable(ApiError):
    code, reason = 503, "ServiceUnavailable"


class Timeout(ApiError):
    """The call did not finish within its deadline (also the server's own 504)."""

    code, reason = 504, "Timeout"


# Client-side failures of the http adapter: no Status came back.


class Unreachable(ServiceUnavailable):
    """The API server could not be reached, or the connection broke before a whole
    answer arrived (refused, reset, closed early, TLS failure)."""


class MalformedResponse(ApiError):
    """The server answered success with a body that is not what the verb returns
    (empty, cut off, not JSON, a list without items): never taken as an answer."""

    code, reason = 502, "MalformedResponse"


_BY_REASON: dict[str, type[ApiError]] = {
    cls.reason: cls
    for cls in (
        BadRequest,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        AlreadyExists,
        Conflict,
        UnsupportedMediaType,
        Gone,
        Invalid,
        TooManyRequests,
        InternalError,
        ServiceUnavailable,
        Timeout,
    )
}
_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


def error_from_status(code: int, status: dict[str, Any] | None) -> ApiError:
    """Rebuild the typed error from an HTTP code and a metav1.Status body (http adapter)."""
    status = status if isinstance(status, dict) else {}
    reason = str(status.get("reason", ""))
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or ApiError
    details = status.get("details") if isinstance(status.get("details"), dict) else {}
    causes = [
        Cause(str(c.get("field", "")), str(c.get("message", "")), str(c.get("reason", "")))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]
    error = cls(str(status.get("message") or f"HTTP {code}"), causes)
    if cls is ApiError:
        error.code = code
    return error


@dataclass
class ObjectList:
    """A list response: the items and the collection resourceVersion to watch from."""

    items: list[dict[str, Any]]
    resource_version: str

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class WatchEvent:
    type: WatchEventType
    object: dict[str, Any] = field(default_factory=dict)


class Watch(Protocol):
    """A running watch: iterate for events (blocks up to the timeout); stop() ends it."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def stop(self) -> None: ...


class KubeAPI(Protocol):
    """What the controller, the simulator and every reconciler use to reach Kubernetes."""

    def get(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> dict[str, Any]: ...

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        api_version: str | None = None,
    ) -> ObjectList: ...

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
    ) -> Watch: ...

    def create(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]: ...

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
    ) -> dict[str, Any]: ...

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
    ) -> dict[str, Any]: ...

    def evict(self, pod_name: str, namespace: str) -> None: ...

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None: ...
