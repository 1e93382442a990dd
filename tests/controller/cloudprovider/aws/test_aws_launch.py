"""Launching through CreateFleet against moto [SPEC 4]: capacity types, constraints on
every override, tags, launch templates, insufficient capacity, user data per family."""

from __future__ import annotations

import base64
import email
import tomllib
from typing import Any

import pytest
import yaml
from aws_moto_seed import (
    CLUSTER,
    Env,
    Stand,
    make_pricing,
    make_stand,
    nodeclaim_dict,
    seed_spot_prices,
)
from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.launchtemplates import block_device_mappings
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.types import InsufficientCapacityError, NodeClassNotReadyError

ZONE_B = "us-east-1b"


@pytest.fixture
def stand(env: Env, catalogue: InstanceTypeCatalogue, pricing: PricingProvider) -> Stand:
    made = make_stand(env, catalogue, pricing)
    made.add_nodeclass()
    return made


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def claim(name: str, *requirements: dict[str, Any], **spec: Any) -> NodeClaim:
    return NodeClaim.from_dict(nodeclaim_dict(name, list(requirements), **spec))


def instance(env: Env, nodeclaim: NodeClaim) -> dict[str, Any]:
    instance_id = nodeclaim.status.provider_id.rsplit("/", 1)[-1]
    return env.clients.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0][
        "Instances"
    ][0]


def tags_of(raw: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw or ()}


def template_data(env: Env, name: str) -> dict[str, Any]:
    versions = env.clients.ec2.describe_launch_template_versions(LaunchTemplateName=name)
    return versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]


def user_data(env: Env, stand: Stand) -> str:
    name = stand.fleets.requests[-1]["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"][
        "LaunchTemplateName"
    ]
    return base64.b64decode(template_data(env, name)["UserData"]).decode()


