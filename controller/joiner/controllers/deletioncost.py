"""Pod deletion cost (gate PodDeletionCostManagement) [PDC]: ranks the managed nodes by
consolidation preference and writes the rank to ``controller.kubernetes.io/pod-deletion-cost``
on their ReplicaSet pods, so a Deployment scaling in removes pods from the nodes
consolidation would remove first and fewer pods are evicted later.

As upstream: every pod of a node gets the same value; a node being disrupted (tainted
``karpenter.sh/disrupted``, marked for deletion or deleting) gets -2147483648; drifted
nodes within their pool's Drifted budget come next, then the other candidates within
its Underutilized budget in consolidation order (-N for the first, -1 for the last);
every other node (not initialized, nominated, do-not-disrupt on it or a pod, a PDB that
allows no eviction, beyond its budget, not drifted in a pool with ``consolidateAfter:
Never``) has the annotation removed. Re-ranked at most once
a minute after a change, and at least every five minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from joiner.api import labels as wk
from joiner.clock import Clock
from joiner.controllers.disruption.budgets import DRIFTED, UNDERUTILIZED, allowed_disruptions
from joiner.controllers.disruption.candidates import Candidate, build_candidates
from joiner.controllers.runtime import Result
from joiner.kube.api import KubeAPI, NotFound
from joiner.state.cluster import ClusterState
from joiner.state.node import StateNode

KEY = "rank"
MIN_INTERVAL = 60.0  # seconds between two rankings, however busy the cluster
MAX_INTERVAL = 300.0  # seconds at most between two rankings, however quiet
DISRUPTING = -(2**31)  # int32's least: these pods go first


class PodDeletionCost:
    name = "poddeletioncost"

    def __init__(self, kube: KubeAPI, state: ClusterState, clock: Clock) -> None:
        self.kube, self.state, self.clock = kube, state, clock
        self._ranked_at: float | None = None

    def reconcile(self, key: str) -> Result:
        now = self.clock.now()
        if self._ranked_at is not None and now < self._ranked_at + MIN_INTERVAL:
            return Result(requeue_after=self._ranked_at + MIN_INTERVAL - now)
        self._ranked_at = now
        costs = self.costs()
        for sn in self.state.managed_nodes():
            self._annotate(sn.name, costs.get(sn.name))
        return Result(requeue_after=MAX_INTERVAL)

    def costs(self) -> dict[str, int]:
        """Node name -> the deletion cost its ReplicaSet pods get (absent: none)."""
        costs = {sn.name: DISRUPTING for sn in self.state.managed_nodes() if self._disrupting(sn)}
        ranked = list(self._in_budget(*build_candidates(self.state, {}, self.clock.now())))
        costs.update({c.name: index - len(ranked) for index, c in enumerate(ranked)})
        return costs

    def _disrupting(self, sn: StateNode) -> bool:
        tainted = any(t.get("key") == wk.DISRUPTED_TAINT_KEY for t in sn.taints)
        return tainted or self.state.leaving(sn)

    def _in_budget(self, candidates: list[Candidate], _: Any) -> Iterator[Candidate]:
        """Drifted candidates within their pool's Drifted budget, then the others within its
        Underutilized budget, each in consolidation order (cheapest to disrupt first). A
        pool with ``consolidateAfter: Never`` is never consolidated: only its drifted nodes
        will go, so only they are ranked (as upstream's)."""
        drifted = [c for c in candidates if c.drifted]
        yield from self._within(drifted, DRIFTED)
        consolidated = [
            c
            for c in candidates
            if not c.drifted and c.pool.disruption.consolidate_after_seconds is not None
        ]
        yield from self._within(consolidated, UNDERUTILIZED)

    def _within(self, candidates: list[Candidate], reason: str) -> Iterator[Candidate]:
        left: dict[str, int] = {}
        for c in candidates:
            pool = c.pool.name
            if pool not in left:
                left[pool] = self._allowed(pool, reason)
            if left[pool] > 0:
                left[pool] -= 1
                yield c

    def _allowed(self, pool_name: str, reason: str) -> int:
        pool = self.state.nodepools[pool_name]
        nodes = [sn for sn in self.state.managed_nodes() if sn.nodepool == pool_name]
        marked = frozenset(self.state.marked_for_deletion)
        return allowed_disruptions(pool, reason, nodes, self.clock.now(), marked)

    def _annotate(self, node_name: str, cost: int | None) -> None:
        wanted = None if cost is None else str(cost)
        for pod in self.state.pods_on(node_name):
            meta = pod["metadata"]
            if not _replicaset_owned(meta):
                continue
            if (meta.get("annotations") or {}).get(wk.POD_DELETION_COST) == wanted:
                continue
            patch = {"metadata": {"annotations": {wk.POD_DELETION_COST: wanted}}}
            try:
                self.kube.patch("Pod", meta["name"], patch, meta.get("namespace"))
            except NotFound:  # gone meanwhile: nothing to rank
                continue


def _replicaset_owned(meta: dict[str, Any]) -> bool:
    return any(
        o.get("kind") == "ReplicaSet" and o.get("controller")
        for o in meta.get("ownerReferences") or ()
    )
