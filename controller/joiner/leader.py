"""Leader election on a coordination.k8s.io/v1 Lease, as client-go does it.

Two replicas run; only the holder of the Lease acts. ``LeaderElector.tick()``
is called periodically (every ``retry_period``) and returns whether this
replica leads now. A leader that cannot renew before ``renew_deadline`` stops
acting; another replica takes the Lease once ``lease_duration`` has passed
since the last renewal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from joiner.clock import Clock, to_micro_time
from joiner.kube.api import AlreadyExists, Conflict, KubeAPI, NotFound

log = logging.getLogger(__name__)

LEASE_NAME = "karpenter-leader-election"


def _parse_micro_time(s: str | None) -> float | None:
    if not s:
        return None
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


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
        self._leading = False
        self._last_renewed: float | None = None

    @property
    def leading(self) -> bool:
        return self._leading

    def tick(self) -> bool:
        """Try to acquire or renew; returns whether this replica leads now."""
        try:
            renewed = self._acquire_or_renew()
        except Exception as err:  # refused, or unreachable (transport error): not renewed
            log.warning("leader election: %s", err)
            renewed = False
        now = self.clock.now()
        if renewed:
            self._last_renewed = now
        deadline_passed = (
            self._last_renewed is None or now - self._last_renewed > self.renew_deadline
        )
        self._set_leading(renewed or (self._leading and not deadline_passed))
        return self._leading

    def release(self) -> None:
        """On graceful shutdown: give the Lease up so the other replica takes over at once."""
        if not self._leading:
            return
        try:
            lease = self.kube.get("Lease", self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["leaseDurationSeconds"] = 1
                self.kube.update(lease)
        except Exception as err:  # shutting down regardless; the lease then expires
            log.warning("leader election: release failed: %s", err)
        self._set_leading(False)

    def _acquire_or_renew(self) -> bool:
        now = self.clock.now()
        try:
            lease = self.kube.get("Lease", self.name, self.namespace)
        except NotFound:
            return self._create(now)
        spec = lease.setdefault("spec", {})
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
            return False
        return True

    def _create(self, now: float) -> bool:
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
            return False
        return True

    def _expired(self, spec: dict[str, Any], now: float) -> bool:
        renewed = _parse_micro_time(spec.get("renewTime")) or 0.0
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        return now > renewed + duration

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            log.info("leader election: %s", "leading" if leading else "not leading")
            self._leading = leading
            if self._on_change:
                self._on_change(leading)
