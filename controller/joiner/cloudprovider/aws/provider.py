"""``AWSCloudProvider``: the CloudProvider port over EC2 [SPEC 4, 5, 6].

It reads EC2NodeClasses (with their resolved status) through an injected lookup and never
talks to Kubernetes. Caches (catalogue, prices, unavailable offerings, launch templates)
run on the injected clock.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.compatibility import readable_kubelet
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodeclaim import NodeClaim, NodeClaimStatus
from joiner.api.nodepool import NodeClassRef, NodePool
from joiner.api.requirements import Requirements
from joiner.clock import Clock, to_rfc3339
from joiner.cloudprovider.aws import userdata
from joiner.cloudprovider.aws.capacityreservations import ReservationLedger
from joiner.cloudprovider.aws.clients import AWSClients
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.fleet import FleetResult, Override, create_fleet
from joiner.cloudprovider.aws.instancetypes import (
    DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    InstanceTypeCatalogue,
    TypeSettings,
    TypeShape,
    type_shape,
    with_offerings,
)
from joiner.cloudprovider.aws.launchtemplates import (
    NOT_FOUND_CODES,
    UNUSED_TTL_SECONDS,
    LaunchTemplateProvider,
    build_launch_template,
)
from joiner.cloudprovider.aws.nodeclass import (
    HASH_VERSION,
    NodeClassResolver,
    is_ready,
    not_ready_message,
)
from joiner.cloudprovider.aws.offerings import (
    UnavailableOfferings,
    build_offerings,
    choose_capacity_type,
    drop_exotic,
    launchable_offerings,
    reserved_offerings,
)
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.aws.subnets import subnets_by_zone
from joiner.cloudprovider.aws.tags import (
    NODECLAIM_TAG,
    cluster_tag,
    from_tag_list,
    instance_tags,
    launch_tags,
)
from joiner.cloudprovider.repairpolicies import EKS_REPAIR_POLICIES
from joiner.cloudprovider.types import (
    RESERVATION_LABELS,
    CloudProviderError,
    InstanceType,
    InsufficientCapacityError,
    LaunchPrices,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    Offering,
    RepairPolicy,
    reservation_labels,
)
from joiner.identity import IdentityCache

log = logging.getLogger(__name__)

LISTING_FRESH_SECONDS = 120.0  # a listing's instances stand in for a DescribeInstances

PROVIDER_ID_PREFIX = "aws:///"
GC_MIN_AGE_SECONDS = 30.0
TYPES_CACHE_SIZE = 16  # views kept: a few classes x settings
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
NodeClassLookup = Callable[[str], EC2NodeClass | None]


def provider_id(zone: str, instance_id: str) -> str:
    return f"{PROVIDER_ID_PREFIX}{zone}/{instance_id}"


def instance_id_of(provider_id_value: str | None) -> str:
    """``aws:///us-east-1a/i-0abc`` -> ``i-0abc``."""
    if not provider_id_value or not provider_id_value.startswith(PROVIDER_ID_PREFIX):
        raise NodeClaimNotFoundError(f"not an AWS provider id: {provider_id_value!r}")
    return provider_id_value.rsplit("/", 1)[-1]


@dataclass
class _Candidate:
    """One (type, offering) the launch may use, with the subnet and AMI it would get."""

    instance_type: InstanceType
    offering: Offering
    price: float
    subnet_id: str
    image_id: str

    @property
    def zone(self) -> str:
        return self.offering.zone


