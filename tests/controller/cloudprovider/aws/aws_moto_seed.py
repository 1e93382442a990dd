"""Seeding and hooks for the AWS provider tests against moto (server mode, in-process).

``seed_env`` resets moto and seeds what a cluster's account has: a VPC with
discovery-tagged subnets and security groups, EKS optimized AMIs and their public SSM
parameters (moto has none, and SSM refuses ``/aws/...`` names from clients, so they are
written into moto's in-process backend), and a node role. The account has two
principals: an administrator (``Env.clients``: seeding and the tests' own looks) and the
controller (``Env.controller``), an IAM user holding exactly the rendered controller
policy, whose every call is checked against it (``Env.audit``, resources and conditions)
and, once ``enforce_iam`` is on, by moto (actions). ``seed_spot_prices`` serves
spot prices (moto's are a constant $0.00001). ``CapacityOutage`` makes CreateFleet report
insufficient capacity, which moto never does. ``make_stand`` wires an AWSCloudProvider.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.clients import AWSClients
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.aws.provider import AWSCloudProvider
from joiner.infra.callaudit import BotoResourceFacts, CallAudit
from joiner.infra.iam import ControllerPolicyParams, controller_policy
from joiner.sim import embedded_aws
from joiner.sim.embedded_aws import CapacityOutage
from joiner.sim.moto_iam import (
    ADMINISTRATOR,
    Keys,
    create_principal,
    moto_iam_corrections,
    set_server_enforcement,
)
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.ec2.responses.spot_instances import SpotInstances

REGION = "us-east-1"
CLUSTER = "test-cluster"
K8S_VERSION = "1.31"
ROLE = "test-node-role"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}

# (SSM parameter, architecture) for each alias-resolvable AMI that gets seeded.
EKS = f"/aws/service/eks/optimized-ami/{K8S_VERSION}"
BR = f"/aws/service/bottlerocket/aws-k8s-{K8S_VERSION}"
AMI_PARAMETERS = {
    (
        "al2023",
        "amd64",
        "standard",
    ): f"{EKS}/amazon-linux-2023/x86_64/standard/recommended/image_id",
    ("al2023", "arm64", "standard"): f"{EKS}/amazon-linux-2023/arm64/standard/recommended/image_id",
    ("al2023", "amd64", "nvidia"): f"{EKS}/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
    ("al2023@pinned", "amd64", "standard"): (
        f"{EKS}/amazon-linux-2023/x86_64/standard/"
        f"amazon-eks-node-al2023-x86_64-standard-{K8S_VERSION}-v20240807/image_id"
    ),
    ("al2", "amd64", "standard"): f"{EKS}/amazon-linux-2/recommended/image_id",
    ("al2", "arm64", "standard"): f"{EKS}/amazon-linux-2-arm64/recommended/image_id",
    ("al2", "amd64", "nvidia"): f"{EKS}/amazon-linux-2-gpu/recommended/image_id",
    ("bottlerocket", "amd64", "standard"): f"{BR}/x86_64/latest/image_id",
    ("bottlerocket", "arm64", "standard"): f"{BR}/arm64/latest/image_id",
}
EC2_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
UNENFORCED = Keys("testing", "testing")  # any key does while moto enforces nothing
ACCOUNT = DEFAULT_ACCOUNT_ID
QUEUE = CLUSTER  # the interruption queue the controller policy grants
POLICY_PARAMS = ControllerPolicyParams(
    CLUSTER,
    REGION,
    ACCOUNT,
    f"arn:aws:iam::{ACCOUNT}:role/{ROLE}",
    f"arn:aws:sqs:{REGION}:{ACCOUNT}:{QUEUE}",
)
CONTROLLER_POLICY = controller_policy(POLICY_PARAMS)


@dataclass
class Env:
    """A seeded moto account, reset for each test."""

    url: str
    clients: AWSClients  # the administrator's
    admin_keys: Keys
    controller_keys: Keys
    controller: AWSClients  # the controller's, audited
    audit: CallAudit
    vpc_id: str
    subnets: dict[str, str]  # name -> id
    node_security_groups: list[str]  # sorted
    other_security_group: str
    amis: dict[tuple[str, str, str], str]  # (alias, arch, variant) -> image id


def _post(url: str) -> None:
    request = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


# One loader for every session: botocore reads its service models (EC2's is large) once.
_LOADER = botocore.loaders.create_loader()


def session_of(keys: Keys) -> boto3.Session:
    core = botocore.session.get_session()
    core.register_component("data_loader", _LOADER)
    return boto3.Session(
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
        region_name=REGION,
        botocore_session=core,
    )


def make_clients(url: str, keys: Keys = UNENFORCED, with_pricing: bool = True) -> AWSClients:
    return AWSClients.create(
        REGION,
        session=session_of(keys),
        endpoint_url=url,
        max_attempts=1,
        with_pricing=with_pricing,
    )


def client(env: Env, service: str, keys: Keys) -> Any:
    """A client of a service AWSClients lacks (EKS, SQS), signed with ``keys``."""
    return session_of(keys).client(service, endpoint_url=env.url)


def audited_clients(url: str, keys: Keys, audit: CallAudit) -> AWSClients:
    """The controller's clients, every call checked by ``audit``."""
    clients = make_clients(url, keys)
    audit.watch(clients.ec2, clients.ssm, clients.iam, clients.pricing)
    return clients


