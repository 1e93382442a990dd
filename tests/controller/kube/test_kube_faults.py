"""The http adapter against a server that misbehaves (fault_server, on 127.0.0.1): every
call ends within its deadline with an ApiError naming the verb and the resource, a
broken list is never read as an empty one, and re-lists and re-watches back off so
the request rate stays well under the configured QPS."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fault_server import (
    Close,
    Fault,
    FaultServer,
    Reply,
    Request,
    Stream,
    Trickle,
    pod_list,
    status,
)
from joiner.kube.api import (
    Gone,
    InternalError,
    MalformedResponse,
    Timeout,
    TooManyRequests,
    Unreachable,
)
from joiner.kube.http import ClusterConfig, HttpKube, RetryPolicy
from joiner.state.feed import ThreadedFeed
from kube_helpers import pod

POD_PATH = "/api/v1/namespaces/default/pods/a"
SLACK = 1.0  # seconds a call may overrun its deadline on a loaded machine
GONE = status(410, "Expired")
A_POD = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a", "namespace": "default"}}


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[Request], Fault]], FaultServer]]:
    servers: list[FaultServer] = []

    def start(respond: Callable[[Request], Fault]) -> FaultServer:
        servers.append(FaultServer(respond).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def client(server: FaultServer, **options: Any) -> HttpKube:
    options.setdefault("retry", RetryPolicy(max_retries=2, base_delay=0.05))
    return HttpKube(ClusterConfig(server=server.url), **options)


def timed(call: Callable[[], object]) -> tuple[BaseException | None, float]:
    """The error a call raised (None: it returned) and how long it took."""
    started = time.monotonic()
    try:
        call()
    except Exception as error:  # the error is the result under test
        return error, time.monotonic() - started
    return None, time.monotonic() - started


# ------------------------------------------------------- every error names its call

BROKEN_ANSWERS: dict[str, Fault] = {
    "500": Reply(500, status(500, "InternalError")),
    "immediate close": Close(),
    "body shorter than Content-Length": Reply(200, A_POD, declared_length=500),
    "truncated JSON": Reply(200, b'{"kind": "Pod", "metadata": {"na'),
    "empty body": Reply(200, b""),
    "not an object": Reply(200, [1, 2]),
    "trickle": Trickle(Reply(200, A_POD), every=0.1),
}
EXPECTED_ERRORS = {
    "500": InternalError,
    "immediate close": Unreachable,
    "body shorter than Content-Length": Unreachable,
    "truncated JSON": MalformedResponse,
    "empty body": MalformedResponse,
    "not an object": MalformedResponse,
    "trickle": Timeout,
}


@pytest.mark.parametrize("fault", list(BROKEN_ANSWERS))
def test_a_broken_answer_is_an_api_error_naming_the_call_within_the_deadline(serve, fault):
    server = serve(lambda request: BROKEN_ANSWERS[fault])
    error, took = timed(lambda: client(server, timeout=1.5).get("Pod", "a", "default"))
    assert type(error) is EXPECTED_ERRORS[fault]
    assert str(error).startswith(f"get {POD_PATH}: ")
    assert (error.verb, error.resource) == ("get", POD_PATH)  # type: ignore[union-attr]
    assert took < 1.5 + SLACK
    # A read is asked again (twice here) while its deadline allows; the trickle uses it up.
    assert len(server.requests) == (1 if fault == "trickle" else 3)


def test_writes_are_not_repeated_after_a_broken_answer(serve):
    server = serve(lambda request: Close())
    error, _ = timed(lambda: client(server).create(pod("a")))
    assert isinstance(error, Unreachable)
    assert str(error).startswith("create /api/v1/namespaces/default/pods: ")
    assert len(server.requests) == 1  # the create may have happened: never sent twice


def test_a_trickling_server_cannot_hold_a_call_past_its_deadline(serve):
    """A byte every 0.1 s keeps every read under its per-read timeout: only the overall
    deadline ends the call (the answer would take 8 s)."""
    server = serve(lambda request: Trickle(Reply(200, pod_list(["a"], "7")), every=0.1))
    error, took = timed(lambda: client(server, timeout=1.0).list("Pod", "default"))
    assert isinstance(error, Timeout)
    assert str(error).startswith("list /api/v1/namespaces/default/pods: no complete answer")
    assert took < 1.0 + SLACK


def test_a_trickling_watch_ends_at_its_timeout_plus_the_request_timeout(serve):
    server = serve(lambda request: Trickle(Reply(200, b"x" * 200), every=0.1))
    watch = client(server, timeout=1.0).watch("Pod", "default", timeout_seconds=1)
    error, took = timed(lambda: list(watch))
    assert isinstance(error, Timeout)
    assert str(error).startswith("watch /api/v1/namespaces/default/pods: ")
    assert took < 2.0 + SLACK


def test_a_healthy_watch_streams_past_the_request_timeout(serve):
    """Watches keep working: the request timeout bounds opening one, not its life."""
    added = {"type": "ADDED", "object": A_POD}
    server = serve(lambda request: Stream([added], hold=1.5))
    watch = client(server, timeout=0.5).watch("Pod", "default", timeout_seconds=2)
    started = time.monotonic()
    events = list(watch)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "a")]
    assert time.monotonic() - started >= 1.5


def test_malformed_watch_events_are_errors_naming_the_watch(serve):
    server = serve(lambda request: Stream([b'{"type": "ADDED", "object": {"meta\n']))
    error, _ = timed(lambda: list(client(server).watch("Pod", "default", timeout_seconds=5)))
    assert isinstance(error, MalformedResponse)
    assert str(error).startswith("watch /api/v1/namespaces/default/pods: a watch event is not")


@pytest.mark.parametrize("form", ["status", "event"])
def test_410_in_either_form_is_gone_naming_the_watch(serve, form):
    fault = Reply(410, GONE) if form == "status" else Stream([{"type": "ERROR", "object": GONE}])
    server = serve(lambda request: fault)
    error, _ = timed(lambda: list(client(server).watch("Pod", "default", timeout_seconds=5)))
    assert isinstance(error, Gone)
    assert str(error) == "watch /api/v1/namespaces/default/pods: Expired"


# ------------------------------------------------------------------ Retry-After


def test_retry_after_is_honoured(serve):
    answers = iter([Reply(429, status(429, "TooManyRequests"), {"Retry-After": "1"})])
    server = serve(lambda request: next(answers, Reply(200, A_POD)))
    assert client(server, timeout=5).get("Pod", "a", "default")["metadata"]["name"] == "a"
    first, second = server.requests
    assert second.at - first.at >= 1.0


def test_a_retry_after_beyond_the_deadline_fails_at_once(serve):
    server = serve(lambda r: Reply(429, status(429, "TooManyRequests"), {"Retry-After": "30"}))
    error, took = timed(lambda: client(server, timeout=2).get("Pod", "a", "default"))
    assert isinstance(error, TooManyRequests)
    assert str(error).startswith(f"get {POD_PATH}: ")
    assert took < SLACK  # waiting 30 s could only end in a missed deadline
    assert len(server.requests) == 1


# ------------------------------------------- the watch loop: pacing, never deletions


class Recorder:
    """A ThreadedFeed's deliveries, as (event type or LISTED, name)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def handler(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        self.seen.append((event_type, obj["metadata"]["name"]))

    def listed(self, kind: str) -> None:
        self.seen.append(("LISTED", kind))