def test_on_demand_launch_returns_what_was_launched(stand: Stand, env: Env) -> None:
    launched = stand.provider.create(
        claim(
            "default-abcde",
            req(wk.INSTANCE_TYPE, "In", "m5.large", "m5.xlarge"),
            req(wk.CAPACITY_TYPE, "In", "on-demand"),
        )
    )
    described = instance(env, launched)
    zone = described["Placement"]["AvailabilityZone"]
    assert launched.status.provider_id == f"aws:///{zone}/{described['InstanceId']}"
    assert described["InstanceType"] == "m5.large"  # the cheapest override
    assert "InstanceLifecycle" not in described
    assert launched.status.image_id == env.amis[("al2023", "amd64", "standard")]
    assert launched.status.capacity == {
        "cpu": "2",
        "ephemeral-storage": "20Gi",
        "memory": "7577Mi",
        "pods": "29",
    }
    assert launched.status.allocatable == {
        "cpu": "1930m",
        "ephemeral-storage": "17Gi",
        "memory": "6903Mi",
        "pods": "29",
    }
    labels = launched.labels
    assert {
        k: labels[k]
        for k in (
            wk.INSTANCE_TYPE,
            wk.CAPACITY_TYPE,
            wk.ARCH,
            wk.OS,
            wk.NODEPOOL,
            wk.EC2NODECLASS,
            wk.INSTANCE_FAMILY,
            wk.INSTANCE_CPU,
            wk.REGION,
        )
    } == {
        wk.INSTANCE_TYPE: "m5.large",
        wk.CAPACITY_TYPE: "on-demand",
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.NODEPOOL: "default",
        wk.EC2NODECLASS: "default",
        wk.INSTANCE_FAMILY: "m5",
        wk.INSTANCE_CPU: "2",
        wk.REGION: "us-east-1",
    }
    assert labels[wk.ZONE] == zone
    assert labels[wk.ZONE_ID] == stand.provider.catalogue.zone_ids()[zone]
    request = stand.fleets.requests[-1]
    assert request["Type"] == "instant"
    assert request["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 1,
        "DefaultTargetCapacityType": "on-demand",
    }
    assert request["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}


def test_spot_is_preferred_and_priced_capacity_optimized(stand: Stand, env: Env) -> None:
    launched = stand.provider.create(
        claim("default-spot", req(wk.INSTANCE_TYPE, "In", "m5.large", "m5.xlarge"))
    )
    assert launched.labels[wk.CAPACITY_TYPE] == "spot"
    assert instance(env, launched)["InstanceLifecycle"] == "spot"
    request = stand.fleets.requests[-1]
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"


def test_zone_arch_and_capacity_constraints_hold_for_every_override(stand: Stand, env: Env) -> None:
    arm = {"m6g.large", "m6g.xlarge", "c6g.large", "t4g.medium"}
    launched = stand.provider.create(
        claim(
            "default-arm",
            req(wk.INSTANCE_TYPE, "In", *arm, "m5.large", "c5.large"),
            req(wk.ARCH, "In", "arm64"),
            req(wk.ZONE, "In", ZONE_B),
            req(wk.CAPACITY_TYPE, "In", "spot"),
        )
    )
    overrides = [
        o for c in stand.fleets.requests[-1]["LaunchTemplateConfigs"] for o in c["Overrides"]
    ]
    assert {o["InstanceType"] for o in overrides} == arm
    assert {o["SubnetId"] for o in overrides} == {env.subnets["b"]}
    priorities = [o["Priority"] for o in overrides]
    assert priorities == sorted(priorities)
    assert launched.labels[wk.ZONE] == ZONE_B
    assert launched.labels[wk.ARCH] == "arm64"
    assert launched.status.image_id == env.amis[("al2023", "arm64", "standard")]


def test_each_zone_uses_its_subnet_with_most_free_ips(stand: Stand, env: Env) -> None:
    stand.provider.create(claim("default-zones", req(wk.INSTANCE_TYPE, "In", "m5.large")))
    overrides = stand.fleets.requests[-1]["LaunchTemplateConfigs"][0]["Overrides"]
    assert sorted(o["SubnetId"] for o in overrides) == sorted(
        [env.subnets["a-big"], env.subnets["b"], env.subnets["c"]]
    )


def test_tags_on_instance_volume_and_network_interface(stand: Stand, env: Env) -> None:
    stand.add_nodeclass(tags={"team": "payments", "Name": "overridden"})
    launched = stand.provider.create(
        claim("default-tagged", req(wk.INSTANCE_TYPE, "In", "m5.large"))
    )
    described = instance(env, launched)
    pool_tags = {
        "team": "payments",
        "Name": "overridden",  # the class's own Name, on what the launch template tags
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
        "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    claim_tags = {**pool_tags, "karpenter.sh/nodeclaim": "default-tagged", "Name": "default-tagged"}
    assert tags_of(described["Tags"]) == claim_tags
    request = stand.fleets.requests[-1]
    assert {s["ResourceType"]: tags_of(s["Tags"]) for s in request["TagSpecifications"]} == {
        "instance": claim_tags,
        "volume": claim_tags,
        "fleet": claim_tags,
    }
    volume_ids = [m["Ebs"]["VolumeId"] for m in described["BlockDeviceMappings"]]
    volumes = env.clients.ec2.describe_volumes(VolumeIds=volume_ids)["Volumes"]
    # moto applies the launch template's volume tags (not the fleet's)
    assert [tags_of(v.get("Tags")) for v in volumes] == [pool_tags]
    name = request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
    specs = {
        s["ResourceType"]: tags_of(s["Tags"]) for s in template_data(env, name)["TagSpecifications"]
    }
    assert (specs["network-interface"], specs["volume"]) == (pool_tags, pool_tags)


def test_launch_templates_are_tagged_configured_and_reused(stand: Stand, env: Env) -> None:
    stand.provider.create(claim("default-one", req(wk.INSTANCE_TYPE, "In", "m5.large")))
    stand.provider.create(claim("default-two", req(wk.INSTANCE_TYPE, "In", "m5.large")))
    names = [
        r["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"]["LaunchTemplateName"]
        for r in stand.fleets.requests
    ]
    assert names[0] == names[1]
    templates = env.clients.ec2.describe_launch_templates()["LaunchTemplates"]
    assert [t["LaunchTemplateName"] for t in templates] == [names[0]]
    assert names[0].startswith(f"joiner/{CLUSTER}/")
    assert tags_of(templates[0]["Tags"]) == {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
        "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    data = template_data(env, names[0])
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 1,
        "HttpTokens": "required",
    }
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {
                "VolumeType": "gp3",
                "Encrypted": True,
                "DeleteOnTermination": True,
                "VolumeSize": 20,
            },
        }
    ]
    assert data["SecurityGroupIds"] == env.node_security_groups
    assert data["IamInstanceProfile"] == {
        "Name": stand.nodeclasses["default"].status["instanceProfile"]
    }
    # another pool gets its own template (its tags differ)
    stand.provider.create(
        claim("other-one", req(wk.INSTANCE_TYPE, "In", "m5.large"), nodepool="other")
    )
    assert len(env.clients.ec2.describe_launch_templates()["LaunchTemplates"]) == 2