def new_audit(admin: AWSClients) -> CallAudit:
    return CallAudit(CONTROLLER_POLICY, BotoResourceFacts(admin.ec2, admin.iam), ACCOUNT)


def seed_env(moto_url: str) -> Env:
    """Reset moto (enforcement off) and seed it like a cluster's account."""
    set_server_enforcement(moto_url, enforced=False)
    _post(f"{moto_url}/moto-api/reset")
    unenforced = make_clients(moto_url)
    admin_keys = create_principal(unenforced.iam, "administrator", ADMINISTRATOR)
    controller_keys = create_principal(unenforced.iam, "joiner-controller", CONTROLLER_POLICY)
    clients = make_clients(moto_url, admin_keys)
    audit = new_audit(clients)
    controller = audited_clients(moto_url, controller_keys, audit)
    ec2 = clients.ec2
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        "a-big": _subnet(ec2, vpc_id, "10.0.0.0/20", "us-east-1a", DISCOVERY),
        "a-small": _subnet(ec2, vpc_id, "10.0.16.0/26", "us-east-1a", DISCOVERY),
        "b": _subnet(ec2, vpc_id, "10.0.32.0/20", "us-east-1b", DISCOVERY),
        "c": _subnet(ec2, vpc_id, "10.0.48.0/20", "us-east-1c", DISCOVERY),
        "d-untagged": _subnet(ec2, vpc_id, "10.0.64.0/20", "us-east-1d", {"team": "other"}),
    }
    # moto ignores a launch template's security groups: on-demand instances get the
    # subnet VPC's default group, spot instances the default VPC's. Both default groups
    # are therefore the discovered node groups here.
    node_groups = sorted(
        g["GroupId"]
        for g in ec2.describe_security_groups(
            Filters=[{"Name": "group-name", "Values": ["default"]}]
        )["SecurityGroups"]
    )
    ec2.create_tags(Resources=node_groups, Tags=_tags(DISCOVERY))
    other_sg = ec2.create_security_group(
        GroupName="other-nodes",
        Description="other",
        VpcId=vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags({"team": "other"})}],
    )["GroupId"]
    amis = {key: _register_ami(ec2, key) for key in AMI_PARAMETERS}
    for key, parameter in AMI_PARAMETERS.items():
        seed_ssm_parameter(parameter, amis[key])
    clients.iam.create_role(
        RoleName=ROLE,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )
    return Env(
        moto_url,
        clients,
        admin_keys,
        controller_keys,
        controller,
        audit,
        vpc_id,
        subnets,
        node_groups,
        other_sg,
        amis,
    )


@contextmanager
def enforce_iam(env: Env) -> Iterator[None]:
    """moto checks every request against its signer's policies while this lasts; the
    controller's calls the audit denied fail the test at the end."""
    with moto_iam_corrections():
        set_server_enforcement(env.url, enforced=True)
        try:
            yield
        finally:
            set_server_enforcement(env.url, enforced=False)
    assert env.audit.report() == [], "calls the controller policy does not allow"


@contextmanager
def moto_unenforced(env: Env) -> Iterator[None]:
    """moto's enforcement paused (the audit still checks the controller's calls): moto
    computes the signature of EKS's GET requests over a body they do not have, and so
    refuses every one (moto 5.2)."""
    set_server_enforcement(env.url, enforced=False)
    try:
        yield
    finally:
        set_server_enforcement(env.url, enforced=True)


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _subnet(ec2: Any, vpc_id: str, cidr: str, zone: str, tags: dict[str, str]) -> str:
    return ec2.create_subnet(
        VpcId=vpc_id,
        CidrBlock=cidr,
        AvailabilityZone=zone,
        TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(tags)}],
    )["Subnet"]["SubnetId"]