def run_feed(api: HttpKube, seconds: float) -> Recorder:
    """A production watch loop on Pods for ``seconds`` of wall time."""
    recorder = Recorder()
    feed = ThreadedFeed(api, ["Pod"], recorder.handler, recorder.listed)
    feed.start()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        feed.wait(left)
    feed.stop()
    feed.pump()
    return recorder


def watch_answer(fault: Fault) -> Callable[[Request], Fault]:
    return lambda request: fault if request.watch else Reply(200, pod_list(["a"], "5"))


WINDOW = 3.0
QPS, BURST = 5.0, 2
# Re-lists and re-watches start at 0.4-0.8 s and double: in 3 s at most 5 tries.
MOST_TRIES = 5


@pytest.mark.parametrize(
    "fault",
    [
        Reply(410, GONE),
        Stream([{"type": "ERROR", "object": GONE}]),
        Stream([]),  # a watch that ends as soon as it opens
        Close(),
    ],
    ids=["410 status", "410 event", "watch ends at once", "connection closed"],
)
def test_a_failing_watch_backs_off_and_stays_under_the_qps(serve, fault):
    server = serve(watch_answer(fault))
    run_feed(client(server, qps=QPS, burst=BURST), WINDOW)
    watches, lists = server.seen(watch=True), server.seen(watch=False)
    assert 2 <= len(watches) <= MOST_TRIES
    assert len(lists) <= MOST_TRIES
    assert len(server.requests) <= QPS * WINDOW + BURST
    gaps = [b.at - a.at for a, b in itertools.pairwise(watches)]
    assert all(gap >= 0.35 for gap in gaps)  # the first backoff is at least 0.4 s


def test_an_empty_or_cut_off_list_never_deletes_what_exists(serve):
    """A relist after a 410 gets an empty body, then cut-off JSON; the objects still
    exist, so the consumer must see them modified, never deleted."""
    lists = iter(
        [
            Reply(200, pod_list(["a", "b"], "5")),
            Reply(200, b""),
            Reply(200, b'{"kind": "PodList", "items": ['),
            Reply(200, pod_list(["a", "b"], "9")),
        ]
    )
    watches = iter([Stream([{"type": "ERROR", "object": GONE}])])

    def respond(request: Request) -> Fault:
        if request.watch:
            return next(watches, Stream([], hold=WINDOW))
        return next(lists)

    server = serve(respond)
    recorder = run_feed(client(server), WINDOW)
    assert recorder.seen == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("LISTED", "Pod"),
        ("MODIFIED", "a"),
        ("MODIFIED", "b"),
        ("LISTED", "Pod"),
    ]
    assert len(server.seen(watch=False)) == 4


def test_an_empty_list_body_is_an_error(serve):
    server = serve(lambda request: Reply(200, {"kind": "PodList", "metadata": {}}))
    api = client(server, retry=RetryPolicy(max_retries=0))
    with pytest.raises(MalformedResponse, match=r"^list /api/v1/pods: the list has no items"):
        api.list("Pod")


def test_every_call_of_a_stalled_server_ends_within_its_deadline(serve):
    """Many threads against a server that never finishes an answer: each call ends
    within its deadline, none hangs."""
    server = serve(lambda request: Trickle(Reply(200, A_POD), every=0.5))
    api = client(server, timeout=1.0)
    took: list[float] = []

    def call() -> None:
        took.append(timed(lambda: api.get("Pod", "a", "default"))[1])

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(took) == 6 and max(took) < 1.0 + SLACK
