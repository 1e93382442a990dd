"""The provisioning solver: pending pods + pools + snapshot -> plan [SPEC 3.4-3.10].

Identical pods (same namespace, labels and scheduling-relevant spec) form one
group, placed together: groups without topology constraints, host ports or
volumes are packed in bulk (how many fit is one vectorised division over the
candidate types); the others one pod at a time. Each pod tries existing nodes
(initialized first), then the NodeClaims opened in this solve (fewest pods
first), then a new NodeClaim from the highest-weight pool that can take it. A
group that cannot be fully placed is relaxed one preference at a time; pods
still unplaced are retried while other pods keep being placed. Last, NodeClaims
holding only unconstrained pods are repacked when that is cheaper (``repack``).
Pure: no I/O, no clock.
"""

from __future__ import annotations

import bisect
import functools
import gc
import heapq
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.nodepool import NodePool, by_weight
from joiner.api.requirements import IN, Requirement, Requirements, labels_requirements
from joiner.api.resources import ResourceList
from joiner.cloudprovider.types import InstanceType
from joiner.identity import IdentityCache
from joiner.scheduling import messages as msg
from joiner.scheduling import model as m
from joiner.scheduling.catalog import Dimensions, PoolCatalog, pool_catalog
from joiner.scheduling.model import ClusterSnapshot, ExistingNode, Plan, Pod, Unplaceable
from joiner.scheduling.nodeclaims import Draft, finalize
from joiner.scheduling.occupancy import occupancy
from joiner.scheduling.pods import (
    HostPort,
    host_port_conflict,
    host_ports,
    labels_of,
    namespace_of,
    pod_requests,
)
from joiner.scheduling.preferences import PodConstraints, affinity_term_group, build_constraints
from joiner.scheduling.repack import repack
from joiner.scheduling.taints import EPHEMERAL_TAINT_KEYS, describe, same_taint, untolerated
from joiner.scheduling.topology import (
    AFFINITY,
    ANTI_AFFINITY,
    SPREAD,
    Rejection,
    Topology,
    TopologyGroup,
    node_domain,
)
from joiner.scheduling.volumes import PodVolumes, pod_volumes


def solve(
    pods: Sequence[Pod],
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
    snapshot: ClusterSnapshot | None = None,
) -> Plan:
    """Place ``pods``. ``instance_types`` maps a pool name to its available types; pools
    without an entry launch nothing."""
    with _no_cycle_collection():
        return _Solver(pods, nodepools, instance_types, snapshot or ClusterSnapshot()).run()


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """A solve allocates many short-lived objects, freed by reference counting; the cyclic
    collector's passes over the caller's large, long-lived heap (the controller's state)
    cost up to a third of a solve and find nothing, so they wait until it returns."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- pending pods ------------------------------------------------------------------


class _Group:
    """Identical pending pods."""

    __slots__ = (
        "constraints",
        "every_dimension",
        "first",
        "keys",
        "labels",
        "namespace",
        "needs",
        "nz",
        "placed",
        "ports",
        "requests",
        "selecting",
        "selecting_anti",
        "sort_key",
        "tolerations",
        "vector",
        "volumes",
        "wanted",
    )

    def __init__(
        self, pods: list[tuple[Pod, _PodFacts]], requests: ResourceList, volumes: PodVolumes
    ) -> None:
        first, facts = pods[0]
        self.first = first
        self.keys = [f.key for _, f in pods]
        self.namespace = facts.namespace
        self.labels = facts.labels
        self.tolerations = facts.tolerations
        self.ports = facts.ports
        self.requests = requests
        self.volumes = volumes
        self.vector: np.ndarray = _NO_SHAPE  # this and the next four: set by vectorise
        self.nz: np.ndarray = _NO_SHAPE
        self.needs: np.ndarray = _NO_SHAPE  # vector[nz], as a column
        self.every_dimension = False  # whether nz is every dimension
        self.wanted: tuple[tuple[int, int], ...] = ()  # (dimension, amount), non-zero requests
        self.selecting: list[TopologyGroup] = []
        self.selecting_anti: list[TopologyGroup] = []  # anti-affinity terms that select us
        self.constraints: PodConstraints | None = None
        self.placed = 0  # how many of its pods are placed so far
        # CPU desc, memory desc, then the first pod's creation time and uid [SPEC 3.4]
        self.sort_key = (-requests.get(res.CPU, 0), -requests.get(res.MEMORY, 0), facts.order)

    def vectorise(self, dims: Dimensions) -> None:
        shape = _shape(dims, self.requests)
        self.vector, self.nz, self.needs, self.every_dimension, self.wanted = shape


_NO_SHAPE = np.zeros(0, dtype=np.int64)
_NO_SHAPE.setflags(write=False)

# The request vectors of recent solves, per (dimensions, requests): pods of a workload
# come in few distinct shapes, within a solve and from one solve to the next. Read-only.
_SHAPES_KEPT = 4096
_shapes: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, bool, tuple]] = {}


def _shape(
    dims: Dimensions, requests: ResourceList
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, tuple[tuple[int, int], ...]]:
    """A group's request vector, its non-zero dimensions, their amounts as a column
    (against [dimension, type] rooms), whether they are every dimension, and the exact
    (dimension, amount) pairs."""
    cache_key = (tuple(dims.names), tuple(sorted(requests.items())))
    found = _shapes.get(cache_key)
    if found is None:
        vector = dims.vector(requests)
        nz = np.nonzero(vector)[0]
        needs = vector[nz][:, None]
        for array in (vector, nz, needs):
            array.setflags(write=False)
        # Exact amounts, not the saturated vector's: an existing node's free room is an
        # unbounded integer, and 2**62 would fit on a node reporting 2**63 milli-CPUs.
        wanted = tuple((int(d), requests[dims.names[d]]) for d in nz)
        if len(_shapes) >= _SHAPES_KEPT:
            _shapes.clear()
        found = _shapes[cache_key] = (vector, nz, needs, len(nz) == len(vector), wanted)
    return found


@dataclass(frozen=True, slots=True)
class _PodFacts:
    """What grouping reads from a pending pod, and what its group reads from its first."""

    signature: tuple  # pods with equal signatures schedule identically
    key: str
    order: tuple  # the order of pods within a group [SPEC 3.4]
    namespace: str
    labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]
    ports: frozenset[HostPort]


# Facts of pod objects seen recently, by identity: the controller's state hands the same
# (never edited) pending pods to every scheduling pass until they change, and reading
# them is a good part of a small solve's setup.
_facts: IdentityCache[_PodFacts] = IdentityCache(20_000)


def _facts_of(pod: Pod) -> _PodFacts:
    return _facts.remember((pod,), lambda: _read_facts(pod))


def _read_facts(pod: Pod) -> _PodFacts:
    return _PodFacts(
        _signature(pod),
        m.pod_key(pod),
        _pod_order(pod),
        namespace_of(pod),
        labels_of(pod),
        tuple((pod.get("spec") or {}).get("tolerations") or ()),
        host_ports(pod),
    )


def _signature(pod: Pod) -> tuple:
    """Pods with equal signatures schedule identically."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    if spec.get("volumes") and any(
        v.get("persistentVolumeClaim") or v.get("ephemeral") for v in spec["volumes"]
    ):
        return (m.pod_key(pod),)  # own volumes: never identical to another pod
    containers = tuple(
        repr((c.get("resources"), c.get("ports"), c.get("restartPolicy")))
        for c in (*(spec.get("initContainers") or ()), "|", *(spec.get("containers") or ()))
        if c != "|"
    )
    return (
        meta.get("namespace") or "default",
        repr(meta.get("labels")),
        containers,
        len(spec.get("initContainers") or ()),
        repr(
            [
                spec.get(k)
                for k in (
                    "nodeSelector",
                    "affinity",
                    "tolerations",
                    "topologySpreadConstraints",
                    "overhead",
                    "runtimeClassName",
                    "hostNetwork",
                )
            ]
        ),
    )


