"""Leader election on a coordination.k8s.io/v1 Lease [DEPLOY]: one holder at a time,
takeover after the lease expires (judged by each replica's own clock, so skewed clocks
never give two leaders), a leader that cannot renew or was paused stops acting, and
the fence refuses its writes; release on shutdown hands over at once."""

from __future__ import annotations

import httpx
import pytest
from joiner.clock import FakeClock
from joiner.kube.api import KubeAPI, ServiceUnavailable
from joiner.kube.memory import MemoryKube
from joiner.leader import LEASE_NAME, LeaderElector, LeaderFence, NotLeading
from joiner.testing.envtest import ControlPlane

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
    assert b.tick() is False  # b sees the Lease as a just wrote it
    clock.advance(15)
    assert b.tick() is False  # unchanged for 15s by b's clock: not yet expired
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
    b.tick()
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


def _skewed(
    offset: float, kube: KubeAPI | None = None, namespace: str = NAMESPACE
) -> tuple[FakeClock, FakeClock, LeaderElector, LeaderElector]:
    """Replicas a and b on one API server; b's clock runs ``offset`` seconds ahead of a's."""
    clock_a, clock_b = FakeClock(), FakeClock(FakeClock().now() + offset)
    kube = kube or MemoryKube(clock_a)
    a = LeaderElector(kube, clock_a, "a", namespace)
    b = LeaderElector(kube, clock_b, "b", namespace)
    return clock_a, clock_b, a, b


def _advance(seconds: float, *clocks: FakeClock) -> None:
    for clock in clocks:
        clock.advance(seconds)


def test_a_clock_running_ahead_never_makes_a_second_leader():
    """b's clock is 16 s ahead: a's renewTime always looks more than a lease old to it.
    Expiry is judged by when b saw the Lease change, so a keeps the Lease."""
    clock_a, clock_b, a, b = _skewed(16.0)
    for _ in range(20):  # 40 s of a renewing every retry period
        assert (a.tick(), b.tick()) == (True, False)
        _advance(2, clock_a, clock_b)
    assert (a.leading, b.leading) == (True, False)


def test_a_clock_running_behind_still_takes_over_after_one_lease():
    """b's clock is 16 s behind: once a stops renewing, b takes over a lease duration
    after it last saw a renew, not 16 s later."""
    clock_a, clock_b, a, b = _skewed(-16.0)
    a.tick()
    assert b.tick() is False
    assert _takeover_time(b, clock_a, clock_b) == 16  # the first retry over 15 s later


def _takeover_time(b: LeaderElector, *clocks: FakeClock) -> int | None:
    """Seconds until ``b`` takes the Lease over, retrying every 2 s (None: not in 40 s)."""
    for step in range(1, 20):
        _advance(2, *clocks)
        if b.tick():
            return 2 * step
    return None


def test_skewed_clocks_on_a_real_api_server_give_one_leader_at_a_time(
    control_plane: ControlPlane, namespace: str
) -> None:
    """The same 16 s skew against kube-apiserver's Lease API (its MicroTime fields and
    resourceVersion preconditions): one leader throughout, then a clean handover."""
    kube = control_plane.admin_kube()
    clock_a, clock_b, a, b = _skewed(16.0, kube, namespace)
    for _ in range(5):
        assert (a.tick(), b.tick()) == (True, False)
        _advance(2, clock_a, clock_b)
    # b last saw a renew 2 s ago; the first retry more than 15 s after that wins.
    assert _takeover_time(b, clock_a, clock_b) == 14
    spec = kube.get("Lease", LEASE_NAME, namespace)["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
    assert a.tick() is False
    kube.close()


def test_a_paused_leader_stops_leading_the_moment_it_resumes():
    """A process pause longer than the renew deadline: no tick ran, yet ``leading`` is
    already false when the reconcile loop looks after the pause."""
    clock, _, a, b, changes = _pair()
    assert a.tick() is True
    clock.advance(10)
    assert a.leading is True  # exactly at the renew deadline
    clock.advance(0.5)  # paused: the election thread did not run either
    assert a.leading is False
    assert b.tick() is False  # the lease itself runs 15 s: b waits, so no overlap
    assert a.tick() is True  # a resumes and renews the lease it still holds
    assert changes == [("a", True)]  # a was never reported as stepping down: it renewed


def test_a_replica_that_sees_another_holder_steps_down_at_once():
    _, kube, a, _, changes = _pair()
    a.tick()
    lease = kube.get("Lease", LEASE_NAME, NAMESPACE)
    lease["spec"]["holderIdentity"] = "b"  # b took over while a was partitioned away
    kube.update(lease)
    assert a.tick() is False
    assert a.leading is False
    assert changes == [("a", True), ("a", False)]


def test_the_fence_refuses_writes_once_the_renew_deadline_has_passed():
    clock, kube, a, _, _ = _pair()
    fenced = LeaderFence(kube, lambda: a.leading)
    a.tick()
    fenced.create(_config_map("before"))
    clock.advance(10.5)  # a pause in the middle of a reconcile
    writes = [
        lambda: fenced.create(_config_map("after")),
        lambda: fenced.update(kube.get("ConfigMap", "before", "default")),
        lambda: fenced.update_status(kube.get("ConfigMap", "before", "default")),
        lambda: fenced.patch("ConfigMap", "before", {"data": {"k": "v"}}, "default"),
        lambda: fenced.delete("ConfigMap", "before", "default"),
        lambda: fenced.evict("p", "default"),
        lambda: fenced.bind("p", "default", "n"),
    ]
    for write in writes:
        with pytest.raises(NotLeading, match="no longer holds the Lease"):
            write()
    assert [o["metadata"]["name"] for o in fenced.list("ConfigMap", "default")] == ["before"]
    assert kube.get("ConfigMap", "before", "default").get("data") is None


def _config_map(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }
