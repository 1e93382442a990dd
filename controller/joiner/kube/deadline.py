"""An overall deadline per request for httpx, which only knows per-operation timeouts.

httpx's read timeout bounds each socket read, so a server that trickles a byte every
half second holds a request with ``timeout=1`` for as long as it likes. Here every
socket operation (connect, TLS handshake, each read and write, headers and body alike)
waits at most what is left of the deadline of the call in progress on this thread, and
fails with the matching httpx timeout once it has passed. ``within(deadline)`` sets
that deadline around a call; outside one, the per-operation timeouts alone apply.
"""

from __future__ import annotations

import contextvars
import ssl
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager

import httpcore
import httpx

# The deadline (time.monotonic()) of the call in progress on this thread, if any.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "joiner_kube_deadline", default=None
)


@contextmanager
def within(deadline: float | None) -> Iterator[None]:
    """Bound every socket operation inside the block by ``deadline`` (monotonic)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The operation's own timeout, clipped to what is left of the deadline."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise expired("the request deadline has passed")
    return remaining if timeout is None else min(timeout, remaining)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        tls = self._stream.start_tls(
            ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(
            host, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._backend.connect_unix_socket(
            path, _left(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport (its error mapping and streaming) over a connection pool
    whose sockets honour ``within``. httpx has no hook for the network backend, so the
    pool it built is replaced by one with the same TLS context and ours (public httpcore
    API); the deadline tests fail loudly should a new httpx stop using ``_pool``."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,  # httpx's default limits
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_DeadlineBackend(),
        )
