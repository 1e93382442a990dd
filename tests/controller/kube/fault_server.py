"""A fault-injecting HTTP server on 127.0.0.1 for the http adapter's tests.

A raw socket server, so that it can misbehave below HTTP: every request is recorded
(method, path with query, arrival time) and answered by the ``Fault`` the test's
``respond(request)`` picks: a plain reply (any status, headers and body, empty or cut
off JSON included), a connection closed without an answer, an answer trickled a byte
at a time, a body shorter than its Content-Length, or a watch stream. Every answer
closes its connection, so each request arrives on a connection of its own.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

_REASONS = {200: "OK", 410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error"}


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # with the query string
    at: float  # time.monotonic() when it arrived

    @property
    def watch(self) -> bool:
        return "watch=1" in self.path


def body_of(value: Any) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


def status(code: int, reason: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": reason,
    }


def pod_list(names: list[str], resource_version: str) -> dict[str, Any]:
    return {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": resource_version},
        "items": [
            {"metadata": {"name": n, "namespace": "default", "resourceVersion": resource_version}}
            for n in names
        ],
    }


class Fault:
    """How one request is answered."""

    def answer(self, out: BinaryIO, stop: threading.Event) -> None:
        raise NotImplementedError


def _head(code: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}", "Connection: close"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@dataclass
class Reply(Fault):
    code: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    declared_length: int | None = None  # more than the body: the body is cut off

    def data(self) -> bytes:
        body = body_of(self.body)
        length = len(body) if self.declared_length is None else self.declared_length
        headers = {"Content-Type": "application/json", "Content-Length": str(length)}
        return _head(self.code, {**headers, **self.headers}) + body

    def answer(self, out: BinaryIO, stop: threading.Event) -> None:
        out.write(self.data())


@dataclass
class Close(Fault):
    """The connection closes without a byte of answer."""

    def answer(self, out: BinaryIO, stop: threading.Event) -> None:
        return


@dataclass
class Trickle(Fault):
    """A whole, valid answer, status line first, one byte every ``every`` seconds."""

    reply: Reply
    every: float = 0.1

    def answer(self, out: BinaryIO, stop: threading.Event) -> None:
        data = self.reply.data()
        for index in range(len(data)):
            out.write(data[index : index + 1])
            if stop.wait(self.every):
                return


@dataclass
class Stream(Fault):
    """A watch answer: each line (an event, or raw bytes) as a chunk; the stream then
    stays open ``hold`` seconds (or until the server stops) and ends."""

    lines: list[Any] = field(default_factory=list)
    hold: float = 0.0

    def answer(self, out: BinaryIO, stop: threading.Event) -> None:
        headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        out.write(_head(200, headers))
        for line in self.lines:
            data = body_of(line) + (b"" if isinstance(line, bytes) else b"\n")
            out.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        stop.wait(self.hold)
        out.write(b"0\r\n\r\n")


class FaultServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, respond: Callable[[Request], Fault]) -> None:
        self.respond = respond
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
        self._thread.join()

    def seen(self, method: str = "GET", *, watch: bool | None = None) -> list[Request]:
        """The requests so far with this method (and watch or not, if given)."""
        return [
            r
            for r in list(self.requests)
            if r.method == method and (watch is None or r.watch == watch)
        ]


class _Handler(socketserver.StreamRequestHandler):
    server: FaultServer

    def handle(self) -> None:
        request_line = self.rfile.readline().decode().split()
        if len(request_line) < 2:
            return
        length = 0
        while (line := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        self.rfile.read(length)
        request = Request(request_line[0], request_line[1], time.monotonic())
        self.server.requests.append(request)
        # A client that gave up (its deadline) breaks the pipe: that is the point.
        with contextlib.suppress(OSError):
            self.server.respond(request).answer(self.wfile, self.server.stopping)
            self.connection.shutdown(socket.SHUT_RDWR)
