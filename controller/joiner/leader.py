"""Leader election on a coordination.k8s.io/v1 Lease, as client-go does it.

Two replicas run; only the holder of the Lease acts. ``LeaderElector.tick()``
is called periodically (every ``retry_period``) and tries to acquire or renew.

Time is only ever compared with this replica's own clock, never with the other
replica's (clocks are skewed): a Lease held by another replica has expired once
``lease_duration`` has passed since this replica last *saw it change*, whatever its
``renewTime`` says. ``leading`` is judged when it is read: true while this
replica's last successful renewal started less than ``renew_deadline`` ago, so a
process paused past the deadline stops acting the moment it resumes, before its
election thread has run again. ``LeaderFence`` applies that to every write.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from joiner.clock import Clock, to_micro_time
from joiner.kube.api import AlreadyExists, Conflict, KubeAPI, NotFound, ObjectList, Watch

log = logging.getLogger(__name__)

LEASE_NAME = "karpenter-leader-election"


class NotLeading(Exception):
    """A write refused because this replica's leadership has lapsed."""


class LeaderElector:
    def __init__(
        self,
        kube: KubeAPI,
        clock: Clock,
        identity: str,
        namespace: str,
        name: str = LEASE_NAME,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.kube, self.clock = kube, clock
        self.identity, self.namespace, self.name = identity, namespace, name
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_change = on_change
        self._leading = False  # as last reported to on_change
        self._renewed_at: float | None = None  # when our last successful renewal began
        self._observed: dict[str, Any] | None = None  # the Lease spec as last seen
        self._observed_at = 0.0  # our time when it was first seen so

    @property
    def leading(self) -> bool:
        """Whether this replica may act now (judged now, not at the last tick)."""
        renewed = self._renewed_at
        return renewed is not None and self.clock.now() - renewed <= self.renew_deadline

    def tick(self) -> bool:
        """Try to acquire or renew; returns whether this replica leads now."""
        started = self.clock.now()
        try:
            held = self._acquire_or_renew(started)
        except Exception as err:  # refused, or unreachable: not renewed, not lost either
            log.warning("leader election: %s", err)
            held = None
        if held:
            self._renewed_at = started  # the Lease runs from before the write, never after
        elif held is False:
            self._renewed_at = None  # another replica holds a live Lease: step down now
        self._set_leading(self.leading)
        return self._leading

    def release(self) -> None:
        """On graceful shutdown: give the Lease up so the other replica takes over at once."""
        if not self._leading:
            return
        self._renewed_at = None  # whatever happens below, this replica acts no more
        try:
            lease = self.kube.get("Lease", self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["leaseDurationSeconds"] = 1
                self.kube.update(lease)
        except Exception as err:  # shutting down regardless; the lease then expires
            log.warning("leader election: release failed: %s", err)
        self._set_leading(False)

    def _acquire_or_renew(self, now: float) -> bool | None:
        """True: this replica holds the Lease now; False: another one does; None: the
        write lost a race (409), so nothing is known."""
        try:
            lease = self.kube.get("Lease", self.name, self.namespace)
        except NotFound:
            return self._create(now)
        spec = lease.setdefault("spec", {})
        self._observe(spec, now)
        holder = spec.get("holderIdentity")
        if holder and holder != self.identity and not self._expired(spec, now):
            return False
        if holder != self.identity:
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            spec["acquireTime"] = to_micro_time(now)
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=int(self.lease_duration),
            renewTime=to_micro_time(now),
        )
        try:
            self.kube.update(lease)  # resourceVersion precondition: a racing replica gets 409
        except Conflict:
            return None
        return True

    def _create(self, now: float) -> bool | None:
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": to_micro_time(now),
                "renewTime": to_micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self.kube.create(lease)
        except AlreadyExists:
            return None
        return True

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        """Remember when, by our clock, the Lease last changed (any field of its spec)."""
        if spec != self._observed:
            self._observed, self._observed_at = copy.deepcopy(spec), now

    def _expired(self, spec: dict[str, Any], now: float) -> bool:
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        return now > self._observed_at + duration

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            log.info("leader election: %s", "leading" if leading else "not leading")
            self._leading = leading
            if self._on_change:
                self._on_change(leading)


class LeaderFence:
    """The KubeAPI the reconcilers use: reads pass through; every write first checks,
    at that moment, that this replica still leads, and is refused (``NotLeading``)
    otherwise. A replica that lost the Lease in the middle of a reconcile (a long
    pause) so cannot write what it decided before."""

    def __init__(self, kube: KubeAPI, leading: Callable[[], bool]) -> None:
        self._kube, self._leading = kube, leading

    def _check(self, verb: str) -> None:
        if not self._leading():
            raise NotLeading(f"{verb} refused: this replica no longer holds the Lease")

    def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self._kube.get(*args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> ObjectList:
        return self._kube.list(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> Watch:
        return self._kube.watch(*args, **kwargs)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._check("create")
        return self._kube.create(obj)

    def update(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._check("update")
        return self._kube.update(obj)

    def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._check("update")
        return self._kube.update_status(obj)

    def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check("patch")
        return self._kube.patch(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._check("delete")
        return self._kube.delete(*args, **kwargs)

    def evict(self, pod_name: str, namespace: str) -> None:
        self._check("evict")
        self._kube.evict(pod_name, namespace)

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        self._check("bind")
        self._kube.bind(pod_name, namespace, node_name)