def test_block_devices_joiner_cannot_use_as_written() -> None:
    """The API server takes a mapping without deviceName and a volumeSize of "Ti" (upstream's
    pattern); EC2 needs a device name, and sizes the volume itself when given none
    [docs/compatibility.md, block-device]."""
    mappings = [
        {"ebs": {"volumeSize": "20Gi"}},
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "Ti", "snapshotID": "snap-1"}},
        {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "2T"}},
    ]
    assert block_device_mappings(mappings) == [
        {"DeviceName": "/dev/xvdb", "Ebs": {"SnapshotId": "snap-1", "DeleteOnTermination": True}},
        {"DeviceName": "/dev/xvdc", "Ebs": {"VolumeSize": 1863, "DeleteOnTermination": True}},
    ]


def test_insufficient_capacity_falls_back_to_the_next_offering(stand: Stand) -> None:
    requirements = (
        req(wk.INSTANCE_TYPE, "In", "m5.large", "m5.xlarge"),
        req(wk.ZONE, "In", "us-east-1a"),
        req(wk.CAPACITY_TYPE, "In", "spot"),
    )
    stand.outage.exhausted.add(("m5.large", "us-east-1a", "spot"))
    launched = stand.provider.create(claim("default-ice", *requirements))
    assert launched.labels[wk.INSTANCE_TYPE] == "m5.xlarge"
    assert stand.provider.unavailable.is_unavailable("m5.large", "us-east-1a", "spot")
    nodeclass = stand.nodeclasses["default"]
    m5 = {it.name: it for it in stand.provider.instance_types_for(nodeclass)}["m5.large"]
    offering = [o for o in m5.offerings if o.zone == "us-east-1a" and o.capacity_type == "spot"]
    assert [o.available for o in offering] == [False]
    # the next launch does not even ask for the exhausted offering
    stand.provider.create(claim("default-ice-2", *requirements))
    overrides = stand.fleets.requests[-1]["LaunchTemplateConfigs"][0]["Overrides"]
    assert [o["InstanceType"] for o in overrides] == ["m5.xlarge"]
    stand.clock.advance(180)  # the cache forgets after 3 minutes
    m5 = {it.name: it for it in stand.provider.instance_types_for(nodeclass)}["m5.large"]
    assert all(o.available for o in m5.offerings)


def test_no_capacity_anywhere_raises_and_marks_everything(stand: Stand) -> None:
    stand.outage.exhausted.update(
        {("m5.large", "us-east-1a", "spot"), ("m5.large", "us-east-1b", "spot")}
    )
    with pytest.raises(InsufficientCapacityError, match=r"InsufficientInstanceCapacity m5\.large"):
        stand.provider.create(
            claim(
                "default-dry",
                req(wk.INSTANCE_TYPE, "In", "m5.large"),
                req(wk.ZONE, "In", "us-east-1a", "us-east-1b"),
                req(wk.CAPACITY_TYPE, "In", "spot"),
            )
        )
    assert stand.provider.unavailable.is_unavailable("m5.large", "us-east-1a", "spot")
    assert stand.provider.unavailable.is_unavailable("m5.large", "us-east-1b", "spot")
    with pytest.raises(InsufficientCapacityError, match="no available offering"):
        stand.provider.create(
            claim(
                "default-dry-2",
                req(wk.INSTANCE_TYPE, "In", "m5.large"),
                req(wk.ZONE, "In", "us-east-1a"),
                req(wk.CAPACITY_TYPE, "In", "spot"),
            )
        )


