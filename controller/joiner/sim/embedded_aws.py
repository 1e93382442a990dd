"""Embedded AWS for ``provider: aws``: moto in-process, seeded like a cluster's
account, with the real AWS provider code on top.

The account gets a VPC with one discovery-tagged subnet per scenario zone, a
discovery-tagged security group, an EKS cluster, the IAM roles the node classes
name, and the EKS optimized AMIs behind every alias the scenario uses (moto has no
public SSM parameters: they are written into its backend). moto's
DescribeInstanceTypes takes seconds, so its answer is cached on disk per moto
version and a run starts in seconds after the first.

With ``spec.cloud.enforceIAM`` the provider runs as the controller: an IAM user holding
exactly the controller policy Joiner ships, moto enforcing it (``moto_iam``) and every
call checked against its resources and conditions (``joiner.infra.callaudit``); the
seeding and EC2's own doings (reclaiming an instance) run as an administrator. Denied
calls fail as on AWS and are listed by ``iam_denials()`` and in the log at the end.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import botocore.session
import moto
from botocore.parsers import DEFAULT_TIMESTAMP_PARSER
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.authorization import enable_iam_authentication
from moto.core.utils import utcnow
from moto.ec2.models import ec2_backends
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.ssm.models import Parameter, ssm_backends

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.api.ec2nodeclass import EC2NodeClass, default_block_device_mappings
from joiner.clock import Clock
from joiner.cloudprovider.aws.amis import alias_variants
from joiner.cloudprovider.aws.clients import AWSClients
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue, TypeSettings, type_shape
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.aws.provider import (
    AWSCloudProvider,
    instance_capacity_type,
    instance_id_of,
)
from joiner.infra.callaudit import BotoResourceFacts, CallAudit
from joiner.infra.iam import ControllerPolicyParams, controller_policy
from joiner.sim.cloud import StaticNodeFacts
from joiner.sim.moto_iam import ADMINISTRATOR, Keys, create_principal, moto_iam_corrections
from joiner.sim.moto_reservations import (
    CapacityReservation,
    add_reservation,
    hold_outside,
    install,
    new_reservation_id,
    targeted_reservation,
)
from joiner.sim.scenario import CapacityKey, ReservationSpec, Scenario, StaticNode

log = logging.getLogger(__name__)

KUBERNETES_VERSION = "1.33"
VPC_CIDR = "10.0.0.0/16"
_EC2_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
NodeClassLookup = Callable[[str], EC2NodeClass | None]


def catalogue_cache_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "joiner" / f"moto-{moto.__version__}-instance-types.json"


class EmbeddedAWS:
    """A SimCloud over moto and ``AWSCloudProvider``. Call ``close()`` when done."""

    def __init__(self, scenario: Scenario, clock: Clock) -> None:
        self.region = scenario.cluster.region
        install()  # moto has no capacity reservations: Joiner's emulation at its edge
        self._mock = mock_aws()
        self._mock.start()
        self._tag_lookup = mock.patch.object(TaggedEC2Resource, "get_tags", _tags_by_id)
        self._tag_lookup.start()
        self._enforcement = ExitStack()
        session = _session(self.region, Keys("embedded", "embedded"))
        self.clients = AWSClients.create(self.region, session=session, max_attempts=1)
        self._eks = session.client("eks", region_name=self.region)
        nodeclasses = list(_nodeclasses(scenario))
        zones = self._seed_network(scenario)
        self._seed_roles(nodeclasses)
        self._seed_amis(nodeclasses)
        cluster = self._seed_cluster(scenario.cluster.name)
        self.audit: CallAudit | None = None
        controller = self.clients
        if scenario.cloud.enforce_iam:
            controller = self._enforce_controller_policy(scenario.cluster.name, nodeclasses)
        self._lookup: NodeClassLookup = lambda name: None
        self.catalogue = cached_catalogue(controller.ec2, clock)
        self._provider_args = (controller, clock, cluster, scenario.cloud.prices)
        self.provider = self._new_provider()
        self.controller_ec2 = controller.ec2
        # The scenario's reservations with the ids EC2 gave them, in the scenario's order.
        self.reservations = self._seed_reservations(scenario, clock)
        self.outage = CapacityOutage(  # where CreateFleet goes
            controller.ec2, zones, lambda name: self._targets_reservation(name)
        )
        self._prices: dict[str, float] = {}

    def _new_provider(self) -> AWSCloudProvider:
        """The controller's provider, with empty caches (offerings that failed with
        insufficient capacity, prices, launch templates)."""
        controller, clock, cluster, static_prices = self._provider_args
        # moto has no Pricing API (GetProducts): on-demand prices come from the scenario's
        # list (else the documented estimate), spot prices from moto's price history.
        pricing = PricingProvider(
            clock,
            self.region,
            pricing_client=None,
            ec2=controller.ec2,
            static_on_demand=static_prices,
            infos=self.catalogue.infos,
        )
        return AWSCloudProvider(
            controller,
            clock,
            cluster,
            self.region,
            lambda name: self._lookup(name),
            catalogue=self.catalogue,
            pricing=pricing,
        )

    def restart_provider(self) -> None:
        """The controller restarted: a new provider; moto (the cloud) keeps everything."""
        self.provider = self._new_provider()

    def _enforce_controller_policy(
        self, cluster: str, nodeclasses: list[EC2NodeClass]
    ) -> AWSClients:
        """The controller's clients, as a principal holding the controller policy; from
        here on ``self.clients`` are an administrator's and moto enforces IAM. The policy's
        node role is the classes' role (the first, when they name several: the policy
        lets the controller pass one)."""
        roles = sorted({n.role.rsplit("/", 1)[-1] for n in nodeclasses if n.role})
        node_role = roles[0] if roles else f"{cluster}-node"
        policy = controller_policy(
            ControllerPolicyParams(
                cluster,
                self.region,
                DEFAULT_ACCOUNT_ID,
                f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/{node_role}",
            )
        )
        admin = create_principal(self.clients.iam, "administrator", ADMINISTRATOR)
        keys = create_principal(self.clients.iam, "joiner-controller", policy)
        self.clients = AWSClients.create(
            self.region, session=_session(self.region, admin), max_attempts=1
        )
        controller = AWSClients.create(
            self.region, session=_session(self.region, keys), max_attempts=1
        )
        self.audit = CallAudit(
            policy, BotoResourceFacts(self.clients.ec2, self.clients.iam), DEFAULT_ACCOUNT_ID
        )
        self.audit.watch(controller.ec2, controller.ssm, controller.iam)
        self._enforcement.enter_context(moto_iam_corrections())
        self._enforcement.enter_context(enable_iam_authentication())
        return controller

    def iam_denials(self) -> list[str]:
        """The controller's calls its policy did not allow (with enforceIAM)."""
        return self.audit.report() if self.audit else []

    def bind_nodeclasses(self, lookup: NodeClassLookup) -> None:
        """Where the provider reads node classes (with their status): the operator's state."""
        self._lookup = lookup

    def close(self) -> None:
        for denial in self.iam_denials():
            log.error("the controller policy denied %s", denial)
        self._enforcement.close()
        self._tag_lookup.stop()
        self._mock.stop()

    # --- SimCloud ----------------------------------------------------------------------

    def resolve_nodeclass(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        return self.provider.resolve_nodeclass(nodeclass)

    def instance_exists(self, provider_id: str) -> bool:
        return self.provider.describe_instance(instance_id_of(provider_id)) is not None

    def instance_price(self, provider_id: str) -> float | None:
        if provider_id not in self._prices:
            instance = self.provider.describe_instance(instance_id_of(provider_id))
            if instance is None:
                return None
            capacity_type = instance_capacity_type(instance)
            info = self.catalogue.infos()[instance["InstanceType"]]
            zone = instance["Placement"]["AvailabilityZone"]
            self._prices[provider_id] = self.provider.pricing.price(info, capacity_type, zone)
        return self._prices[provider_id]

    def static_node(self, node: StaticNode) -> StaticNodeFacts:
        info = self.catalogue.infos()[node.instance_type]
        settings = TypeSettings(
            region=self.region,
            kubelet={},
            ami_family="AL2023",
            block_device_mappings=tuple(default_block_device_mappings("AL2023")),
        )
        shape = type_shape(info, settings)
        labels = {
            key: requirement.any_value()
            for key, requirement in shape.requirements.items()
            if len(requirement) == 1 and requirement.any_value() is not None
        }
        labels.update({wk.ZONE: node.zone, wk.CAPACITY_TYPE: node.capacity_type})
        allocatable = res.subtract(shape.capacity, shape.overhead.total())
        price = self.provider.pricing.price(info, node.capacity_type, node.zone)
        return StaticNodeFacts(labels, shape.capacity, allocatable, price)

    def set_available(self, keys: tuple[CapacityKey, ...], available: bool) -> None:
        """On-demand and spot pools run dry (CapacityOutage); the type's capacity
        reservations fill up with instances outside the cluster."""
        for key in keys:
            if key.capacity_type in (None, wk.CAPACITY_TYPE_RESERVED):
                hold_outside(
                    DEFAULT_ACCOUNT_ID, self.region, key.instance_type, key.zone, not available
                )
            if key.capacity_type != wk.CAPACITY_TYPE_RESERVED:
                self.outage.set(key, exhausted=not available)

    def _targets_reservation(self, template_name: str) -> bool:
        return targeted_reservation(DEFAULT_ACCOUNT_ID, self.region, template_name) is not None

    def fail_launches(self, keys: tuple[CapacityKey, ...]) -> None:
        """CreateFleet answers insufficient capacity for these offerings, as for the
        capacity step: EC2 gives no earlier sign."""
        self.set_available(keys, False)

    def reclaim(self, provider_id: str) -> None:
        """EC2 takes the instance away (an interruption coming true)."""
        self.clients.ec2.terminate_instances(InstanceIds=[instance_id_of(provider_id)])

    # --- seeding -------------------------------------------------------------------------

    def _seed_network(self, scenario: Scenario) -> dict[str, str]:
        ec2 = self.clients.ec2
        discovery = {"karpenter.sh/discovery": scenario.cluster.name}
        vpc_id = ec2.create_vpc(CidrBlock=VPC_CIDR)["Vpc"]["VpcId"]
        zones = {}
        for index, zone in enumerate(scenario.cluster.zones):
            subnet = ec2.create_subnet(
                VpcId=vpc_id,
                CidrBlock=f"10.0.{index * 16}.0/20",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(discovery)}],
            )["Subnet"]["SubnetId"]
            zones[subnet] = zone
        # moto gives instances the default security groups whatever the launch template
        # says, so those are the node groups that discovery must find.
        defaults = ec2.describe_security_groups(
            Filters=[{"Name": "group-name", "Values": ["default"]}]
        )["SecurityGroups"]
        ec2.create_tags(Resources=[g["GroupId"] for g in defaults], Tags=_tags(discovery))
        return zones

    def _seed_reservations(
        self, scenario: Scenario, clock: Clock
    ) -> list[tuple[str, ReservationSpec]]:
        """The scenario's capacity reservations, active from the start, ending
        ``endsAfter`` from it."""
        seeded = []
        for spec in scenario.cloud.capacity_reservations:
            end = None
            if spec.ends_after is not None:
                end = datetime.fromtimestamp(clock.now() + spec.ends_after, UTC)
            reservation = CapacityReservation(
                id=spec.id or new_reservation_id(),
                instance_type=spec.instance_type,
                zone=spec.zone,
                total=spec.count,
                match_criteria=spec.match_criteria,
                reservation_type=spec.type,
                end=end,
                tags=dict(spec.tags),
            )
            seeded.append((add_reservation(DEFAULT_ACCOUNT_ID, self.region, reservation), spec))
        return seeded

    def _seed_roles(self, nodeclasses: list[EC2NodeClass]) -> None:
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "ec2.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        for role in sorted({n.role for n in nodeclasses if n.role}):
            self.clients.iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))

    def _seed_amis(self, nodeclasses: list[EC2NodeClass]) -> None:
        parameters = {}
        for nodeclass in nodeclasses:
            for term in nodeclass.ami_selector_terms or [{"alias": "al2023@latest"}]:
                if "alias" not in term:
                    continue
                family, _, version = term["alias"].partition("@")
                for variant in alias_variants(family, version or "latest", KUBERNETES_VERSION):
                    parameters[variant.parameter] = (variant.arch, family, variant.variant)
        for parameter, (arch, family, variant) in sorted(parameters.items()):
            image_id = self.clients.ec2.register_image(
                Name=f"{family}-{variant}-{arch}-{KUBERNETES_VERSION}",
                Description="EKS optimized (embedded)",
            )["ImageId"]
            set_ami_architecture(self.region, image_id, _EC2_ARCH[arch])
            put_public_parameter(self.region, parameter, image_id)

    def _seed_cluster(self, name: str) -> ClusterInfo:
        self._eks.create_cluster(
            name=name,
            version=KUBERNETES_VERSION,
            roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/{name}-cluster",
            resourcesVpcConfig={"subnetIds": []},
        )
        return ClusterInfo.from_eks(self._eks, name)