def _pod_order(pod: Pod) -> tuple:
    meta = pod.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("uid") or "", m.pod_key(pod))


def _member_order(member: tuple[Pod, _PodFacts]) -> tuple:
    return member[1].order


# --- targets -----------------------------------------------------------------------


class _Node:
    """An existing or in-flight node with what is left on it."""

    __slots__ = (
        "anti_affinity",
        "free",
        "hostname",
        "label_requirements",
        "node",
        "ports",
        "taints",
        "volumes",
    )

    def __init__(
        self,
        node: ExistingNode,
        free: list[int],
        taints: list[dict[str, Any]],
        ports: frozenset[HostPort],
        volumes: dict[str, set[str]],
        anti_affinity: Sequence[tuple[str, Mapping[str, Any]]],
    ) -> None:
        self.node = node
        self.free = free
        self.taints = taints
        self.ports = ports  # grows by rebinding: the frozenset may be shared
        self.volumes = volumes
        self.anti_affinity = anti_affinity  # (namespace, term) of the pods already there
        self.hostname = node.hostname
        self.label_requirements = labels_requirements(node.labels)

    def domains(self, key: str) -> list[str]:
        value = node_domain(self.node, key)
        return [] if value is None else [value]

    def pinned(self, key: str) -> str | None:
        """The node's value of the label ``key`` (as ``Draft.pinned``: None when none)."""
        return self.node.labels.get(key)


@dataclass(slots=True)
class _Fit:
    """Up to ``count`` pods fit; on a draft, placing k of them keeps the candidate types
    ``idx[counts >= k]`` under ``requirements`` (``counts`` None: every one of ``idx``
    has room for ``count``)."""

    count: int
    requirements: Requirements | None = None
    signature: str = ""
    idx: np.ndarray | None = None
    counts: np.ndarray | None = None
    avail: np.ndarray | None = None  # the draft's ``avail`` columns of ``idx``