def _register_ami(ec2: Any, key: tuple[str, str, str]) -> str:
    alias, arch, variant = key
    image_id = ec2.register_image(
        Name=f"{alias}-{variant}-{arch}", Description="EKS optimized (seeded)"
    )["ImageId"]
    set_ami_architecture(image_id, EC2_ARCH[arch])
    return image_id


def set_ami_architecture(image_id: str, architecture: str) -> None:
    embedded_aws.set_ami_architecture(REGION, image_id, architecture)


def seed_ssm_parameter(name: str, value: str) -> None:
    """Write a public ``/aws/service/...`` parameter as AWS publishes it."""
    embedded_aws.put_public_parameter(REGION, name, value)


def seed_spot_prices(monkeypatch: pytest.MonkeyPatch, prices: dict[tuple[str, str], str]) -> None:
    """moto answers DescribeSpotPriceHistory with $0.00001 for everything; serve these
    (instance type, zone) -> price entries instead, with a current timestamp."""

    def describe_spot_price_history(self: SpotInstances) -> ActionResult:
        wanted = set(self._get_param("InstanceTypes", []))
        history = [
            {
                "InstanceType": name,
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": price,
                "AvailabilityZone": zone,
                "Timestamp": utcnow().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            }
            for (name, zone), price in prices.items()
            if not wanted or name in wanted
        ]
        return ActionResult({"SpotPriceHistory": history})

    monkeypatch.setattr(SpotInstances, "describe_spot_price_history", describe_spot_price_history)


CLUSTER_INFO_KWARGS = {
    "name": CLUSTER,
    "endpoint": "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    "certificate_authority": "Q0EtREFUQQ==",
    "kubernetes_version": K8S_VERSION,
    "service_cidr": "172.20.0.0/16",
}


def nodeclass_dict(name: str = "default", **spec: Any) -> dict[str, Any]:
    """An EC2NodeClass selecting the seeded subnets and node group by discovery tag."""
    return testing.ec2nodeclass(name, cluster=CLUSTER, **{"role": ROLE, **spec})


class FleetRecorder:
    """Keeps the arguments of every CreateFleet call made through a client."""

    def __init__(self, ec2: Any) -> None:
        self.requests: list[dict[str, Any]] = []
        ec2.meta.events.register("provide-client-params.ec2.CreateFleet", self._record)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(json.loads(json.dumps(params)))


@dataclass
class Stand:
    """A provider wired to a seeded moto, with its classes and clock."""

    env: Env
    provider: AWSCloudProvider
    clock: FakeClock
    nodeclasses: dict[str, EC2NodeClass]
    outage: CapacityOutage
    fleets: FleetRecorder

    def add_nodeclass(self, name: str = "default", **spec: Any) -> EC2NodeClass:
        """Create (or replace) a class and resolve its status against moto."""

        nodeclass = EC2NodeClass.from_dict(nodeclass_dict(name, **spec))
        nodeclass.status = self.provider.resolve_nodeclass(nodeclass)
        self.nodeclasses[name] = nodeclass
        return nodeclass


def make_pricing(clients: AWSClients, catalogue: InstanceTypeCatalogue) -> PricingProvider:
    """Prices from moto (its Pricing API fails; spot history as moto or the test serves
    it) over the package's us-east-1 on-demand table, refreshed once."""
    pricing = PricingProvider(
        FakeClock(), REGION, pricing_client=clients.pricing, ec2=clients.ec2, infos=catalogue.infos
    )
    pricing.refresh_if_due()
    return pricing


def make_stand(env: Env, catalogue: InstanceTypeCatalogue, pricing: PricingProvider) -> Stand:

    clock = FakeClock()
    nodeclasses: dict[str, EC2NodeClass] = {}
    provider = AWSCloudProvider(
        env.controller,
        clock,
        ClusterInfo(**CLUSTER_INFO_KWARGS),
        REGION,
        nodeclasses.get,
        catalogue=catalogue,
        pricing=pricing,
    )
    zones = {
        s["SubnetId"]: s["AvailabilityZone"] for s in env.clients.ec2.describe_subnets()["Subnets"]
    }
    return Stand(
        env,
        provider,
        clock,
        nodeclasses,
        CapacityOutage(env.controller.ec2, zones),
        FleetRecorder(env.controller.ec2),
    )


def nodeclaim_dict(
    name: str,
    requirements: list[dict[str, Any]],
    nodepool: str = "default",
    nodeclass: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    claim = testing.nodeclaim(
        name,
        nodepool,
        requirements,
        requests={"cpu": "1", "memory": "1Gi"},
        labels={wk.EC2NODECLASS: nodeclass},
        nodeclass=nodeclass,
    )
    claim["spec"].update(spec)
    return claim