def test_exotic_types_only_when_asked_for(stand: Stand, env: Env) -> None:
    # g4dn.xlarge ($0.526) is cheaper than m5.4xlarge ($0.768) but has a GPU
    ordinary = stand.provider.create(
        claim(
            "default-plain",
            req(wk.INSTANCE_TYPE, "In", "g4dn.xlarge", "m5.4xlarge"),
            req(wk.CAPACITY_TYPE, "In", "on-demand"),
        )
    )
    assert ordinary.labels[wk.INSTANCE_TYPE] == "m5.4xlarge"
    gpu = stand.provider.create(
        claim(
            "default-gpu",
            req(wk.INSTANCE_TYPE, "In", "g4dn.xlarge", "m5.4xlarge"),
            req(wk.CAPACITY_TYPE, "In", "on-demand"),
            req(wk.INSTANCE_GPU_COUNT, "Exists"),
        )
    )
    assert gpu.labels[wk.INSTANCE_TYPE] == "g4dn.xlarge"
    assert gpu.status.image_id == env.amis[("al2023", "amd64", "nvidia")]
    assert gpu.status.capacity["nvidia.com/gpu"] == "1"


def test_spot_dearer_than_on_demand_is_dropped(
    env: Env, catalogue: InstanceTypeCatalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_spot_prices(
        monkeypatch, {("m5.large", "us-east-1a"): "0.2", ("m5.xlarge", "us-east-1a"): "0.09"}
    )
    stand = make_stand(env, catalogue, make_pricing(env.controller, catalogue))
    stand.add_nodeclass()
    launched = stand.provider.create(
        claim(
            "default-dear",
            req(wk.INSTANCE_TYPE, "In", "m5.large", "m5.xlarge"),
            req(wk.ZONE, "In", "us-east-1a"),
        )
    )
    overrides = stand.fleets.requests[-1]["LaunchTemplateConfigs"][0]["Overrides"]
    # m5.large spot ($0.2) is dearer than m5.large on-demand ($0.096): only m5.xlarge spot remains
    assert [(o["InstanceType"], o["Priority"]) for o in overrides] == [("m5.xlarge", 0.09)]
    assert launched.labels[wk.CAPACITY_TYPE] == "spot"


def test_class_not_ready_or_missing(stand: Stand) -> None:
    stand.add_nodeclass("broken", role="no-such-role")
    with pytest.raises(NodeClassNotReadyError, match="IAM role 'no-such-role' not found"):
        stand.provider.create(
            claim("broken-1", req(wk.INSTANCE_TYPE, "In", "m5.large"), nodeclass="broken")
        )
    with pytest.raises(NodeClassNotReadyError, match="EC2NodeClass 'ghost' not found"):
        stand.provider.create(
            claim("ghost-1", req(wk.INSTANCE_TYPE, "In", "m5.large"), nodeclass="ghost")
        )


TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


def test_al2023_user_data_is_a_merged_nodeconfig(stand: Stand, env: Env) -> None:
    stand.add_nodeclass(
        userData="#!/bin/bash\necho hello\n", kubelet={"kubeReserved": {"cpu": "100m"}}
    )
    stand.provider.create(
        claim(
            "default-ud",
            req(wk.INSTANCE_TYPE, "In", "m5.large"),
            req(wk.CAPACITY_TYPE, "In", "on-demand"),
            taints=[TAINT],
        )
    )
    message = email.message_from_string(user_data(env, stand))
    parts = [
        (p.get_content_type(), p.get_payload()) for p in message.walk() if not p.is_multipart()
    ]
    assert [t for t, _ in parts] == ["application/node.eks.aws", "text/x-shellscript"]
    assert parts[1][1].strip() == "#!/bin/bash\necho hello"
    config = yaml.safe_load(parts[0][1])
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["cluster"] == {
        "name": CLUSTER,
        "apiServerEndpoint": "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
        "certificateAuthority": "Q0EtREFUQQ==",
        "cidr": "172.20.0.0/16",
    }
    kubelet = config["spec"]["kubelet"]
    assert kubelet["config"]["maxPods"] == 29
    assert kubelet["config"]["clusterDNS"] == ["172.20.0.10"]
    assert kubelet["config"]["kubeReserved"] == {"cpu": "100m"}
    assert kubelet["config"]["registerWithTaints"] == [
        TAINT,
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]
    assert kubelet["flags"] == [
        "--node-labels=karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,"
        "karpenter.sh/nodepool=default"
    ]


def test_bottlerocket_user_data_is_merged_toml(stand: Stand, env: Env) -> None:
    stand.add_nodeclass(
        amiSelectorTerms=[{"alias": "bottlerocket@latest"}],
        userData=(
            '[settings.kernel]\nlockdown = "integrity"\n'
            '[settings.kubernetes]\ncluster-name = "wrong"\n'
        ),
    )
    launched = stand.provider.create(
        claim("default-br", req(wk.INSTANCE_TYPE, "In", "m6g.large"), taints=[TAINT])
    )
    assert launched.status.image_id == env.amis[("bottlerocket", "arm64", "standard")]
    settings = tomllib.loads(user_data(env, stand))["settings"]
    assert settings["kernel"] == {"lockdown": "integrity"}
    kubernetes = settings["kubernetes"]
    assert kubernetes["cluster-name"] == CLUSTER
    assert kubernetes["api-server"] == "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com"
    assert kubernetes["cluster-certificate"] == "Q0EtREFUQQ=="
    assert kubernetes["cluster-dns-ip"] == "172.20.0.10"
    assert kubernetes["max-pods"] == 29
    assert kubernetes["node-labels"]["karpenter.sh/nodepool"] == "default"
    assert kubernetes["node-taints"] == {
        "dedicated": ["batch:NoSchedule"],
        "karpenter.sh/unregistered": [":NoExecute"],
    }


def test_al2_user_data_runs_bootstrap_sh(stand: Stand, env: Env) -> None:
    stand.add_nodeclass(amiSelectorTerms=[{"alias": "al2@latest"}], kubelet={"maxPods": 20})
    stand.provider.create(
        claim("default-al2", req(wk.INSTANCE_TYPE, "In", "m5.large"), taints=[TAINT])
    )
    text = user_data(env, stand)
    script = [
        p.get_payload() for p in email.message_from_string(text).walk() if not p.is_multipart()
    ][-1]
    bootstrap = script.splitlines()[-1]
    assert bootstrap.startswith(f"/etc/eks/bootstrap.sh {CLUSTER} --apiserver-endpoint ")
    assert (
        "--b64-cluster-ca Q0EtREFUQQ== --dns-cluster-ip 172.20.0.10 --use-max-pods false"
        in bootstrap
    )
    assert "--max-pods=20" in bootstrap
    assert (
        "--register-with-taints=dedicated=batch:NoSchedule,karpenter.sh/unregistered=:NoExecute"
        in bootstrap
    )
    assert "karpenter.sh/nodepool=default" in bootstrap


def _throttled(**_: Any) -> tuple[Any, dict[str, Any]]:
    class Http:
        status_code = 503
        headers: dict[str, str] = {}

    return Http(), {
        "Error": {"Code": "RequestLimitExceeded", "Message": "Request limit exceeded."},
        "ResponseMetadata": {"HTTPStatusCode": 503},
    }


def create_hooked(stand: Stand, env: Env, name: str, event: str, hook: Any) -> NodeClaim:
    """Launch an m5.large with ``hook`` on the controller's EC2 client for ``event``."""
    events = env.controller.ec2.meta.events
    events.register(event, hook)
    try:
        return stand.provider.create(claim(name, req(wk.INSTANCE_TYPE, "In", "m5.large")))
    finally:
        events.unregister(event, hook)


def test_a_launch_is_described_from_createfleet_answer_not_by_describing(
    stand: Stand, env: Env
) -> None:
    """A throttled DescribeInstances right after the launch must not fail the launch:
    the NodeClaim would launch a second instance."""
    launched = create_hooked(
        stand, env, "default-fleet", "before-call.ec2.DescribeInstances", _throttled
    )
    described = instance(env, launched)
    zone = described["Placement"]["AvailabilityZone"]
    assert launched.status.provider_id == f"aws:///{zone}/{described['InstanceId']}"
    assert (launched.labels[wk.INSTANCE_TYPE], launched.labels[wk.ZONE]) == ("m5.large", zone)
    assert launched.status.image_id == described["ImageId"]
    assert len(stand.fleets.requests) == 1


def test_an_answer_that_does_not_say_what_launched_is_described(stand: Stand, env: Env) -> None:
    def without_overrides(parsed: dict[str, Any], **_: Any) -> None:
        for entry in parsed.get("Instances", ()):
            entry.pop("LaunchTemplateAndOverrides", None)

    launched = create_hooked(
        stand, env, "default-bare", "after-call.ec2.CreateFleet", without_overrides
    )
    described = instance(env, launched)
    assert launched.labels[wk.ZONE] == described["Placement"]["AvailabilityZone"]
    assert launched.status.image_id == described["ImageId"]