class _Solver:
    def __init__(
        self,
        pods: Sequence[Pod],
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[InstanceType]],
        snapshot: ClusterSnapshot,
    ) -> None:
        self.snapshot = snapshot
        runtime = snapshot.runtime_classes
        self.daemonsets = [(d, pod_requests(d.pod_template, runtime)) for d in snapshot.daemonsets]
        self.groups, self.plan = self._group(pods)
        self.dims = self._dimensions()
        for group in self.groups:
            group.vectorise(self.dims)
        self.pools = by_weight(
            pool_catalog(p, instance_types[p.name], self.dims, self.daemonsets)
            for p in nodepools
            if p.name in instance_types
        )
        live = [n for n in snapshot.nodes if not n.marked_for_deletion]
        live.sort(key=lambda n: not n.initialized)  # initialized first, stable otherwise
        self.nodes = [self._node_target(n) for n in live]
        # not a bound method: the topology holding the solver would make a reference
        # cycle, and the whole solve's objects would wait for the cyclic collector
        sources = functools.partial(_domain_sources, self.pools, self.nodes)
        self.topology = Topology(sources, live, bool(self.pools))
        self._record_existing_anti_affinity()
        self.groups = [g for g in self.groups if self._constrain(g)]
        for group in self.groups:
            group.selecting = self.topology.selecting(group.namespace, group.labels)
            group.selecting_anti = [g for g in group.selecting if g.kind == ANTI_AFFINITY]
        self._affine = self._affinity_owners()
        self.drafts: list[Draft] = []
        self._claim_numbers = itertools.count(1)
        self.placed = 0
        self._compatible: dict[tuple[str, str], str | None] = {}
        self._node_reasons: dict[int, Rejection] = {}  # last refusal per node, this group
        self._merged: dict[tuple[str, str], tuple[Requirements, str]] = {}
        self._pool_base: dict[tuple, Rejection | tuple[Requirements, str, np.ndarray]] = {}
        self._usage = (
            dict(snapshot.pool_usage) if snapshot.pool_usage is not None else self._pool_usage()
        )
        # per pool with limits: its open NodeClaims, each reserving the largest capacity
        # of its candidate types [SPEC 3.9]
        self._limited: dict[str, list[Draft]] = {}

    # --- setup ----------------------------------------------------------------------

    def _group(self, pods: Sequence[Pod]) -> tuple[list[_Group], Plan]:
        plan = Plan()
        by_signature: dict[tuple, list[tuple[Pod, _PodFacts]]] = {}
        for pod in pods:
            facts = _facts_of(pod)
            by_signature.setdefault(facts.signature, []).append((pod, facts))
        groups = []
        for members in by_signature.values():
            members.sort(key=_member_order)
            first = members[0][0]
            try:
                volumes = pod_volumes(first, self.snapshot.volumes)
                requests = pod_requests(first, self.snapshot.runtime_classes)
                group = _Group(members, requests, volumes)
            except (ValueError, TypeError, KeyError) as error:
                _refuse(
                    plan, [p for p, _ in members], m.INVALID_SPEC, f"resources or ports: {error}"
                )
                continue
            if volumes.error:
                _refuse(plan, [p for p, _ in members], m.VOLUME_ZONES, volumes.error)
                continue
            groups.append(group)
        groups.sort(key=lambda g: g.sort_key)
        return groups, plan

    def _constrain(self, group: _Group) -> bool:
        """Builds the group's constraints; a malformed spec makes its pods unplaceable."""
        try:
            group.constraints = build_constraints(
                group.first, group.volumes.requirements, self.topology
            )
        except (ValueError, TypeError, KeyError) as error:
            message = f"nodeSelector, affinity or topologySpreadConstraints: {error}"
            for key in group.keys:
                self.plan.unplaceable[key] = Unplaceable(key, m.INVALID_SPEC, message)
            return False
        return True

    def _dimensions(self) -> Dimensions:
        names = {res.CPU: None, res.MEMORY: None, res.PODS: None}
        for group in self.groups:
            names.update(dict.fromkeys(group.requests))
        for _, requests in self.daemonsets:
            names.update(dict.fromkeys(requests))
        return Dimensions(list(names))

    def _node_target(self, node: ExistingNode) -> _Node:
        snapshot = self.snapshot
        taken = occupancy(
            node.pods, snapshot.runtime_classes, snapshot.volumes, slot=("solver", node.name)
        )
        used = res.add(taken.requests, self._pending_daemons(node, taken.daemonsets))
        free = [node.allocatable.get(name, 0) - used.get(name, 0) for name in self.dims.names]
        taints = list(node.taints)
        if not node.initialized:
            ignored = [*node.startup_taints]
            taints = [
                t
                for t in taints
                if t.get("key") not in EPHEMERAL_TAINT_KEYS
                and not any(same_taint(t, s) for s in ignored)
            ]
        volumes = {driver: set(ids) for driver, ids in taken.volumes.items()}
        return _Node(node, free, taints, taken.ports, volumes, taken.anti_affinity)

    def _pending_daemons(self, node: ExistingNode, running: frozenset[str]) -> ResourceList:
        """Requests of daemonsets that belong on the node but have no pod there yet."""
        total: ResourceList = {}
        for daemonset, requests in self.daemonsets:
            spec = daemonset.pod_template.get("spec") or {}
            if daemonset.name in running:
                continue
            if untolerated(spec.get("tolerations") or (), node.taints, False) is not None:
                continue
            if not Requirements.for_pod(daemonset.pod_template).satisfied_by_labels(node.labels):
                continue
            total = res.add(total, requests)
        return total

    def _record_existing_anti_affinity(self) -> None:
        for target in self.nodes:
            for namespace, term in target.anti_affinity:
                group = affinity_term_group(ANTI_AFFINITY, term, namespace, self.topology)
                domain = node_domain(target.node, group.key)
                if domain is not None:
                    self.topology.record_owner(group, [domain], 1)

    def _pool_usage(self) -> dict[str, ResourceList]:
        usage: dict[str, ResourceList] = {}
        for target in self.nodes:
            node = target.node
            if node.nodepool is not None:
                used = res.add(node.capacity or node.allocatable, {res.NODES: 1000})
                usage[node.nodepool] = res.add(usage.get(node.nodepool, {}), used)
        return usage

    # --- the loop -------------------------------------------------------------------

    def run(self) -> Plan:
        failed: list[tuple[_Group, list[int], Rejection]] = []
        for group in self.groups:
            outcome = self._schedule(group, list(range(len(group.keys))))
            if outcome is not None:
                failed.append((group, *outcome))
        while failed:
            before = self.placed
            retry, failed = failed, []
            for group, members, _ in retry:
                outcome = self._schedule(group, members)
                if outcome is not None:
                    failed.append((group, *outcome))
            if self.placed == before:
                break
        for group, members, rejection in failed:
            for i in members:
                key = group.keys[i]
                self.plan.unplaceable[key] = Unplaceable(
                    key, rejection.constraint, rejection.message
                )
        self._repack_free_drafts()
        # each reservation's free slots, shared out among the NodeClaims in plan order
        slots = {r: n for pool in self.pools for r, n in pool.reservation_slots.items()}
        self.plan.nodeclaims = [finalize(d, slots) for d in self.drafts]
        return self.plan

    def _repack_free_drafts(self) -> None:
        """Per pool, pack the NodeClaims that hold only free pods again when that is
        cheaper (see ``repack``). Pools with limits keep their packing."""
        owner = {key: g for g in self.groups for key in g.keys}
        by_pool: dict[str, list[Draft]] = {}
        for draft in self.drafts:
            pool = draft.pool
            if pool.limits or draft.sig != self._pool_signature(pool):
                continue
            if all(_is_free(owner[key]) for key in draft.pods):
                by_pool.setdefault(pool.name, []).append(draft)
        for drafts in by_pool.values():
            pool = drafts[0].pool
            candidates = np.nonzero(
                pool.compatible_types(pool.requirements, self._pool_signature(pool))
            )[0]
            pods = [(owner[key].vector, key) for d in drafts for key in d.pods]
            packed = repack(pool, candidates, pods, lambda p=pool: self._hostname(p))
            if packed and sum(d.price() for d in packed) < sum(d.price() for d in drafts) - 1e-9:
                replaced = {id(d) for d in drafts}
                self.drafts = [d for d in self.drafts if id(d) not in replaced] + packed

    def _pool_signature(self, pool: PoolCatalog) -> str:
        return repr(pool.requirements.to_dicts())

    def _hostname(self, pool: PoolCatalog) -> str:
        return f"{pool.name}-nodeclaim-{next(self._claim_numbers)}"

    def _schedule(self, group: _Group, members: list[int]) -> tuple[list[int], Rejection] | None:
        """Place what fits, relaxing preferences while pods remain. Every attempt starts
        from the pods' full preferences, as Karpenter's does: a retry after other pods
        were placed may meet preferences (pod affinity) that failed before."""
        constraints = group.constraints
        assert constraints is not None
        while True:
            members, rejection = self._place(group, constraints, members)
            if not members:
                return None
            relaxed = constraints.relax()
            if relaxed is None:
                assert rejection is not None
                return members, rejection
            constraints = relaxed[0]

    def _place(
        self, group: _Group, constraints: PodConstraints, members: list[int]
    ) -> tuple[list[int], Rejection | None]:
        self._node_reasons = {}
        if constraints.topology or group.ports or group.volumes.usage:
            return self._place_each(group, constraints, members)
        remaining = self._fill_nodes(group, constraints, members)
        remaining = self._fill_drafts(group, constraints, remaining)
        while remaining:
            made = self._new_draft(group, constraints, len(remaining))
            if isinstance(made, Rejection):
                return remaining, made
            draft, fit = made
            self._commit(draft, group, constraints, fit, remaining[: fit.count])
            remaining = remaining[fit.count :]
        return [], None

    def _fill_nodes(
        self, group: _Group, constraints: PodConstraints, members: list[int]
    ) -> list[int]:
        """Existing nodes in order, each taking as many pods as fit (first fit)."""
        for node in self.nodes:
            if not members:
                break
            fit = self._check_node(node, group, constraints, len(members))
            if isinstance(fit, _Fit):
                self._commit(node, group, constraints, fit, members[: fit.count])
                members = members[fit.count :]
        return members

    def _fill_drafts(
        self, group: _Group, constraints: PodConstraints, members: list[int]
    ) -> list[int]:
        """Each pod to the open NodeClaim with the fewest pods that has room, for the whole
        group at once; among claims with as few pods, the one whose price the pod raises
        least (over what the group's pods already there raised it), then the one with room
        for the most more of them (the fuller claims keep their last room for the smaller
        pods that follow), then the older claim. A claim is checked only when it is among
        the emptiest left."""
        # heap of (pods, price rise, -room, claim); a claim not checked yet has the least
        # rise there is (0) and more room than any, so it is checked before any it ties with
        heap: list[tuple[int, float, int, int]] = [
            (d.count, 0.0, -_UNCHECKED, i) for i, d in enumerate(self.drafts)
        ]
        heapq.heapify(heap)
        fits: dict[int, _Fit] = {}
        rises: dict[int, Any] = {}
        taken: dict[int, list[int]] = {}
        placed = 0
        alone = len(self.drafts) == 1  # no other claim to rank it against by price rise
        for member in members:
            while heap and heap[0][2] == -_UNCHECKED:
                pods, _, _, i = heapq.heappop(heap)
                fit = self._check_draft(self.drafts[i], group, constraints, _UNCHECKED - 1)
                if isinstance(fit, _Fit):
                    fits[i] = fit
                    rises[i] = _no_rise if alone else _price_rise(self.drafts[i], fit, group.wanted)
                    heapq.heappush(heap, (pods, rises[i](1), -fit.count, i))
            if not heap:
                break
            pods, _, less_room, i = heapq.heappop(heap)
            room = -less_room
            taken.setdefault(i, []).append(member)
            placed += 1
            if room > 1:
                rise = _next_rise(rises[i], len(taken[i]))
                heapq.heappush(heap, (pods + 1, rise, 1 - room, i))
        for i in sorted(taken):
            self._commit(self.drafts[i], group, constraints, fits[i], taken[i])
        return members[placed:]

    def _place_each(
        self, group: _Group, constraints: PodConstraints, members: list[int]
    ) -> tuple[list[int], Rejection | None]:
        """One pod at a time: topology, host ports and volumes change with every pod."""
        nodes: list[_Node] = list(self.nodes)
        # by pod count, older claims first on ties; kept so as each pod is placed
        drafts: list[Draft] = sorted(self.drafts, key=_pod_count)
        for position, member in enumerate(members):
            allowed = self._allowed_domains(group, constraints)
            placed, dead = self._place_one(group, constraints, member, nodes, drafts, allowed)
            if dead:
                nodes = [n for n in nodes if id(n) not in dead]
                drafts = [d for d in drafts if id(d) not in dead]
            if isinstance(placed, Draft):
                _one_more(drafts, placed)
            if placed is not None:
                continue
            made = self._new_draft(group, constraints, 1)
            if isinstance(made, Rejection):
                return members[position:], made
            draft, fit = made
            self._commit(draft, group, constraints, fit, [member])
            drafts.insert(bisect.bisect_right(drafts, draft.count, key=_pod_count), draft)
        return [], None

    def _place_one(
        self,
        group: _Group,
        constraints: PodConstraints,
        member: int,
        nodes: list[_Node],
        drafts: list[Draft],
        allowed: Mapping[str, frozenset[str]],
    ) -> tuple[_Node | Draft | None, set[int]]:
        """Place on the first of ``nodes``, then ``drafts``, that fits or, when that is a
        NodeClaim, on the one of its peers ``_least_rise`` picks; returns that target
        (None: none fits) and the targets that can never take another pod of this group."""
        dead: set[int] = set()
        closed = _hostname_closers(group, constraints)
        for node in nodes:
            if _passed_over(node, allowed, closed, dead):
                continue
            fit = self._check_node(node, group, constraints, 1)
            if isinstance(fit, _Fit):
                self._commit(node, group, constraints, fit, [member])
                return node, dead
            if fit.permanent:
                dead.add(id(node))
        for position, draft in enumerate(drafts):
            if _passed_over(draft, allowed, closed, dead):
                continue
            fit = self._check_draft(draft, group, constraints, 1)
            if isinstance(fit, _Fit):
                later = itertools.islice(drafts, position + 1, None)  # no copy
                peers = _open_peers(draft, later, group, allowed, closed, dead)
                draft, fit = self._least_rise(group, constraints, draft, fit, peers)
                self._commit(draft, group, constraints, fit, [member])
                return draft, dead
            if fit.permanent:
                dead.add(id(draft))
        return None, dead

    def _least_rise(
        self,
        group: _Group,
        constraints: PodConstraints,
        first: Draft,
        fit: _Fit,
        peers: Iterable[Draft],
    ) -> tuple[Draft, _Fit]:
        """Of ``first`` (the first claim the pod fits) and its ``peers`` (from
        ``_open_peers``), the one whose price one pod raises least, the first on ties, as
        ``_fill_drafts`` ranks claims for a group placed at once. Upstream takes the first
        claim its sort by pod count leaves in place, which its earlier choices by chance
        decide: a claim the pod does not make dearer is its cheapest outcome."""
        best, best_fit, least = first, fit, _price_rise(first, fit, group.wanted)(1)
        for peer in peers:
            if least <= 0:  # a pod never lowers a claim's price: no peer can do better
                break
            peer_fit = self._check_draft(peer, group, constraints, 1)
            if not isinstance(peer_fit, _Fit):
                continue
            rise = _price_rise(peer, peer_fit, group.wanted)(1)
            if rise < least:
                best, best_fit, least = peer, peer_fit, rise
        return best, best_fit

    def _allowed_domains(
        self, group: _Group, constraints: PodConstraints
    ) -> dict[str, frozenset[str]]:
        """For each non-hostname key of the pod's own topology, the known domains one more
        pod may go to now (exact for targets settled in one domain)."""
        allowed: dict[str, frozenset[str]] = {}
        for tg in constraints.topology:
            if tg.key == wk.HOSTNAME:
                continue
            eligible = (
                self.topology.eligible(
                    tg,
                    constraints.strict_requirements,
                    constraints.strict_signature,
                    group.tolerations,
                )
                if tg.kind == SPREAD
                else frozenset()
            )
            universe = sorted(self.topology.universe(tg.key))
            result = self.topology.allowed(
                tg, universe, tg.selects(group.namespace, group.labels), eligible
            )
            domains = frozenset() if isinstance(result, Rejection) else frozenset(result)
            allowed[tg.key] = allowed[tg.key] & domains if tg.key in allowed else domains
        return allowed

    # --- checks ---------------------------------------------------------------------

    def _check_node(
        self, target: _Node, group: _Group, constraints: PodConstraints, limit: int
    ) -> _Fit | Rejection:
        fit = self._node_fit(target, group, constraints, limit)
        if isinstance(fit, Rejection):
            self._node_reasons[id(target)] = fit
        return fit

    def _node_fit(
        self, target: _Node, group: _Group, constraints: PodConstraints, limit: int
    ) -> _Fit | Rejection:
        free = target.free
        short = [self.dims.names[d] for d, amount in group.wanted if amount > free[d]]
        if short:
            return Rejection(m.RESOURCES, f"node {target.node.name} lacks {', '.join(short)}", True)
        taint = untolerated(group.tolerations, target.taints, constraints.honor_prefer_no_schedule)
        if taint is not None:
            return Rejection(m.TAINTS, f"untolerated taint {describe(taint)}", True)
        labels = target.node.labels
        if not constraints.requirements.satisfied_by_labels(labels):
            volume_only = constraints.node_requirements.satisfied_by_labels(labels)
            return Rejection(
                m.VOLUME_ZONES if volume_only else m.NODE_AFFINITY,
                f"node {target.node.name} does not match",
                True,
            )
        conflict = host_port_conflict(group.ports, target.ports)
        if conflict is not None:
            return Rejection(m.HOST_PORTS, f"host port {conflict[2]}/{conflict[1]} in use", True)
        rejection = self._volume_limits(target, group)
        if rejection is not None:
            return rejection
        if constraints.topology or group.selecting_anti:
            domains = self._topology(group, constraints, target.domains)
            if isinstance(domains, Rejection):
                return domains
        count = min(free[d] // amount for d, amount in group.wanted)
        return _Fit(min(count, limit))

    def _volume_limits(self, target: _Node, group: _Group) -> Rejection | None:
        for driver, ids in group.volumes.usage.items():
            limit = target.node.volume_limits.get(driver)
            if limit is not None and len(target.volumes.get(driver, set()) | ids) > limit:
                return Rejection(
                    m.VOLUME_LIMITS,
                    f"node {target.node.name} has no room for {driver} volumes",
                    True,
                )
        return None

    def _check_draft(
        self, draft: Draft, group: _Group, constraints: PodConstraints, limit: int
    ) -> _Fit | Rejection:
        room = draft.room
        if any(amount > room[d] for d, amount in group.wanted):
            return Rejection(m.RESOURCES, msg.NO_ROOM, True)
        # The NodeClaim's own requirements judge the pod's, not its pool's: an earlier pod
        # may have defined a custom label the pool does not (as upstream's NodeClaim does).
        taint = untolerated(
            group.tolerations, draft.pool.taints, constraints.honor_prefer_no_schedule
        )
        if taint is not None:
            return Rejection(m.TAINTS, msg.untolerated_taint(taint), True)
        if group.ports and host_port_conflict(group.ports, draft.ports) is not None:
            return Rejection(m.HOST_PORTS, "host port already used on this node", True)
        requirements, signature = draft.requirements, draft.sig
        if constraints.requirements:
            why = self._compatible_with(draft, constraints)
            if why is not None:
                return Rejection(m.NODE_AFFINITY, why, True)
            requirements, signature = self._merge(draft, constraints)
        if constraints.topology or group.selecting_anti:
            domains = self._topology(group, constraints, _draft_domains(draft, requirements))
            if isinstance(domains, Rejection):
                return domains
            joining = functools.partial(self._joining, group, constraints)
            prices = _domain_prices(draft, group.vector, joining)
            pinned = _pin(requirements, domains, constraints, prices)
            if pinned is not requirements:
                requirements, signature = pinned, repr(pinned.to_dicts())
        idx, avail = draft.idx, draft.avail
        if signature != draft.sig:
            compatible = draft.pool.compatible_types(requirements, signature)[idx]
            if not compatible.all():  # else the same candidates: no copies
                idx, avail = idx[compatible], avail.compress(compatible, axis=1)
            if not len(idx):
                return Rejection(m.NO_OFFERING, msg.NO_OFFERING, False)
        return self._fit_types(draft, group, limit, requirements, signature, idx, avail)

    def _fit_types(
        self,
        draft: Draft,
        group: _Group,
        limit: int,
        requirements: Requirements,
        signature: str,
        idx: np.ndarray,
        avail: np.ndarray,
    ) -> _Fit | Rejection:
        pool = draft.pool
        if limit == 1 and idx is draft.idx and not pool.min_values:
            least = draft.least
            if all(amount <= least[d] for d, amount in group.wanted):  # every candidate
                return _Fit(1, requirements, signature, idx, None, avail)
        room = avail if group.every_dimension else avail[group.nz]
        if limit == 1:  # whether one pod fits is enough (as counts, True is 1)
            counts = (room >= group.needs).all(axis=0)
        else:
            counts = (room // group.needs).min(axis=0)
        best = int(counts.max()) if len(counts) else 0
        if best <= 0:
            return Rejection(m.RESOURCES, msg.NO_ROOM, True)
        count = min(best, limit)
        if pool.min_values:
            count = _most_within_min_values(pool, idx, counts, count)
            if not count:
                key, detail = pool.min_values_shortfall(idx[counts >= 1]) or ("", "")
                return Rejection(
                    m.MIN_VALUES, msg.detailed(msg.min_values_not_met([key]), detail), True
                )
        return _Fit(count, requirements, signature, idx, counts, avail)

    def _affinity_owners(self) -> dict[int, list[_Group]]:
        """Per pod affinity (by id): the groups that have it, preferred or required."""
        owners: dict[int, list[_Group]] = {}
        for group in self.groups:
            assert group.constraints is not None
            for tg in group.constraints.topology:
                if tg.kind == AFFINITY:
                    owners.setdefault(id(tg), []).append(group)
        return owners

    def _joining(self, group: _Group, constraints: PodConstraints) -> np.ndarray:
        """The requests of the pods that will follow this one into the domain a NodeClaim
        is pinned to: when it bootstraps a pod affinity to itself, every unplaced pod with
        that affinity (all must join the domain, so it is chosen by the capacity they need
        together); else its own."""
        for tg in constraints.topology:
            if (
                tg.kind == AFFINITY
                and not any(tg.counts.values())
                and tg.selects(group.namespace, group.labels)
            ):
                return sum(
                    (len(g.keys) - g.placed) * g.vector for g in self._affine.get(id(tg), ())
                )
        return group.vector

    def _compatible_with(self, draft: Draft, constraints: PodConstraints) -> str | None:
        cache_key = (draft.sig, constraints.signature)
        if cache_key not in self._compatible:
            self._compatible[cache_key] = draft.requirements.compatible(constraints.requirements)
        return self._compatible[cache_key]

    def _merge(self, draft: Draft, constraints: PodConstraints) -> tuple[Requirements, str]:
        cache_key = (draft.sig, constraints.signature)
        found = self._merged.get(cache_key)
        if found is None:
            merged = draft.requirements.intersection(constraints.requirements)
            found = self._merged[cache_key] = (merged, repr(merged.to_dicts()))
        return found

    def _topology(
        self,
        group: _Group,
        constraints: PodConstraints,
        domains_of: Any,
    ) -> dict[str, list[str]] | Rejection:
        """Allowed domains per topology key for one more pod of ``group`` on a target
        whose possible domains are ``domains_of(key)``."""
        allowed: dict[str, list[str]] = {}
        topology = self.topology
        for tg in constraints.topology:
            candidates = allowed[tg.key] if tg.key in allowed else domains_of(tg.key)
            if not candidates:
                reason = msg.unsatisfiable_topology(tg.constraint, tg.key)
                return Rejection(tg.constraint, msg.detailed(reason, "no domain"), True)
            eligible = (
                topology.eligible(
                    tg,
                    constraints.strict_requirements,
                    constraints.strict_signature,
                    group.tolerations,
                )
                if tg.kind == SPREAD
                else frozenset()
            )
            result = topology.allowed(
                tg,
                candidates,
                tg.selects(group.namespace, group.labels),
                eligible,
            )
            if isinstance(result, Rejection):
                return result
            allowed[tg.key] = result
        for key in topology.anti_affinity_keys(group.selecting_anti):
            candidates = allowed[key] if key in allowed else domains_of(key)
            result = topology.blocked_by_owners(group.selecting_anti, key, candidates)
            if candidates and not result:
                reason = msg.unsatisfiable_topology(m.POD_ANTI_AFFINITY, key)
                detail = "a placed pod's anti-affinity excludes these domains"
                return Rejection(m.POD_ANTI_AFFINITY, msg.detailed(reason, detail), True)
            if candidates:
                allowed[key] = result
        return allowed

    # --- new NodeClaims ---------------------------------------------------------------

    def _base(
        self, pool: PoolCatalog, group: _Group, constraints: PodConstraints
    ) -> Rejection | tuple[Requirements, str, np.ndarray]:
        """Whether the pool can take the group at all, and its compatible types."""
        taint = untolerated(group.tolerations, pool.taints, constraints.honor_prefer_no_schedule)
        if taint is not None:
            return Rejection(m.TAINTS, msg.untolerated_taint(taint), True)
        volumes = constraints.volume_requirements
        cache_key = (pool.name, constraints.signature, repr(volumes.to_dicts()) if volumes else "")
        found = self._pool_base.get(cache_key)
        if found is None:
            found = self._pool_base[cache_key] = self._pool_types(pool, constraints)
        return found

    def _pool_types(
        self, pool: PoolCatalog, constraints: PodConstraints
    ) -> Rejection | tuple[Requirements, str, np.ndarray]:
        conflict = _volume_conflict(constraints)
        if conflict is not None:
            return Rejection(m.VOLUME_ZONES, conflict, True)
        why = pool.requirements.compatible(constraints.requirements)
        if why is not None:
            volume_only = pool.requirements.compatible(constraints.node_requirements) is None
            return Rejection(
                m.VOLUME_ZONES if volume_only else m.NODE_AFFINITY, msg.incompatible(why), True
            )
        requirements = pool.requirements.intersection(constraints.requirements)
        signature = repr(requirements.to_dicts())
        mask = pool.compatible_types(requirements, signature)
        if not mask.any():
            if not pool.compatible_types(pool.requirements, self._pool_signature(pool)).any():
                return Rejection(m.NO_INSTANCE_TYPE, msg.POOL_FILTERED, True)
            if not pool.label_compatible(requirements).any():
                return Rejection(m.NO_INSTANCE_TYPE, msg.NO_INSTANCE_TYPE, True)
            return Rejection(m.NO_OFFERING, msg.NO_OFFERING, True)
        return requirements, signature, np.nonzero(mask)[0]

    def _new_draft(
        self, group: _Group, constraints: PodConstraints, limit: int
    ) -> tuple[Draft, _Fit] | Rejection:
        if not self.pools:
            return self._no_pool_rejection()
        reasons: list[tuple[str, Rejection]] = []
        for pool in self.pools:
            made = self._try_pool(pool, group, constraints, limit)
            if isinstance(made, Rejection):
                reasons.append((pool.name, made))
                continue
            self.drafts.append(made[0])
            if pool.limits:
                self._limited.setdefault(pool.name, []).append(made[0])
            return made
        return Rejection(
            _main_constraint([r for _, r in reasons]),
            msg.per_nodepool([(name, r.message) for name, r in reasons]),
            True,
        )

    def _no_pool_rejection(self) -> Rejection:
        """Without pools, why the nodes refused (kube-scheduler style counts)."""
        if not self._node_reasons:
            return Rejection(m.NO_NODEPOOL, "no nodepool can launch nodes", True)
        counts = Counter(r.constraint for r in self._node_reasons.values())
        summary = ", ".join(f"{n} {constraint}" for constraint, n in counts.most_common())
        message = f"0/{len(self.nodes)} nodes are available: {summary}"
        return Rejection(counts.most_common(1)[0][0], message, True)

    def _try_pool(
        self, pool: PoolCatalog, group: _Group, constraints: PodConstraints, limit: int
    ) -> tuple[Draft, _Fit] | Rejection:
        base = self._base(pool, group, constraints)
        if isinstance(base, Rejection):
            return base
        requirements, signature, unlimited = base
        idx = unlimited
        if pool.limits:
            idx = self._within_limits(pool, unlimited)
            if isinstance(idx, Rejection):
                return idx
        hostname = self._hostname(pool)
        free = pool.free_for(requirements, signature)
        draft = Draft(pool, hostname, requirements, signature, idx, free)
        fit = self._check_draft(draft, group, constraints, limit)
        if isinstance(fit, Rejection) and fit.constraint == m.RESOURCES:
            return self._resources_rejection(pool, group, constraints, limit, draft, unlimited)
        if isinstance(fit, Rejection):
            return fit
        return draft, fit

    def _resources_rejection(
        self,
        pool: PoolCatalog,
        group: _Group,
        constraints: PodConstraints,
        limit: int,
        draft: Draft,
        unlimited: np.ndarray,
    ) -> Rejection:
        """No type has room: say whether the pool's limits are what ruled the big ones out."""
        wanted = res.format_resource_list(
            res.add(group.requests, pool.dims.to_list(pool.daemon_overhead))
        )
        needs = ", ".join(f"{k}={v}" for k, v in wanted.items()) + " (pod + daemonsets)"
        if len(unlimited) > len(draft.idx):
            without_limits = Draft(
                pool,
                draft.hostname,
                draft.requirements,
                draft.sig,
                unlimited,
                draft.free,
            )
            if not isinstance(
                self._check_draft(without_limits, group, constraints, limit), Rejection
            ):
                names = ", ".join(pool.limit_dims.names)
                detail = f"limits on {names} leave no room for a node with {needs}"
                return Rejection(m.POOL_LIMITS, msg.detailed(msg.NO_ROOM, detail), True)
        return Rejection(m.RESOURCES, msg.detailed(msg.NO_ROOM, f"requests {needs}"), True)

    def _within_limits(self, pool: PoolCatalog, idx: np.ndarray) -> np.ndarray | Rejection:
        limits = pool.limits
        used = self._usage.get(pool.name, {})
        dims = pool.limit_dims.names
        drafts = self._limited.get(pool.name, ())
        if res.NODES in limits and limits[res.NODES] - used.get(res.NODES, 0) < 1000 * (
            len(drafts) + 1
        ):
            detail = f"limit nodes={limits[res.NODES] // 1000} reached"
            return Rejection(
                m.POOL_LIMITS, msg.detailed(msg.exceeds_limits(pool.name), detail), True
            )
        largest = pool.largest_capacity.tolist()
        if all(  # the usual case: room for one more of the largest, whatever is reserved
            limits[name] - used.get(name, 0) - (len(drafts) + 1) * most >= 0
            for name, most in zip(dims, largest, strict=True)
        ):
            return idx
        reserved = [0] * len(dims)
        for draft in drafts:
            taking = draft.reservation().tolist()
            reserved = [r + t for r, t in zip(reserved, taking, strict=True)]
        remaining = {  # Python integers: exact however large the limits
            name: limits[name] - used.get(name, 0) - taken
            for name, taken in zip(dims, reserved, strict=True)
        }
        room = pool.limit_dims.vector(remaining)
        kept = idx[(pool.capacity[idx] <= room).all(axis=1)]
        if not len(kept):
            detail = f"limits on {', '.join(dims)} leave no room for a node"
            return Rejection(
                m.POOL_LIMITS, msg.detailed(msg.exceeds_limits(pool.name), detail), True
            )
        return kept

    # --- commit ---------------------------------------------------------------------

    def _commit(
        self,
        target: _Node | Draft,
        group: _Group,
        constraints: PodConstraints,
        fit: _Fit,
        members: list[int],
    ) -> None:
        keys = [group.keys[i] for i in members]
        count = len(keys)
        if isinstance(target, Draft):
            assert fit.requirements is not None and fit.idx is not None
            assert fit.avail is not None
            idx, avail = fit.idx, fit.avail
            # every candidate stays (no mask, no copies) when each has room for them all
            if fit.counts is not None and count > _held_everywhere(target, group.wanted):
                keep = fit.counts >= count
                if not keep.all():
                    idx, avail = idx[keep], avail.compress(keep, axis=1)
            target.add(fit.requirements, fit.signature, idx, group.vector, keys, avail)
            target.ports |= group.ports
            requirements, taints = target.requirements, target.pool.taints
        else:
            for d, amount in group.wanted:
                target.free[d] -= amount * count
            target.ports |= group.ports
            for driver, ids in group.volumes.usage.items():
                target.volumes.setdefault(driver, set()).update(ids)
            for key in keys:
                self.plan.existing[key] = target.node.name
            requirements, taints = target.label_requirements, target.taints
        group.placed += count
        self.topology.record(group.selecting, target.domains, count, requirements, taints)
        for tg in constraints.required_topology:
            if tg.kind == ANTI_AFFINITY:
                self.topology.record_owner(tg, target.domains(tg.key), count)
        self.placed += count


_pod_count = operator.attrgetter("count")


def _one_more(drafts: list[Draft], draft: Draft) -> None:
    """Keep ``drafts`` as a stable sort by pod count would leave it after ``draft`` (in
    it) took one more pod: first among those with as many pods. Sorting again at every
    pod was a tenth of the diverse benchmark's solve from 5,000 pods."""
    before = draft.count - 1
    # the claims with ``before`` pods still start where they did: the one that left
    # them only grew, so the search for that start is not misled by it
    start = bisect.bisect_left(drafts, before, key=_pod_count)
    del drafts[drafts.index(draft, start)]
    drafts.insert(bisect.bisect_right(drafts, before, key=_pod_count), draft)


_UNCHECKED = 2**62  # room of a claim not checked yet: more than any claim has


def _domain_sources(
    pools: Sequence[PoolCatalog], nodes: Sequence[_Node], key: str
) -> dict[str, list[list[dict[str, Any]]]]:
    """Per domain of ``key``: the taints of each pool and node that offers it."""
    sources: dict[str, list[list[dict[str, Any]]]] = {}
    for pool in pools:
        for domain in pool.domains(key):
            sources.setdefault(domain, []).append(pool.taints)
    for target in nodes:
        for domain in target.domains(key):
            sources.setdefault(domain, []).append(target.node.taints)
    return sources


def _most_within_min_values(
    pool: PoolCatalog, idx: np.ndarray, counts: np.ndarray, count: int
) -> int:
    """The most pods, up to ``count``, that leave candidate types (those with room for
    that many) satisfying the pool's minValues; 0 when not even one does. Fewer pods
    keep more types, so the rest open another NodeClaim, as Karpenter does."""
    smaller = sorted({int(c) for c in counts if 0 < c < count}, reverse=True)
    for k in (count, *smaller):
        if pool.min_values_shortfall(idx[counts >= k]) is None:
            return k
    return 0


def _is_free(group: _Group) -> bool:
    """Whether moving the group's pods between NodeClaims of its pool changes nothing
    but cost: no topology (own or counted), node requirements, host ports or volumes."""
    constraints = group.constraints
    assert constraints is not None
    return not (
        constraints.topology
        or constraints.requirements
        or group.ports
        or group.volumes.usage
        or group.volumes.requirements
        or group.selecting
    )


# Reasons that say the pod does not target the pool at all: another pool's reason is the
# more telling constraint of a pod no pool can take.
_NOT_TARGETED = frozenset({m.TAINTS, m.NODE_AFFINITY})


def _main_constraint(rejections: Sequence[Rejection]) -> str:
    """The constraint a pod refused by every pool is reported under: that of the first
    pool it targets (tolerates and matches), else the first pool's."""
    targeted = [r for r in rejections if r.constraint not in _NOT_TARGETED]
    return (targeted or rejections)[0].constraint


def _refuse(plan: Plan, pods: Sequence[Pod], constraint: str, message: str) -> None:
    for pod in pods:
        key = m.pod_key(pod)
        plan.unplaceable[key] = Unplaceable(key, constraint, message)


def _volume_conflict(constraints: PodConstraints) -> str | None:
    """Why the volumes' topology cannot meet the pod's own node requirements, if so."""
    for key, requirement in constraints.volume_requirements.items():
        merged = constraints.requirements.get(key)
        if merged is not None and merged.is_unsatisfiable() and not requirement.is_unsatisfiable():
            return f"volume topology on {key} conflicts with the pod's node affinity"
    return None


def _hostname_closers(group: _Group, constraints: PodConstraints) -> list[Mapping[str, int]]:
    """Per-hostname counts that refuse one more pod of the group on a node where they are
    not zero (``Topology.allowed`` and ``blocked_by_owners``): its own pod anti-affinity
    on the hostname, and the placed owners of one on the hostname that selects it."""
    closers: list[Mapping[str, int]] = [
        tg.counts
        for tg in constraints.topology
        if tg.kind == ANTI_AFFINITY and tg.key == wk.HOSTNAME
    ]
    closers += [g.owners for g in group.selecting_anti if g.key == wk.HOSTNAME and g.owners]
    return closers


def _passed_over(
    target: _Node | Draft,
    allowed: Mapping[str, frozenset[str]],
    closed: Sequence[Mapping[str, int]],
    dead: set[int],
) -> bool:
    """A target settled in a domain outside ``allowed``, or a NodeClaim a hostname
    anti-affinity closes (added to ``dead``: counts only grow, so it is closed to the
    group for good): skipped without a full check, which would refuse it."""
    if allowed and _outside(target, allowed):
        return True
    if closed and isinstance(target, Draft) and any(c.get(target.hostname) for c in closed):
        dead.add(id(target))
        return True
    return False


def _open_peers(
    first: Draft,
    later: Iterable[Draft],
    group: _Group,
    allowed: Mapping[str, frozenset[str]],
    closed: Sequence[Mapping[str, int]],
    dead: set[int],
) -> Iterator[Draft]:
    """The claims after ``first`` in ``later`` (sorted by pod count) with as many pods
    where the pod fits on every candidate type, so that their room raises no price
    (only the pod's requirements can), less those ``_passed_over``; lazily. Claims it
    would fill to a dearer type are left unchecked: checking every claim at every pod
    made the diverse benchmark's solves 2-4 times slower."""
    for target in later:
        if target.count != first.count:
            return
        least = target.least
        if any(amount > least[d] for d, amount in group.wanted):
            continue
        if not _passed_over(target, allowed, closed, dead):
            yield target


def _outside(target: _Node | Draft, allowed: Mapping[str, frozenset[str]]) -> bool:
    """Whether the target is settled, on some key, in a domain not allowed."""
    for key, domains in allowed.items():
        value = target.pinned(key)
        if value is not None and value not in domains:
            return True
    return False


def _draft_domains(draft: Draft, requirements: Requirements) -> Any:
    """Possible domains per key for a draft whose requirements would become ``requirements``
    (zones and capacity types only where a candidate type offers them)."""

    def domains_of(key: str) -> list[str]:
        if key == wk.HOSTNAME:
            return [draft.hostname]
        requirement = requirements.get_requirement(key)
        values = [v for v in sorted(draft.pool.domains(key)) if requirement.has(v)]
        if key in (wk.ZONE, wk.CAPACITY_TYPE) and len(values) > 1:
            present = draft.pool.values_offered(requirements, draft.offered_cells(), key)
            values = [v for v in values if v in present]
        return values

    return domains_of


def _price_rise(draft: Draft, fit: _Fit, wanted: Sequence[tuple[int, int]]) -> Any:
    """``rise(k)``: how much the draft's price goes up when it takes k pods of the fit
    (the cheapest of its candidates with room for k pods sets the new price; a fit
    without ``counts`` has every candidate hold its ``count``, up to which k goes).
    ``wanted`` is the pod's (dimension, amount) requests. A fit that keeps the draft's
    requirements and candidates raises nothing up to the pods every candidate holds:
    those rises are 0 without pricing (most of the rises asked)."""
    assert fit.requirements is not None and fit.idx is not None
    kept = fit.signature == draft.sig and fit.idx is draft.idx
    free = _held_everywhere(draft, wanted) if kept else 0
    counts = fit.counts
    known: dict[int, float] = {}

    def rise(k: int) -> float:
        if k <= free or (kept and counts is None):
            return 0.0
        found = known.get(k)
        if found is None:
            prices = draft.pool.type_prices(fit.requirements, fit.signature)[fit.idx]
            roomy = prices if counts is None else prices[counts >= k]
            found = float(roomy.min()) - draft.price() if len(roomy) else np.inf
            known[k] = found
        return found

    return rise


def _held_everywhere(draft: Draft, wanted: Sequence[tuple[int, int]]) -> int:
    """How many pods requesting ``wanted`` ((dimension, amount) pairs) every candidate
    type of the draft still has room for (at least; the candidates a fit keeps are
    among them)."""
    least = draft.least
    return min(least[d] // amount for d, amount in wanted)


def _no_rise(k: int) -> float:
    return 0.0


def _next_rise(rise: Any, taken: int) -> float:
    """What one more pod of the group adds to a claim's price when it already took
    ``taken`` (>= 1) of them, by ``rise`` from ``_price_rise``."""
    return float(rise(taken + 1) - rise(taken))


def _domain_prices(draft: Draft, requests: np.ndarray, joining: Callable[[], np.ndarray]) -> Any:
    """``price(key, requirements)``: per value of the zone or capacity type, (what the
    pods to come, ``joining()`` in all, cost there on the draft's candidate types, how many
    values of the other key offer room there); other keys have no prices. That cost is
    the cheapest type that holds them all, else the cheapest count of nodes of one type
    their requests need at least; each type must have room for the pod at hand
    (``requests``). For that pod alone it is the cheapest offering with room for it.
    Among equally empty domains a pod takes the cheapest, then the one with the fewest
    options, which keeps the flexible domains for the pods that follow."""

    def price(key: str, requirements: Requirements) -> dict[str, tuple[float, int]]:
        if key not in (wk.ZONE, wk.CAPACITY_TYPE):
            return {}
        pool = draft.pool
        free = draft.avail  # [dimension, i]
        joined = joining()  # asked only when a choice is priced
        if joined is requests:  # the pod alone: the cheapest offering with room for it
            room = draft.idx.compress((free >= requests[:, None]).all(axis=0))
            by_cell = pool.cell_prices(requirements).take(room, axis=1).min(axis=1, initial=np.inf)
        else:
            prices = pool.cell_prices(requirements).take(draft.idx, axis=1)  # [z * c, i]
            by_cell = _group_prices(free, prices, requests, joined)
        by_domain = by_cell.reshape(len(pool.zones), len(pool.capacity_types))
        if key == wk.CAPACITY_TYPE:
            by_domain = by_domain.T
        names = pool.zones if key == wk.ZONE else pool.capacity_types
        cheapest = by_domain.min(axis=1, initial=np.inf).tolist()
        options = np.isfinite(by_domain).sum(axis=1).tolist()
        return dict(zip(names, zip(cheapest, options, strict=True), strict=True))

    return price


def _group_prices(
    free: np.ndarray, prices: np.ndarray, requests: np.ndarray, joining: np.ndarray
) -> np.ndarray:
    """Per [zone, capacity type] cell, what ``joining`` costs on types with room for
    ``requests``: the cheapest type that holds it all, else the cheapest count of nodes
    of one type it needs at least (``_domain_prices``). ``free`` is [dimension, i] and
    ``prices`` [cell, i] of the same candidates."""
    offered = np.isfinite(prices) & (free >= requests[:, None]).all(axis=0)
    whole = offered & (free >= joining[:, None]).all(axis=0)
    nz = np.nonzero(joining)[0]
    nodes = np.ceil((joining[nz, None] / np.maximum(free[nz], 1)).max(axis=0))  # [i]
    return np.where(
        whole.any(axis=1),
        np.where(whole, prices, np.inf).min(axis=1, initial=np.inf),
        np.where(offered, prices * nodes, np.inf).min(axis=1, initial=np.inf),
    )


def _pin(
    requirements: Requirements,
    domains: dict[str, list[str]],
    constraints: PodConstraints,
    price: Any,
) -> Requirements:
    """Narrow the draft to the chosen domains: one domain where the pod's own constraints
    need one (see ``_single_domain``; the emptiest by its spread counts, then by
    ``price``), the allowed set otherwise. Every key is narrowed to its allowed set
    before any is pinned, so a domain is priced only with the other keys' allowed values:
    a zone and a capacity type pinned one after the other are a pair some type offers."""
    own: dict[str, list[TopologyGroup]] = {}
    for tg in constraints.topology:
        own.setdefault(tg.key, []).append(tg)
    chosen = {key: values for key, values in domains.items() if key != wk.HOSTNAME}
    out = _narrowed(requirements, chosen)
    for key, values in chosen.items():
        groups = own.get(key, ())
        # one value left is the choice already: no prices needed to rank it
        if len(values) > 1 and any(_single_domain(tg, constraints) for tg in groups):
            counts, prices = groups[0].counts, price(key, out)  # consistent with earlier pins
            offered = [v for v in values if prices.get(v, (0.0, 0))[0] < np.inf] or values
            pick = min(offered, key=lambda v: (counts.get(v, 0), prices.get(v, (0.0, 0)), v))
            if out is requirements:
                out = requirements.copy()
            out.add(Requirement.new(key, IN, [pick]))
    return out


def _narrowed(requirements: Requirements, domains: Mapping[str, list[str]]) -> Requirements:
    """The requirements with each key of ``domains`` narrowed to its values (the same
    object when none changes)."""
    out = requirements
    for key, values in domains.items():
        current = requirements.get(key)
        if current is not None and not current.complement and current.values == set(values):
            continue
        if out is requirements:
            out = requirements.copy()
        out.add(Requirement.new(key, IN, values))
    return out


def _single_domain(group: TopologyGroup, constraints: PodConstraints) -> bool:
    """Whether a NodeClaim taking a pod that owns ``group`` is pinned to one domain of its
    key. As in Karpenter: a spread always (its counts need the domain), an affinity when it
    bootstraps (no matching pod anywhere yet), otherwise the allowed domains stay open.
    Unlike Karpenter, a required anti-affinity pins too, so the next pod of the group
    still finds an empty domain (docs/compatibility.md)."""
    if group.kind == SPREAD:
        return True
    if group.kind == AFFINITY:
        return not any(group.counts.values())
    return group in constraints.required_topology
