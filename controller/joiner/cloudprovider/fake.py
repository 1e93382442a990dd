"""An in-memory cloud with a synthetic catalogue, for exact tests and scenarios.

``new_instance_type`` builds one type the way Karpenter's fake provider does;
``FakeCloudProvider`` launches "instances" instantly, picking the cheapest
compatible available offering, and can be told that offerings have no capacity.
"""

from __future__ import annotations

import copy
import itertools
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from joiner.api import ec2nodeclass as ncl
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.conditions import TRUE, set_condition
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodeclaim import NodeClaim, NodeClaimStatus
from joiner.api.nodepool import NodePool
from joiner.api.requirements import IN, Requirement, Requirements
from joiner.clock import Clock, FakeClock
from joiner.cloudprovider.repairpolicies import EKS_REPAIR_POLICIES
from joiner.cloudprovider.types import (
    InstanceType,
    InsufficientCapacityError,
    LaunchPrices,
    NodeClaimNotFoundError,
    Offering,
    Overhead,
    RepairPolicy,
)

PROVIDER_ID_PREFIX = "fake://"
DEFAULT_ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
NODECLASS_CONDITIONS = (
    ncl.VALIDATION_SUCCEEDED,
    ncl.SUBNETS_READY,
    ncl.SECURITY_GROUPS_READY,
    ncl.AMIS_READY,
    ncl.INSTANCE_PROFILE_READY,
    ncl.READY,
)