def _nodeclasses(scenario: Scenario) -> Iterable[EC2NodeClass]:
    manifests = [*scenario.objects]
    for step in scenario.steps:
        manifests.extend(getattr(step, "manifests", ()))
    for manifest in manifests:
        if manifest.get("kind") == "EC2NodeClass":
            yield EC2NodeClass.from_dict(dict(manifest))


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def set_ami_architecture(region: str, image_id: str, architecture: str) -> None:
    """moto's RegisterImage drops Architecture; set it on the backend's image."""
    ec2_backends[DEFAULT_ACCOUNT_ID][region].amis[image_id].architecture = architecture


def put_public_parameter(region: str, name: str, value: str) -> None:
    """Write an ``/aws/service/...`` parameter as AWS publishes it (clients may not)."""
    ssm_backends[DEFAULT_ACCOUNT_ID][region]._parameters[name].append(
        Parameter(
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=utcnow(),
            version=1,
            data_type="aws:ec2:image",
        )
    )


def _session(region: str, keys: Keys) -> boto3.Session:
    return boto3.Session(
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
        region_name=region,
        botocore_session=_fast_timestamps(botocore.session.get_session()),
    )


def _fast_timestamps(session: botocore.session.Session) -> botocore.session.Session:
    """Responses' timestamps read with ``datetime.fromisoformat`` (moto writes ISO 8601),
    falling back to botocore's own parser: its dateutil parse took a twentieth of a
    simulated day on AWS, listing instances every two minutes."""
    factory = session.get_component("response_parser_factory")
    factory.set_parser_defaults(timestamp_parser=_iso_timestamp)
    return session


