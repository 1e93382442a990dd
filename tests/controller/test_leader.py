"""Leader election on a coordination.k8s.io/v1 Lease [DEPLOY]: one holder at a time,
takeover after the lease expires, a leader that cannot renew stops acting, release on
shutdown hands over at once."""

from __future__ import annotations

import httpx
from joiner.clock import FakeClock
from joiner.kube.api import ServiceUnavailable
from joiner.kube.memory import MemoryKube
from joiner.leader import LEASE_NAME, LeaderElector

NAMESPACE = "kube-system"


def _pair() -> tuple[FakeClock, MemoryKube, LeaderElector, LeaderElector, list[tuple[str, bool]]]:
    clock = FakeClock()
    kube = MemoryKube(clock)
    changes: list[tuple[str, bool]] = []

    def elector(identity: str) -> LeaderElector:
        return LeaderElector(
            kube,
            clock,
            identity,
            NAMESPACE,
            on_change=lambda leading: changes.append((identity, leading)),
        )

    return clock, kube, elector("a"), elector("b"), changes


def _lease(kube: MemoryKube) -> dict:
    return kube.get("Lease", LEASE_NAME, NAMESPACE)["spec"]


def test_first_replica_creates_the_lease_and_the_second_waits():
    clock, kube, a, b, changes = _pair()
    assert a.tick() is True
    assert b.tick() is False
    spec = _lease(kube)
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == (
        "a",
        15,
        0,
    )
    assert spec["renewTime"] == "2026-01-01T00:00:00.000000Z"
    clock.advance(2)
    assert (a.tick(), b.tick()) == (True, False)
    assert _lease(kube)["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert changes == [("a", True)]


def test_takeover_after_the_leader_stops_renewing():
    clock, kube, a, b, changes = _pair()
    a.tick()
    clock.advance(15)
    assert b.tick() is False  # renewed 15s ago: not yet expired
    clock.advance(0.5)
    assert b.tick() is True
    spec = _lease(kube)
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
    # The old leader comes back (e.g. after a long GC pause) and finds b holding the lease.
    assert a.tick() is False
    assert changes == [("a", True), ("b", True), ("a", False)]


def test_leader_that_cannot_reach_the_api_stops_after_the_renew_deadline():
    clock, kube, a, _, changes = _pair()
    a.tick()

    def unavailable(*args: object, **kwargs: object) -> dict:
        raise ServiceUnavailable("apiserver down")

    kube.get = unavailable  # type: ignore[method-assign]
    clock.advance(10)
    assert a.tick() is True  # exactly at the renew deadline: still leading
    clock.advance(0.5)
    assert a.tick() is False
    assert changes == [("a", True), ("a", False)]


def test_release_hands_the_lease_over_at_once():
    clock, kube, a, b, _ = _pair()
    a.tick()
    a.release()
    assert a.leading is False
    assert _lease(kube)["holderIdentity"] is None
    clock.advance(2)  # the next retry period of b, long before a's 15s would run out
    assert b.tick() is True
    assert _lease(kube)["holderIdentity"] == "b"


def test_racing_replicas_do_not_both_win():
    clock, kube, a, b, _ = _pair()
    a.tick()
    clock.advance(20)
    stale = kube.get("Lease", LEASE_NAME, NAMESPACE)
    assert b.tick() is True  # b takes the expired lease first
    stale["spec"]["holderIdentity"] = "a"
    original_get = kube.get
    kube.get = lambda *args, **kwargs: stale  # type: ignore[method-assign]
    assert a.tick() is False  # a's update carries the old resourceVersion: 409
    kube.get = original_get  # type: ignore[method-assign]
    assert _lease(kube)["holderIdentity"] == "b"


def test_transport_failures_count_as_failed_renewals():
    """The http adapter raises httpx errors when the API server is unreachable; the
    elector must treat them like refusals, not die (it runs on its own thread)."""
    clock, kube, a, _, changes = _pair()
    a.tick()

    def refused(*args: object, **kwargs: object) -> dict:
        raise httpx.ConnectError("connection refused")

    kube.get = refused  # type: ignore[method-assign]
    kube.update = refused  # type: ignore[method-assign]
    clock.advance(11)
    assert a.tick() is False
    assert changes == [("a", True), ("a", False)]


def test_release_when_the_api_is_unreachable_still_stops_leading():
    _, kube, a, _, changes = _pair()
    a.tick()

    def refused(*args: object, **kwargs: object) -> dict:
        raise httpx.ConnectError("connection refused")

    kube.get = refused  # type: ignore[method-assign]
    a.release()  # SIGTERM during an outage: logged, and the lease simply expires
    assert a.leading is False
    assert changes == [("a", True), ("a", False)]