class AWSCloudProvider:
    name = "aws"

    def __init__(
        self,
        clients: AWSClients,
        clock: Clock,
        cluster: ClusterInfo,
        region: str,
        nodeclasses: NodeClassLookup,
        catalogue: InstanceTypeCatalogue | None = None,
        pricing: PricingProvider | None = None,
        unavailable: UnavailableOfferings | None = None,
        vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
        reserved_enis: int = 0,
        isolated_vpc: bool = False,
        static_prices: Mapping[str, float] | None = None,
    ) -> None:
        self.clients = clients
        self.clock = clock
        self.cluster = cluster
        self.region = region
        self.nodeclasses = nodeclasses
        self.catalogue = catalogue or InstanceTypeCatalogue(clients.ec2, clock)
        self.pricing = pricing or PricingProvider(
            clock,
            region,
            pricing_client=clients.pricing,
            ec2=clients.ec2,
            static_on_demand=static_prices,
            isolated_vpc=isolated_vpc,
            infos=self.catalogue.infos,
        )
        self.unavailable = unavailable or UnavailableOfferings(clock)
        self.reservations = ReservationLedger()  # free slots of capacity reservations
        self.launch_templates = LaunchTemplateProvider(clients.ec2, clock, cluster.name)
        self.resolver = NodeClassResolver(clients, clock, cluster, region, self.reservations)
        self.vm_memory_overhead_percent = vm_memory_overhead_percent
        self.reserved_enis = reserved_enis
        self._types_cache: dict[tuple, list[InstanceType]] = {}
        self._last_sweep = clock.now()
        self._shapes_cache: dict[tuple, dict[str, TypeShape]] = {}
        self._hashes: IdentityCache[str] = IdentityCache(64)  # see _static_hash
        self._listing: tuple[float, dict[str, dict[str, Any]]] = (-math.inf, {})  # when, by id

    # --- instance types ----------------------------------------------------------

    def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        nodeclass = self.nodeclasses(nodepool.template.node_class_ref.name)
        if nodeclass is None or not is_ready(nodeclass):
            return []
        try:
            return self.instance_types_for(nodeclass)
        except CloudProviderError as error:
            log.warning("no instance types for nodepool %s: %s", nodepool.name, error)
            return []

    def instance_types_for(self, nodeclass: EC2NodeClass) -> list[InstanceType]:
        """Every type launchable with the class: offered in a zone of its subnets."""
        self.pricing.refresh_if_due()
        settings = self._settings(nodeclass)
        zones = frozenset(s["zone"] for s in nodeclass.status.get("subnets", []))
        reservations = nodeclass.status.get("capacityReservations") or []
        shapes = self._shapes(settings)
        key = (
            _freeze(settings),
            zones,
            json.dumps(reservations, sort_keys=True),
            self.catalogue.generation,
            self.pricing.generation,
            self.unavailable.generation,
            self.reservations.generation,
        )
        if key not in self._types_cache:
            if len(self._types_cache) >= TYPES_CACHE_SIZE:
                self._types_cache.pop(next(iter(self._types_cache)))  # the oldest
            self._types_cache[key] = self._build_types(shapes, zones, reservations)
        return self._types_cache[key]

    def _shapes(self, settings: TypeSettings) -> dict[str, TypeShape]:
        """Per-settings type shapes, rebuilt only when the catalogue changes."""
        infos = self.catalogue.infos()
        key = (_freeze(settings), self.catalogue.generation)
        if key not in self._shapes_cache:
            if len(self._shapes_cache) >= TYPES_CACHE_SIZE:
                self._shapes_cache.pop(next(iter(self._shapes_cache)))
            self._shapes_cache[key] = {
                name: type_shape(info, settings) for name, info in sorted(infos.items())
            }
        return self._shapes_cache[key]

    def _build_types(
        self,
        shapes: Mapping[str, TypeShape],
        zones: frozenset[str],
        reservations: Sequence[Mapping[str, Any]],
    ) -> list[InstanceType]:
        infos = self.catalogue.infos()
        type_zones = self.catalogue.type_zones()
        zone_ids = self.catalogue.zone_ids()
        reserved_types = {r["instanceType"] for r in reservations}
        types = []
        for name, shape in shapes.items():
            offered = type_zones.get(name, frozenset()) & zones
            offerings = build_offerings(infos[name], offered, self.pricing, self.unavailable)
            if name in reserved_types:
                offerings += reserved_offerings(
                    infos[name],
                    offered,
                    reservations,
                    self.pricing,
                    (self.reservations, self.unavailable),
                )
            if offerings:
                types.append(with_offerings(shape, offerings, zone_ids))
        return types

    def _static_hash(self, nodeclass: EC2NodeClass) -> str:
        """The class's drift hash, once per class object (callers hand the same object
        until the class changes, and garbage collection describes every instance)."""
        return self._hashes.remember((nodeclass,), nodeclass.static_hash)

    def _settings(self, nodeclass: EC2NodeClass) -> TypeSettings:
        return TypeSettings.for_nodeclass(
            nodeclass, self.region, self.vm_memory_overhead_percent, self.reserved_enis
        )

    # --- create ------------------------------------------------------------------

    def create(self, nodeclaim: NodeClaim, prices: LaunchPrices | None = None) -> NodeClaim:
        """Reserved capacity first: a launch takes a free slot of each reservation it may
        go into; should launches in flight hold them all, the next capacity type the
        NodeClaim allows is chosen (the reserved offerings are unavailable by then)."""
        nodeclass = self._ready_nodeclass(nodeclaim)
        for _ in range(len(wk.CAPACITY_TYPES)):
            launched = self._create_once(nodeclaim, nodeclass, prices)
            if launched is not None:
                return launched
        raise InsufficientCapacityError(f"no capacity left to choose for {nodeclaim.name}")

    def _create_once(
        self, nodeclaim: NodeClaim, nodeclass: EC2NodeClass, prices: LaunchPrices | None
    ) -> NodeClaim | None:
        """A launch of the capacity type chosen now; None when launches in flight hold
        every free slot of the reservations it would go into."""
        requirements = nodeclaim.requirement_set()
        types = drop_exotic(self._candidate_types(nodeclaim, nodeclass), requirements)
        capacity_type = choose_capacity_type(types, requirements)
        if capacity_type is None:
            raise InsufficientCapacityError(
                f"no available offering for {nodeclaim.name} among {len(types)} instance types"
            )
        candidates = self._candidates(nodeclass, types, requirements, capacity_type, prices)
        if not candidates:
            raise InsufficientCapacityError(
                f"no {capacity_type} offering for {nodeclaim.name} has a subnet and an AMI"
            )
        taken: dict[str, int] = {}
        if capacity_type == wk.CAPACITY_TYPE_RESERVED:
            candidates, taken = self._reserve_slots(candidates)
            if not candidates:
                return None
        went_into: str | None = None
        try:
            result = self._launch(
                nodeclaim, nodeclass, capacity_type, candidates, prices is not None
            )
            chosen = _chosen(result, candidates)
            went_into = chosen.offering.reservation_id if chosen else None
        finally:
            self.reservations.settle(taken, went_into)
        self._sweep_launch_templates()
        return self._launched(nodeclaim, nodeclass, result, capacity_type, candidates)

    def _reserve_slots(
        self, candidates: list[_Candidate]
    ) -> tuple[list[_Candidate], dict[str, int]]:
        """The reserved candidates whose reservation had a free slot, now taken; one
        reservation per type and zone (the cheapest first), so that what CreateFleet
        launches tells which reservation it went into."""
        taken = self.reservations.take(
            {c.offering.reservation_id for c in candidates if c.offering.reservation_id}
        )
        kept: dict[tuple[str, str], _Candidate] = {}
        for c in candidates:
            if c.offering.reservation_id in taken:
                kept.setdefault((c.instance_type.name, c.zone), c)
        return list(kept.values()), taken

    def _sweep_launch_templates(self) -> None:
        """Templates unused for an hour go; looked for at most once an hour, after a launch
        (the only moment templates are made or used)."""
        now = self.clock.now()
        if now - self._last_sweep < UNUSED_TTL_SECONDS:
            return
        self._last_sweep = now
        try:
            self.launch_templates.delete_unused()
        except (BotoCoreError, ClientError) as error:
            log.warning("deleting unused launch templates failed: %s", error)

    def _ready_nodeclass(self, nodeclaim: NodeClaim) -> EC2NodeClass:
        name = nodeclaim.node_class_ref.name
        nodeclass = self.nodeclasses(name)
        if nodeclass is None:
            raise NodeClassNotReadyError(f"EC2NodeClass {name!r} not found")
        if not is_ready(nodeclass):
            raise NodeClassNotReadyError(not_ready_message(nodeclass))
        return nodeclass

    def _candidate_types(self, nodeclaim: NodeClaim, nodeclass: EC2NodeClass) -> list[InstanceType]:
        """The NodeClaim's candidate types (in its order) that fit its requests and meet
        its requirements."""
        by_name = {it.name: it for it in self.instance_types_for(nodeclass)}
        requirements = nodeclaim.requirement_set()
        requests = nodeclaim.requests_milli
        names = nodeclaim.instance_type_candidates() or list(by_name)
        return [
            by_name[name]
            for name in names
            if name in by_name
            and by_name[name].requirements.intersects(requirements) is None
            and res.fits(requests, by_name[name].allocatable)
        ]

    def _candidates(
        self,
        nodeclass: EC2NodeClass,
        types: Sequence[InstanceType],
        requirements: Requirements,
        capacity_type: str,
        prices: LaunchPrices | None,
    ) -> list[_Candidate]:
        """Each launchable (type, offering), priced at ``prices`` where given."""
        prices = prices or {}
        subnets = subnets_by_zone(self.clients.ec2, nodeclass.status.get("subnets", []))
        images = {it.name: _image_for(it, nodeclass) for it in types}
        return [
            _Candidate(
                it,
                offering,
                prices.get((it.name, offering.zone, capacity_type), offering.price),
                subnets[offering.zone],
                images[it.name],
            )
            for it, offering in launchable_offerings(types, requirements, capacity_type)
            if offering.zone in subnets and images[it.name] is not None
        ]

    def _launch(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        capacity_type: str,
        candidates: list[_Candidate],
        prioritized: bool,
    ) -> FleetResult:
        nodepool = nodeclaim.nodepool or ""
        tags = instance_tags(
            self.cluster.name, nodepool, nodeclass.name, nodeclaim.name, nodeclass.tags
        )
        for attempt in range(2):
            overrides = self._overrides(nodeclaim, nodeclass, capacity_type, candidates)
            try:
                result = create_fleet(self.clients.ec2, capacity_type, overrides, tags, prioritized)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code")
                if code in NOT_FOUND_CODES and attempt == 0:
                    for override in overrides:  # deleted behind our back: recreate once
                        self.launch_templates.forget(override.launch_template)
                    continue
                raise CloudProviderError(
                    f"CreateFleet for {nodeclaim.name} failed: {error}"
                ) from error
            break
        for error in result.errors:
            if error.is_capacity_error and error.instance_type and error.zone:
                self._no_capacity(error.instance_type, error.zone, capacity_type, candidates)
        if result.instance_id is None:
            summary = "; ".join(
                f"{e.code} {e.instance_type} {e.zone}: {e.message}" for e in result.errors
            )
            if result.errors and all(e.is_capacity_error for e in result.errors):
                raise InsufficientCapacityError(f"no capacity for {nodeclaim.name}: {summary}")
            raise CloudProviderError(
                f"CreateFleet launched nothing for {nodeclaim.name}: {summary}"
            )
        return result

    def _no_capacity(
        self, instance_type: str, zone: str, capacity_type: str, candidates: list[_Candidate]
    ) -> None:
        """An offering EC2 had no capacity for: unavailable for a while; a reservation's,
        full until its next resolution (its type's other reservations may have room)."""
        if capacity_type != wk.CAPACITY_TYPE_RESERVED:
            self.unavailable.mark_unavailable(instance_type, zone, capacity_type)
            return
        for c in candidates:
            same_offering = (c.instance_type.name, c.zone) == (instance_type, zone)
            if same_offering and c.offering.reservation_id:
                self.reservations.exhausted(c.offering.reservation_id)

    def _overrides(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        capacity_type: str,
        candidates: list[_Candidate],
    ) -> list[Override]:
        """One override per candidate; candidates sharing an AMI and max pods share a
        launch template."""
        nodepool = nodeclaim.nodepool or ""
        family = nodeclass.resolved_ami_family()
        tags = launch_tags(self.cluster.name, nodepool, nodeclass.name, nodeclass.tags)
        labels = {**nodeclaim.labels, wk.CAPACITY_TYPE: capacity_type}
        templates: dict[tuple[str, int, str | None], str] = {}
        overrides = []
        for candidate in candidates:
            pods = candidate.instance_type.capacity[res.PODS] // 1000
            reservation = candidate.offering.reservation_id
            key = (candidate.image_id, pods, reservation)
            if key not in templates:
                bootstrap = userdata.NodeBootstrap(
                    cluster=self.cluster,
                    max_pods=pods,
                    labels={**labels, **candidate.offering.reservation_labels()},
                    taints=[*nodeclaim.taints, *nodeclaim.startup_taints],
                    kubelet=readable_kubelet(nodeclass.kubelet),
                    custom=nodeclass.user_data,
                )
                try:
                    text = userdata.render(family, bootstrap)
                except userdata.UserDataError as error:
                    raise NodeClassNotReadyError(str(error)) from error
                template = build_launch_template(
                    self.cluster.name,
                    nodeclass,
                    candidate.image_id,
                    text,
                    tags,
                    candidate.offering if reservation else None,
                )
                templates[key] = self.launch_templates.ensure(template)
            overrides.append(
                Override(
                    candidate.instance_type.name,
                    candidate.subnet_id,
                    candidate.zone,
                    candidate.price,
                    templates[key],
                )
            )
        return overrides

    def _launched(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        result: FleetResult,
        capacity_type: str,
        candidates: list[_Candidate],
    ) -> NodeClaim:
        instance = self._fleet_instance(result, candidates)
        by_name = {c.instance_type.name: c.instance_type for c in candidates}
        launched = copy.deepcopy(nodeclaim)
        instance_type = by_name[instance["InstanceType"]]
        zone = instance["Placement"]["AvailabilityZone"]
        chosen = _chosen(result, candidates)
        self._describe_launch(
            launched,
            nodeclass,
            instance,
            instance_type,
            zone,
            capacity_type,
            chosen.offering.reservation_labels() if chosen else {},
        )
        return launched

    def _fleet_instance(
        self, result: FleetResult, candidates: list[_Candidate]
    ) -> Mapping[str, Any]:
        """The launched instance as CreateFleet described it, with the AMI its offering
        was given: no DescribeInstances, which could fail (throttled) after the launch
        succeeded and make the NodeClaim launch a second instance, as upstream
        builds it from the fleet's answer. Described only should the answer lack it."""
        chosen = _chosen(result, candidates)
        if chosen is not None:
            return {
                "InstanceId": result.instance_id,
                "InstanceType": chosen.instance_type.name,
                "Placement": {"AvailabilityZone": chosen.zone},
                "ImageId": chosen.image_id,
            }
        instance = self.describe_instance(result.instance_id or "")
        if instance is None:
            raise CloudProviderError(f"instance {result.instance_id} vanished right after launch")
        return instance

    # --- describing instances as NodeClaims -------------------------------------

    def _describe_launch(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass | None,
        instance: Mapping[str, Any],
        instance_type: InstanceType | None,
        zone: str,
        capacity_type: str,
        in_reservation: Mapping[str, str],
    ) -> None:
        """Fill in what was launched: labels (the capacity reservation's, when it went
        into one), hash annotation and status."""
        if instance_type is not None:
            nodeclaim.labels.update(_single_values(instance_type.requirements))
            for key in RESERVATION_LABELS:
                nodeclaim.labels.pop(key, None)  # the type's, not necessarily the node's
            nodeclaim.status.capacity = res.format_resource_list(instance_type.capacity)
            nodeclaim.status.allocatable = res.format_resource_list(instance_type.allocatable)
        nodeclaim.labels.update(in_reservation)
        nodeclaim.labels.update(
            {
                wk.INSTANCE_TYPE: instance["InstanceType"],
                wk.ZONE: zone,
                wk.CAPACITY_TYPE: capacity_type,
                wk.REGION: self.region,
            }
        )
        zone_id = self.catalogue.zone_ids().get(zone)
        if zone_id:
            nodeclaim.labels[wk.ZONE_ID] = zone_id
        if nodeclass is not None:
            nodeclaim.labels[wk.EC2NODECLASS] = nodeclass.name
            annotations = nodeclaim.metadata.setdefault("annotations", {})
            annotations.setdefault(wk.EC2NODECLASS_HASH, self._static_hash(nodeclass))
            annotations.setdefault(wk.EC2NODECLASS_HASH_VERSION, HASH_VERSION)
        nodeclaim.status.provider_id = provider_id(zone, instance["InstanceId"])
        nodeclaim.status.image_id = instance.get("ImageId")

    def _nodeclaim_from_instance(self, instance: Mapping[str, Any]) -> NodeClaim:
        tags = from_tag_list(instance.get("Tags"))
        class_name = tags.get(wk.EC2NODECLASS, "")
        nodeclass = self.nodeclasses(class_name) if class_name else None
        capacity_type = instance_capacity_type(instance)
        zone = instance["Placement"]["AvailabilityZone"]
        labels = {wk.NODEPOOL: tags[wk.NODEPOOL]} if wk.NODEPOOL in tags else {}
        launch_time = instance.get("LaunchTime")
        metadata: dict[str, Any] = {"name": tags.get(NODECLAIM_TAG, ""), "labels": labels}
        if launch_time is not None:
            metadata["creationTimestamp"] = to_rfc3339(launch_time.timestamp())
        nodeclaim = NodeClaim(
            metadata=metadata, node_class_ref=NodeClassRef(class_name), status=NodeClaimStatus()
        )
        self._describe_launch(
            nodeclaim,
            nodeclass,
            instance,
            self._instance_type(instance["InstanceType"], nodeclass, zone, capacity_type),
            zone,
            capacity_type,
            _reservation_labels(instance, nodeclass),
        )
        return nodeclaim

    def _instance_type(
        self, name: str, nodeclass: EC2NodeClass | None, zone: str, capacity_type: str
    ) -> InstanceType | None:
        info = self.catalogue.infos().get(name)
        if info is None:
            return None
        settings = (
            self._settings(nodeclass)
            if nodeclass is not None
            else TypeSettings(self.region, {}, "AL2023", ())
        )
        offerings = build_offerings(info, [zone], self.pricing, self.unavailable)
        offerings = [o for o in offerings if o.capacity_type == capacity_type]
        shape = self._shapes(settings)[name]  # remembered per settings and catalogue
        return with_offerings(shape, offerings, self.catalogue.zone_ids())

    def describe_instance(self, instance_id: str) -> dict[str, Any] | None:
        try:
            reservations = self.clients.ec2.describe_instances(InstanceIds=[instance_id])[
                "Reservations"
            ]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidInstanceID.NotFound":
                return None
            raise
        for reservation in reservations:
            for instance in reservation["Instances"]:
                if instance["State"]["Name"] != "terminated":
                    return instance
        return None

    # --- get / list / delete -----------------------------------------------------

    def get(self, provider_id: str) -> NodeClaim:
        instance = self.describe_instance(instance_id_of(provider_id))
        if instance is None:
            raise NodeClaimNotFoundError(f"instance {provider_id} not found")
        return self._nodeclaim_from_instance(instance)

    def list(self) -> list[NodeClaim]:
        instances = self._cluster_instances()
        self._listing = (self.clock.now(), {i["InstanceId"]: i for i in instances})
        return [self._nodeclaim_from_instance(i) for i in instances]

    def _recent_instance(self, instance_id: str) -> dict[str, Any] | None:
        """The instance as the last listing saw it when that is fresh (garbage collection
        lists every two minutes), else described now: what drift reads (image, subnet,
        security groups) does not change under a running instance but by hand."""
        listed_at, by_id = self._listing
        if self.clock.now() - listed_at <= LISTING_FRESH_SECONDS and instance_id in by_id:
            return by_id[instance_id]
        return self.describe_instance(instance_id)

    def _cluster_instances(self) -> list[dict[str, Any]]:
        filters = [  # the state first: it rules out the most, and moto checks in order
            {"Name": "instance-state-name", "Values": LIVE_STATES},
            {"Name": f"tag:{cluster_tag(self.cluster.name)}", "Values": ["owned"]},
            {"Name": "tag-key", "Values": [wk.NODEPOOL]},
        ]
        instances = []
        for page in self.clients.ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                instances.extend(reservation["Instances"])
        return instances

    def delete(self, nodeclaim: NodeClaim) -> None:
        """Terminate the instance (its capacity reservation's slot is free again);
        NodeClaimNotFoundError once it is gone."""
        instance_id = instance_id_of(nodeclaim.status.provider_id)
        instance = self.describe_instance(instance_id)
        if instance is None:
            raise NodeClaimNotFoundError(f"instance {instance_id} not found")
        try:
            self.clients.ec2.terminate_instances(InstanceIds=[instance_id])
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidInstanceID.NotFound":
                raise NodeClaimNotFoundError(f"instance {instance_id} not found") from error
            raise CloudProviderError(f"terminating {instance_id} failed: {error}") from error
        if instance.get("CapacityReservationId"):
            self.reservations.released(instance["CapacityReservationId"])

    # --- drift -------------------------------------------------------------------

    def is_drifted(self, nodeclaim: NodeClaim) -> str | None:
        """NodeClassDrift (static hash changed), or AMIDrift / SubnetDrift /
        SecurityGroupDrift / CapacityReservationDrift when the instance's AMI, subnet, one
        of its security groups or its capacity reservation is no longer selected by the
        class [SPEC 7.6]."""
        nodeclass = self.nodeclasses(nodeclaim.node_class_ref.name)
        if nodeclass is None or not is_ready(nodeclass):
            return None
        annotations = nodeclaim.metadata.get("annotations") or {}
        stamped = annotations.get(wk.EC2NODECLASS_HASH)
        if stamped is not None and stamped != self._static_hash(nodeclass):
            return "NodeClassDrift"
        try:
            instance = self._recent_instance(instance_id_of(nodeclaim.status.provider_id))
        except (ClientError, BotoCoreError) as error:
            log.warning("drift check of %s failed: %s", nodeclaim.name, error)
            return None
        if instance is None:
            return None
        status = nodeclass.status
        if instance.get("ImageId") not in {a["id"] for a in status.get("amis", [])}:
            return "AMIDrift"
        if instance.get("SubnetId") not in {s["id"] for s in status.get("subnets", [])}:
            return "SubnetDrift"
        if not _security_groups(instance) <= {g["id"] for g in status.get("securityGroups", [])}:
            return "SecurityGroupDrift"
        reservation = instance.get("CapacityReservationId")
        if reservation and reservation not in {
            r["id"] for r in status.get("capacityReservations", [])
        }:
            return "CapacityReservationDrift"
        return None

    def repair_policies(self) -> Sequence[RepairPolicy]:
        """Upstream's AWS provider's: the kubelet's Ready condition and the EKS node
        monitoring agent's conditions [REPAIR-1]."""
        return EKS_REPAIR_POLICIES

    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> None:
        """Keep an offering out of launches for the cache's TTL (3 minutes): an
        interruption warning for its pool means no capacity there, as an ICE does."""
        self.unavailable.mark_unavailable(instance_type, zone, capacity_type)

    # --- garbage collection and class cleanup ------------------------------------

    def resolve_nodeclass(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        """The class's status with conditions (see NodeClassResolver)."""
        return self.resolver.resolve(nodeclass)

    def finalize_nodeclass(self, nodeclass: EC2NodeClass) -> None:
        """Remove what the controller created for a deleted class."""
        self.launch_templates.delete_for_nodeclass(nodeclass.name)
        self.resolver.instance_profiles.delete(nodeclass)


def instance_capacity_type(instance: Mapping[str, Any]) -> str:
    """An instance's capacity type: reserved in a capacity reservation, else spot or
    on-demand by its lifecycle."""
    if instance.get("CapacityReservationId"):
        return wk.CAPACITY_TYPE_RESERVED
    if instance.get("InstanceLifecycle") == "spot":
        return wk.CAPACITY_TYPE_SPOT
    return wk.CAPACITY_TYPE_ON_DEMAND


def _reservation_labels(
    instance: Mapping[str, Any], nodeclass: EC2NodeClass | None
) -> dict[str, str]:
    """The capacity reservation labels of a described instance (the type as its class's
    status says, else default)."""
    reservation_id = instance.get("CapacityReservationId")
    if not reservation_id:
        return {}
    known = (nodeclass.status.get("capacityReservations") or []) if nodeclass else []
    found = next((r for r in known if r["id"] == reservation_id), {})
    return reservation_labels(reservation_id, found.get("reservationType"))


def _chosen(result: FleetResult, candidates: Sequence[_Candidate]) -> _Candidate | None:
    """The candidate CreateFleet launched (by type and zone)."""
    return next(
        (
            c
            for c in candidates
            if (c.instance_type.name, c.zone) == (result.instance_type, result.zone)
        ),
        None,
    )


def _image_for(instance_type: InstanceType, nodeclass: EC2NodeClass) -> str | None:
    """The first AMI in the class status whose requirements the type meets."""
    for ami in nodeclass.status.get("amis", []):
        requirements = Requirements.from_node_selector_requirements(ami.get("requirements"))
        if instance_type.requirements.intersects(requirements) is None:
            return ami["id"]
    return None


def _security_groups(instance: Mapping[str, Any]) -> set[str]:
    """The groups on the instance and its network interfaces (moto reports them on the
    interfaces only)."""
    groups = {g["GroupId"] for g in instance.get("SecurityGroups", [])}
    for interface in instance.get("NetworkInterfaces", []):
        groups.update(g["GroupId"] for g in interface.get("Groups", []))
    return groups


def _single_values(requirements: Requirements) -> dict[str, str]:
    return {
        key: value
        for key, requirement in requirements.items()
        if len(requirement) == 1 and (value := requirement.any_value()) is not None
    }


def _freeze(settings: TypeSettings) -> str:
    """A hashable, order-independent form of the settings for cache keys."""
    return json.dumps(
        {
            "kubelet": settings.kubelet,
            "family": settings.ami_family,
            "volumes": list(settings.block_device_mappings),
            "store": settings.instance_store_policy,
            "overhead": settings.vm_memory_overhead_percent,
            "enis": settings.reserved_enis,
        },
        sort_keys=True,
        default=str,
    )