def _iso_timestamp(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return DEFAULT_TIMESTAMP_PARSER(value)


def _tags_by_id(resource: TaggedEC2Resource) -> list[dict[str, str]]:
    """moto's answer to "the tags of this resource", looked up by its id. moto finds them
    by matching the id against every tag in the region, once per resource it describes:
    a DescribeInstances then costs instances x tags, which over a simulated day of
    launches dominates the run. The answer is the same (ids hold no wildcards)."""
    resource_id = resource.id  # type: ignore[attr-defined]
    if not resource_id:
        return []
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    tags = resource.ec2_backend.tags.get(resource_id) or {}  # type: ignore[attr-defined]
    return [
        {"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
        for key, value in tags.items()
    ]


def cached_catalogue(ec2: Any, clock: Clock) -> InstanceTypeCatalogue:
    """The catalogue, loaded from the disk cache when there is one, else from moto (and
    then written to the cache)."""
    # moto's catalogue is fixed for its version: described once, never refreshed
    catalogue = InstanceTypeCatalogue(ec2, clock, refresh_seconds=math.inf)
    path = catalogue_cache_path()
    try:
        catalogue.preload(json.loads(path.read_text()))
        return catalogue
    except (OSError, ValueError, KeyError):
        pass
    catalogue.refresh()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(catalogue.export(), default=str))
    except OSError:
        pass  # no writable cache: the next run describes again
    return catalogue


class CapacityOutage:
    """Insufficient capacity on demand: CreateFleet answers InsufficientInstanceCapacity
    for exhausted (instance type, zone, capacity type) offerings, as AWS does when a pool
    is dry (moto never does). Exhausted overrides are taken out of the request before moto
    sees it and reported as per-override errors in the response. A launch into a capacity
    reservation (its template targets one: ``in_reservation``) uses the reservation's
    capacity, not the pool's."""

    def __init__(
        self,
        ec2: Any,
        subnet_zones: dict[str, str],
        in_reservation: Callable[[str], bool] = lambda template: False,
    ) -> None:
        self.exhausted: set[tuple[str, str | None, str | None]] = set()
        self._zones = subnet_zones
        self._in_reservation = in_reservation
        self._errors: list[dict[str, Any]] = []
        self._nothing_left = False
        events = ec2.meta.events
        events.register("before-parameter-build.ec2.CreateFleet", self._strip)
        events.register("before-call.ec2.CreateFleet", self._answer_when_empty)
        events.register("after-call.ec2.CreateFleet", self._report)

    def set(self, key: CapacityKey, exhausted: bool) -> None:
        entry = (key.instance_type, key.zone, key.capacity_type)
        if exhausted:
            self.exhausted.add(entry)
        else:
            self.exhausted.discard(entry)

    def _is_exhausted(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return any(
            t == instance_type and z in (None, zone) and c in (None, capacity_type)
            for t, z, c in self.exhausted
        )

    def _strip(self, params: dict[str, Any], **_: Any) -> None:
        capacity_type = params["TargetCapacitySpecification"]["DefaultTargetCapacityType"]
        self._errors, kept_configs = [], []
        for config in params["LaunchTemplateConfigs"]:
            template = config["LaunchTemplateSpecification"].get("LaunchTemplateName", "")
            if self._in_reservation(template):
                kept_configs.append(config)
                continue
            kept = []
            for override in config["Overrides"]:
                zone = self._zones[override["SubnetId"]]
                if self._is_exhausted(override["InstanceType"], zone, capacity_type):
                    self._errors.append(_ice_error(config, override, capacity_type))
                else:
                    kept.append(override)
            if kept:
                kept_configs.append({**config, "Overrides": kept})
        self._nothing_left = not kept_configs
        if kept_configs:
            params["LaunchTemplateConfigs"] = kept_configs

    def _answer_when_empty(self, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        if not self._nothing_left:
            return None
        return _HttpOk(), {"FleetId": "fleet-outage", "Instances": [], "Errors": []}

    def _report(self, parsed: dict[str, Any], **_: Any) -> None:
        parsed.setdefault("Errors", []).extend(self._errors)
        self._errors, self._nothing_left = [], False


def _ice_error(config: dict[str, Any], override: dict[str, Any], capacity_type: str) -> dict:
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
            "Overrides": override,
        },
        "Lifecycle": capacity_type,
        "ErrorCode": "InsufficientInstanceCapacity",
        "ErrorMessage": "We currently do not have sufficient capacity.",
    }


class _HttpOk:
    status_code = 200
    headers: dict[str, str] = {}