def new_instance_type(
    name: str,
    cpu: str | int = "4",
    memory: str = "4Gi",
    pods: int = 5,
    arch: str = "amd64",
    os: str = "linux",
    offerings: Iterable[Offering] | None = None,
    resources: Mapping[str, str] | None = None,
    overhead: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> InstanceType:
    """One synthetic type. Without offerings it has spot and on-demand in every default
    zone, priced from its size (on-demand twice spot)."""
    capacity = res.parse_resource_list({"cpu": str(cpu), "memory": memory, "pods": str(pods)})
    capacity.update(res.parse_resource_list(resources))
    if offerings is None:
        base = capacity["cpu"] / 1000 * 0.025 + capacity["memory"] / 1000 / 2**30 * 0.001
        offerings = [
            Offering(zone, ct, round(base * (1 if ct == wk.CAPACITY_TYPE_SPOT else 2), 6))
            for zone in DEFAULT_ZONES
            for ct in (wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND)
        ]
    offerings = list(offerings)
    type_labels = {
        wk.INSTANCE_TYPE: name,
        wk.ARCH: arch,
        wk.OS: os,
        wk.INSTANCE_CPU: str(capacity["cpu"] // 1000),
        wk.INSTANCE_MEMORY: str(capacity["memory"] // 1000 // 2**20),
        **(labels or {}),
    }
    requirements = Requirements(Requirement.new(k, IN, [v]) for k, v in type_labels.items())
    requirements.add(
        Requirement.new(wk.ZONE, IN, sorted({o.zone for o in offerings})),
        Requirement.new(wk.CAPACITY_TYPE, IN, sorted({o.capacity_type for o in offerings})),
    )
    return InstanceType(
        name=name,
        requirements=requirements,
        offerings=offerings,
        capacity=capacity,
        overhead=Overhead(kube_reserved=res.parse_resource_list(overhead)),
    )


def benchmark_instance_types(count: int = 400) -> list[InstanceType]:
    """Sized like Karpenter's scheduling-benchmark catalogue (type i has i+1 vCPU, 2(i+1)
    GiB and 10(i+1) pods) but with this fake's offerings, prices and no overhead; the
    exact upstream catalogue is the oracle document of ``benchmarks/bench_scheduling``."""
    return [
        new_instance_type(
            f"fake-it-{i}", cpu=str(i + 1), memory=f"{2 * (i + 1)}Gi", pods=10 * (i + 1)
        )
        for i in range(count)
    ]


@dataclass
class FakeInstance:
    frozen: bytes  # the launched NodeClaim, pickled: each reader gets its own copy
    described: bytes  # the instance as a listing describes it, pickled likewise
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    launched_at: float

    @property
    def nodeclaim(self) -> NodeClaim:
        """The launched NodeClaim, a copy of the caller's own (a pickle round trip)."""
        return pickle.loads(self.frozen)

    @property
    def listed(self) -> NodeClaim:
        """The instance as ``list`` gives it (a copy of the caller's own): what the AWS
        provider's listing knows, the name, labels, node class, provider ID, capacity
        and allocatable, not the whole launched NodeClaim. Garbage collection lists every
        instance every two minutes, and the whole claim cost twice as much to copy."""
        return pickle.loads(self.described)


class FakeCloudProvider:
    """Launches instantly and remembers what it launched.

    Availability, like the AWS provider's: an offering launches unless the catalogue
    says it is unavailable, a test put it in ``unavailable`` (until removed), or a
    launch hit no capacity there within the last ``ICE_TTL`` seconds. Pools in
    ``no_capacity`` look available but fail at launch, as an EC2 insufficient-capacity
    error does; the failure is then cached like the real one.
    """

    name = "fake"
    ICE_TTL = 180.0  # seconds an insufficient-capacity error keeps an offering out

    def __init__(
        self,
        instance_types: Sequence[InstanceType],
        clock: Clock | None = None,
        repair_policies: Sequence[RepairPolicy] = EKS_REPAIR_POLICIES,
    ) -> None:
        self.instance_types = list(instance_types)
        self.clock = clock or FakeClock()
        self.policies = tuple(repair_policies)
        self.instances: dict[str, FakeInstance] = {}
        self.unavailable: set[tuple[str, str, str]] = set()  # (type, zone, capacity type)
        self.no_capacity: set[tuple[str, str, str]] = set()  # fail at launch
        self.insufficient_capacity: dict[tuple[str, str, str], float] = {}  # pool -> when
        self.create_calls: list[NodeClaim] = []
        self._listed: tuple[tuple, list[InstanceType], list[InstanceType]] | None = None
        self.drifted: dict[str, str] = {}  # provider id -> drift reason, set by tests
        self._ids = itertools.count(1)

    # --- the CloudProvider port ----------------------------------------------

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        """The same list while the catalogue and what is unavailable stay the same, as the
        AWS provider does (callers may skip re-reading it)."""
        now = self.clock.now()
        key = (
            tuple(map(id, self.instance_types)),
            frozenset(self.unavailable),
            frozenset(p for p, t in self.insufficient_capacity.items() if now - t < self.ICE_TTL),
        )
        if self._listed is None or self._listed[0] != key:
            types = [self._with_availability(it) for it in self.instance_types]
            self._listed = (key, types, list(self.instance_types))  # the types keep their ids
        return self._listed[1]

    def create(self, nodeclaim: NodeClaim, prices: LaunchPrices | None = None) -> NodeClaim:
        """Launch the cheapest available offering (at ``prices`` where given) compatible
        with the NodeClaim among its candidate types (all types when it names none) that fit
        its requests; ties go to the earlier candidate. Pools without capacity are skipped
        and cached as such."""
        self.create_calls.append(nodeclaim)
        requirements = nodeclaim.requirement_set()
        prices = prices or {}
        choices = [
            (
                prices.get(
                    (instance_type.name, offering.zone, offering.capacity_type), offering.price
                ),
                index,
                instance_type,
                offering,
            )
            for index, instance_type in enumerate(self._candidates(nodeclaim, requirements))
            for offering in self._with_availability(instance_type).compatible_offerings(
                requirements
            )
        ]
        choices.sort(key=lambda choice: choice[:2])  # stable: equal prices keep offering order
        for _, _, instance_type, offering in choices:
            pool = (instance_type.name, offering.zone, offering.capacity_type)
            if pool in self.no_capacity:
                self.insufficient_capacity[pool] = self.clock.now()
                continue
            return self._launch(nodeclaim, instance_type, offering)
        raise InsufficientCapacityError(
            f"no capacity for {nodeclaim.name}: {len(choices)} compatible offerings tried"
        )

    def delete(self, nodeclaim: NodeClaim) -> None:
        provider_id = nodeclaim.status.provider_id
        if not provider_id or provider_id not in self.instances:
            raise NodeClaimNotFoundError(f"instance {provider_id} not found")
        del self.instances[provider_id]

    def get(self, provider_id: str) -> NodeClaim:
        instance = self.instances.get(provider_id)
        if instance is None:
            raise NodeClaimNotFoundError(f"instance {provider_id} not found")
        return instance.nodeclaim

    def list(self) -> list[NodeClaim]:
        return [i.listed for i in self.instances.values()]

    def is_drifted(self, nodeclaim: NodeClaim) -> str | None:
        return self.drifted.get(nodeclaim.status.provider_id or "")

    def finalize_nodeclass(self, nodeclass: EC2NodeClass) -> None:
        """The fake cloud creates nothing per node class."""

    def resolve_nodeclass(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        """Every node class is Ready here: the fake cloud has no subnets or AMIs to find.
        Conditions already true keep their transition time."""
        conditions = copy.deepcopy(nodeclass.status.get("conditions") or [])
        for type_ in NODECLASS_CONDITIONS:
            set_condition(conditions, type_, TRUE, self.clock.now())
        return {"conditions": conditions}

    def forget(self) -> None:
        """Drop what the provider's process remembers (insufficient-capacity errors, the
        listed types), as a restarted controller would; the cloud's instances stay."""
        self.insufficient_capacity.clear()
        self._listed = None

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return self.policies

    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> None:
        """Keep the offering out for ``ICE_TTL``, as an insufficient-capacity error does
        (a spot interruption warning says the same about its pool)."""
        self.insufficient_capacity[(instance_type, zone, capacity_type)] = self.clock.now()

    # --- helpers ---------------------------------------------------------------

    def _candidates(self, nodeclaim: NodeClaim, requirements: Requirements) -> list[InstanceType]:
        """The NodeClaim's instance types in its order, kept when they fit its requests and
        their labels agree with its requirements."""
        by_name = {it.name: it for it in self.instance_types}
        names = nodeclaim.instance_type_candidates() or list(by_name)
        requests = nodeclaim.requests_milli
        return [
            by_name[name]
            for name in names
            if name in by_name
            and res.fits(requests, by_name[name].allocatable)
            and requirements.intersects(by_name[name].requirements) is None
        ]

    def _is_available(self, pool: tuple[str, str, str]) -> bool:
        if pool in self.unavailable:
            return False
        failed_at = self.insufficient_capacity.get(pool)
        return failed_at is None or self.clock.now() - failed_at >= self.ICE_TTL

    def _with_availability(self, instance_type: InstanceType) -> InstanceType:
        if not self.unavailable and not self.insufficient_capacity:
            return instance_type
        offerings = [
            Offering(
                o.zone,
                o.capacity_type,
                o.price,
                o.available and self._is_available((instance_type.name, o.zone, o.capacity_type)),
            )
            for o in instance_type.offerings
        ]
        return InstanceType(
            instance_type.name,
            instance_type.requirements,
            offerings,
            instance_type.capacity,
            instance_type.overhead,
        )

    def _launch(
        self, nodeclaim: NodeClaim, instance_type: InstanceType, offering: Offering
    ) -> NodeClaim:
        instance_id = f"i-{next(self._ids):017x}"
        launched = _copy(nodeclaim)
        launched.status.provider_id = f"{PROVIDER_ID_PREFIX}/{offering.zone}/{instance_id}"
        launched.status.capacity = res.format_resource_list(instance_type.capacity)
        launched.status.allocatable = res.format_resource_list(instance_type.allocatable)
        launched.labels.update(
            {
                **{
                    k: r.any_value()
                    for k, r in instance_type.requirements.items()
                    if r.any_value() is not None and len(r) == 1
                },
                wk.ZONE: offering.zone,
                wk.CAPACITY_TYPE: offering.capacity_type,
            }
        )
        instance = FakeInstance(
            pickle.dumps(launched, pickle.HIGHEST_PROTOCOL),
            pickle.dumps(_described(launched), pickle.HIGHEST_PROTOCOL),
            instance_type.name,
            offering.zone,
            offering.capacity_type,
            offering.price,
            self.clock.now(),
        )
        self.instances[launched.status.provider_id] = instance
        return instance.nodeclaim


def _described(launched: NodeClaim) -> NodeClaim:
    """What a listing of the cloud's instances says of one (see ``FakeInstance.listed``)."""
    metadata = {"name": launched.name, "labels": dict(launched.labels)}
    status = launched.status
    return NodeClaim(
        metadata=metadata,
        node_class_ref=launched.node_class_ref,
        status=NodeClaimStatus(
            provider_id=status.provider_id,
            capacity=dict(status.capacity),
            allocatable=dict(status.allocatable),
        ),
    )


def _copy(nodeclaim: NodeClaim) -> NodeClaim:
    """A deep copy (callers own what they get): a pickle round trip is twice the speed
    of ``copy.deepcopy`` on a NodeClaim."""
    return pickle.loads(pickle.dumps(nodeclaim, pickle.HIGHEST_PROTOCOL))
