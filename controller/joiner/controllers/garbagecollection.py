"""Garbage collection [SPEC 6.3]: NodeClaims whose instance vanished are deleted;
instances tagged for the cluster with no NodeClaim are terminated once this
controller has seen them for ``ORPHAN_GRACE`` (a launch in progress has not written
its NodeClaim status yet). Age is measured on the injected clock from first sight,
not from the instance's launch time, which comes from another clock; the pass after a
first sight comes when the grace ends, not a whole interval later, so an orphan goes
within ``INTERVAL + ORPHAN_GRACE`` of its launch, restarts of the controller (which
forget the first sights) included, as long as they are ``ORPHAN_GRACE`` apart."""

from __future__ import annotations

import contextlib
import logging

from joiner.api import nodeclaim as nc
from joiner.clock import Clock
from joiner.cloudprovider.types import CloudProvider, NodeClaimNotFoundError
from joiner.controllers.runtime import Result
from joiner.kube.api import KubeAPI, NotFound
from joiner.state.cluster import ClusterState

log = logging.getLogger(__name__)

INTERVAL = 120.0
ORPHAN_GRACE = 30.0
KEY = "gc"


class GarbageCollection:
    name = "garbagecollection"

    def __init__(
        self, kube: KubeAPI, state: ClusterState, cloud: CloudProvider, clock: Clock
    ) -> None:
        self.kube, self.state, self.cloud, self.clock = kube, state, cloud, clock
        self._first_seen: dict[str, float] = {}  # provider id of an unclaimed instance

    def reconcile(self, key: str) -> Result:
        instances = self.cloud.list()
        live = {i.status.provider_id for i in instances}
        self._delete_claims_without_instances(live)
        coming_of_age = self._terminate_orphans(instances)
        return Result(requeue_after=min([INTERVAL, *coming_of_age]))

    def _delete_claims_without_instances(self, live: set[str | None]) -> None:
        for claim in list(self.state.nodeclaims.values()):
            launched = claim.condition_true(nc.LAUNCHED) and claim.status.provider_id
            if not launched or claim.status.provider_id in live:
                continue
            if claim.metadata.get("deletionTimestamp"):
                continue
            log.info("nodeclaim %s: instance %s is gone", claim.name, claim.status.provider_id)
            with contextlib.suppress(NotFound):
                self.kube.delete("NodeClaim", claim.name)

    def _terminate_orphans(self, instances: list) -> list[float]:
        """Terminate the orphans past their grace; returns how long until each of the
        others is."""
        known = {c.status.provider_id for c in self.state.nodeclaims.values()}
        now = self.clock.now()
        unclaimed = {
            i.status.provider_id: i for i in instances if i.status.provider_id not in known
        }
        self._first_seen = {pid: self._first_seen.get(pid, now) for pid in unclaimed}
        waits = []
        for provider_id, instance in unclaimed.items():
            age = now - self._first_seen[provider_id]
            if age < ORPHAN_GRACE:
                waits.append(ORPHAN_GRACE - age)
                continue
            log.info("terminating orphaned instance %s", provider_id)
            with contextlib.suppress(NodeClaimNotFoundError):
                self.cloud.delete(instance)
        return waits
