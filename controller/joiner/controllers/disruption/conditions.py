"""NodeClaim disruption conditions: Consolidatable [DISR-5] and Drifted [DISR-6].

Consolidatable turns true ``consolidateAfter`` after the later of initialization and
the node's last pod event (a pod bound to or leaving it); Drifted names the first
reason a NodeClaim no longer matches what its NodePool and node class would launch.

Pod events wake this controller for Consolidatable, many times a minute on a busy
node, while the cloud's drift verdict (AMI, subnets, security groups: a DescribeInstances
call on AWS) changes only with the node class: it is asked again when the class changed
and otherwise at most every ``CLOUD_DRIFT_RECHECK``.
"""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api import conditions as cond
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.api.requirements import Requirements
from joiner.clock import Clock, from_rfc3339, to_rfc3339
from joiner.cloudprovider.types import CloudProvider
from joiner.controllers.runtime import DONE, NOT_SYNCED, Result
from joiner.identity import IdentityCache
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.state.cluster import ClusterState, with_own_status

CLOUD_DRIFT_RECHECK = 300.0
CONFLICT_RETRY = 1.0  # seconds: a safety net, the watch event of the newer version comes first


@dataclass(frozen=True)
class _Verdict:
    basis: tuple  # what it was judged on: the node class's version, the claim's class hash
    at: float
    drift: str | None


class DisruptionConditions:
    name = "nodeclaim.disruption"

    def __init__(
        self, kube: KubeAPI, state: ClusterState, cloud: CloudProvider, clock: Clock
    ) -> None:
        self.kube, self.state, self.cloud, self.clock = kube, state, cloud, clock
        self._cloud_verdicts: dict[str, _Verdict] = {}  # by NodeClaim name
        # When this process saw a NodeClaim drift, kept until the Drifted condition is
        # written: its transition time is that instant however late a retry of a refused
        # or failed write gets through (drift takes candidates in the order they drifted).
        self._drifted_since: dict[str, float] = {}
        self._pools: IdentityCache[tuple[str, Requirements]] = IdentityCache(64)
        self._names: IdentityCache[frozenset[str]] = IdentityCache(64)

    def reconcile(self, key: str) -> Result:
        if not self.state.synced:  # see NOT_SYNCED: it would drop the conditions
            return NOT_SYNCED
        claim = self.state.nodeclaims.get(key)
        if claim is None or claim.metadata.get("deletionTimestamp"):
            self._cloud_verdicts.pop(key, None)
            return DONE
        if not claim.condition_true(nc.INITIALIZED):
            return DONE
        # The state's copy, written back with its resourceVersion (a stale one is refused).
        raw = with_own_status(self.state.objects["NodeClaim"][key])
        status = raw.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        now = self.clock.now()
        last_event = self.state.last_pod_event(claim.status.node_name or claim.name)
        changed = False
        if last_event is not None and status.get("lastPodEventTime") != to_rfc3339(last_event):
            status["lastPodEventTime"] = to_rfc3339(last_event)
            changed = True
        due = self._consolidatable_at(claim, last_event)
        ready = due is not None and now >= due
        if due is None:  # consolidation off: no condition at all, as Karpenter has it
            changed |= cond.remove_condition(conditions, nc.CONSOLIDATABLE)
        else:
            status_value = cond.TRUE if ready else cond.FALSE
            changed |= cond.set_condition(conditions, nc.CONSOLIDATABLE, status_value, now)
        drift = self.drift_reason(claim)
        if drift:
            since = self._drifted_since.setdefault(key, now)
            changed |= cond.set_condition(conditions, nc.DRIFTED, cond.TRUE, since, reason=drift)
        else:
            changed |= cond.remove_condition(conditions, nc.DRIFTED)
        if changed:
            try:
                self.kube.update_status(raw)
            except Conflict:  # the newer version's watch event wakes us again
                return Result(requeue_after=CONFLICT_RETRY)
            except NotFound:
                self._drifted_since.pop(key, None)
                return DONE
        self._drifted_since.pop(key, None)  # written, or already as it should be
        if due is not None and not ready:
            return Result(requeue_after=due - now)
        return DONE

    def _consolidatable_at(self, claim: NodeClaim, last_event: float | None) -> float | None:
        pool = self.state.nodepools.get(claim.nodepool or "")
        if pool is None:
            return None
        after = pool.disruption.consolidate_after_seconds
        if after is None:
            return None
        initialized = cond.get_condition(claim.status.conditions, nc.INITIALIZED)
        start = from_rfc3339(initialized["lastTransitionTime"]) if initialized else 0.0
        return max(start, last_event or 0.0) + after

    def drift_reason(self, claim: NodeClaim) -> str | None:
        pool = self.state.nodepools.get(claim.nodepool or "")
        if pool is None:
            return None
        template_hash, requirements = self._pool_facts(pool)
        annotations = claim.metadata.get("annotations") or {}
        if annotations.get(wk.NODEPOOL_HASH, template_hash) != template_hash:
            return "NodePoolDrifted"
        if not requirements.satisfied_by_labels({**claim.labels, wk.NODEPOOL: pool.name}):
            return "RequirementsDrifted"
        instance_type = claim.labels.get(wk.INSTANCE_TYPE)
        if instance_type and instance_type not in self._type_names(pool):
            return "InstanceTypeNotFound"
        return self._cloud_drift(claim)

    def _pool_facts(self, pool: NodePool) -> tuple[str, Requirements]:
        """The pool's template hash and requirements, worked out once per version of the
        pool (the state replaces the object on every change and never edits it)."""
        return self._pools.remember((pool,), lambda: (pool.template_hash(), pool.requirements()))

    def _type_names(self, pool: NodePool) -> frozenset[str]:
        """The names of the pool's instance types, worked out once per list (providers
        hand out the same list while nothing changed)."""
        types = self.cloud.get_instance_types(pool)
        return self._names.remember((types,), lambda: frozenset(it.name for it in types))

    def _cloud_drift(self, claim: NodeClaim) -> str | None:
        """Node class drift, the provider's to judge (see the module docstring)."""
        nodeclass = self.state.objects["EC2NodeClass"].get(claim.node_class_ref.name) or {}
        basis = (
            (nodeclass.get("metadata") or {}).get("resourceVersion"),
            (claim.metadata.get("annotations") or {}).get(wk.EC2NODECLASS_HASH),
        )
        now = self.clock.now()
        known = self._cloud_verdicts.get(claim.name)
        if known is not None and known.basis == basis and now - known.at < CLOUD_DRIFT_RECHECK:
            return known.drift
        drift = self.cloud.is_drifted(claim)
        self._cloud_verdicts[claim.name] = _Verdict(basis, now, drift)
        return drift
