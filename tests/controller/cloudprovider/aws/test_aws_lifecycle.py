"""After launch: get/list by cluster tags, delete, drift, garbage collection and the
cleanup of launch templates and instance profiles [SPEC 4, 6.3, 7.6]."""

from __future__ import annotations

import copy

import pytest
from aws_moto_seed import CLUSTER, Env, Stand, make_stand, nodeclaim_dict
from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.launchtemplates import UNUSED_TTL_SECONDS
from joiner.cloudprovider.aws.pricing import PricingProvider
from joiner.cloudprovider.aws.provider import LISTING_FRESH_SECONDS
from joiner.cloudprovider.aws.tags import cluster_tag
from joiner.cloudprovider.types import NodeClaimNotFoundError
from joiner.controllers.garbagecollection import GarbageCollection
from joiner.kube.memory import MemoryKube
from joiner.state.cluster import ClusterState

M5 = {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}


@pytest.fixture
def stand(env: Env, catalogue: InstanceTypeCatalogue, pricing: PricingProvider) -> Stand:
    made = make_stand(env, catalogue, pricing)
    made.add_nodeclass()
    return made


def launch(stand: Stand, name: str) -> NodeClaim:
    return stand.provider.create(NodeClaim.from_dict(nodeclaim_dict(name, [M5])))


def state(env: Env, nodeclaim: NodeClaim) -> str:
    instance_id = nodeclaim.status.provider_id.rsplit("/", 1)[-1]
    reservations = env.clients.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return reservations[0]["Instances"][0]["State"]["Name"]


def test_get_and_list_find_the_cluster_instances(stand: Stand, env: Env) -> None:
    first, second = launch(stand, "default-1"), launch(stand, "default-2")
    env.clients.ec2.run_instances(ImageId=first.status.image_id, MinCount=1, MaxCount=1)  # not ours
    got = stand.provider.get(first.status.provider_id)
    assert got.name == "default-1"
    assert got.node_class_ref.name == "default"
    assert got.status.provider_id == first.status.provider_id
    assert got.status.image_id == first.status.image_id
    assert got.status.allocatable == first.status.allocatable
    assert {
        k: got.labels[k] for k in (wk.NODEPOOL, wk.INSTANCE_TYPE, wk.CAPACITY_TYPE, wk.ZONE)
    } == {k: first.labels[k] for k in (wk.NODEPOOL, wk.INSTANCE_TYPE, wk.CAPACITY_TYPE, wk.ZONE)}
    assert sorted(n.name for n in stand.provider.list()) == ["default-1", "default-2"]
    assert second.status.provider_id in {n.status.provider_id for n in stand.provider.list()}
    with pytest.raises(NodeClaimNotFoundError):
        stand.provider.get("aws:///us-east-1a/i-0000000000000000")


def test_delete_terminates_and_then_reports_not_found(stand: Stand, env: Env) -> None:
    launched = launch(stand, "default-del")
    stand.provider.delete(launched)
    assert state(env, launched) == "terminated"
    with pytest.raises(NodeClaimNotFoundError):
        stand.provider.delete(launched)
    with pytest.raises(NodeClaimNotFoundError):
        stand.provider.get(launched.status.provider_id)
    assert stand.provider.list() == []


def test_drift_reasons(stand: Stand, env: Env) -> None:
    launched = launch(stand, "default-drift")
    nodeclass = stand.nodeclasses["default"]
    assert stand.provider.is_drifted(launched) is None
    original = copy.deepcopy(nodeclass.status)

    nodeclass.status["amis"] = [{"id": "ami-0123456789abcdef0", "name": "new", "requirements": []}]
    assert stand.provider.is_drifted(launched) == "AMIDrift"
    nodeclass.status = copy.deepcopy(original)

    instance_subnet = [s for s in original["subnets"] if s["id"] != env.subnets["c"]]
    nodeclass.status["subnets"] = [
        s for s in original["subnets"] if s["id"] not in {x["id"] for x in instance_subnet}
    ]
    assert stand.provider.is_drifted(launched) == "SubnetDrift"
    nodeclass.status = copy.deepcopy(original)

    drifted = stand.add_nodeclass(securityGroupSelectorTerms=[{"id": env.other_security_group}])
    assert drifted.status["securityGroups"] == [
        {"id": env.other_security_group, "name": "other-nodes"}
    ]
    assert stand.provider.is_drifted(launched) == "SecurityGroupDrift"

    stand.add_nodeclass(tags={"team": "new"})  # a static field changed
    assert stand.provider.is_drifted(launched) == "NodeClassDrift"
    stand.add_nodeclass()
    assert stand.provider.is_drifted(launched) is None


def test_garbage_collection_of_instances_without_nodeclaims(stand: Stand, env: Env) -> None:
    """The core GC controller over this provider: an instance no NodeClaim knows is
    terminated once seen for 30 s of the injected clock (moto's launch times come from
    the wall clock, so age must not be read from them)."""
    known, orphan = launch(stand, "default-known"), launch(stand, "default-orphan")
    cluster = ClusterState(stand.clock)
    cluster.apply("ADDED", known.to_dict())
    gc = GarbageCollection(MemoryKube(stand.clock), cluster, stand.provider, stand.clock)
    gc.reconcile("gc")
    stand.clock.advance(29)
    gc.reconcile("gc")
    assert state(env, orphan) == "running"
    stand.clock.advance(1)
    gc.reconcile("gc")
    assert state(env, orphan) in ("shutting-down", "terminated")
    assert state(env, known) == "running"


def test_unused_launch_templates_and_deleted_classes_are_cleaned_up(stand: Stand, env: Env) -> None:
    launch(stand, "default-lt")
    ec2 = env.clients.ec2
    assert len(ec2.describe_launch_templates()["LaunchTemplates"]) == 1
    stand.clock.advance(UNUSED_TTL_SECONDS - 1)
    assert stand.provider.launch_templates.delete_unused() == []
    stand.clock.advance(1)
    assert len(stand.provider.launch_templates.delete_unused()) == 1
    assert ec2.describe_launch_templates()["LaunchTemplates"] == []
    launch(stand, "default-lt-2")  # recreated on demand
    nodeclass = stand.nodeclasses["default"]
    profile = nodeclass.status["instanceProfile"]
    stand.provider.finalize_nodeclass(nodeclass)
    assert ec2.describe_launch_templates()["LaunchTemplates"] == []
    with pytest.raises(env.clients.iam.exceptions.NoSuchEntityException):
        env.clients.iam.get_instance_profile(InstanceProfileName=profile)
    assert profile.startswith(CLUSTER)


def test_launches_sweep_owned_templates_unused_for_an_hour(stand: Stand, env: Env) -> None:
    """A template of ours that no launch uses (e.g. left by an older configuration) is
    deleted an hour after a launch first saw it; the one in use stays, and so does one
    with the cluster's tag but no NodePool's, which the controller policy does not let it
    delete (the sweep never tries: every call is checked against the policy)."""
    ec2 = env.clients.ec2
    launch(stand, "default-first")
    (in_use,) = ec2.describe_launch_templates()["LaunchTemplates"]
    for name, tags in (
        ("joiner-stale", {cluster_tag(CLUSTER): "owned", wk.NODEPOOL: "default"}),
        ("not-for-a-nodepool", {cluster_tag(CLUSTER): "owned"}),
    ):
        ec2.create_launch_template(
            LaunchTemplateName=name,
            LaunchTemplateData={"ImageId": in_use.get("ImageId", "ami-12345678")},
            TagSpecifications=[
                {
                    "ResourceType": "launch-template",
                    "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                }
            ],
        )
    stand.clock.advance(UNUSED_TTL_SECONDS)
    launch(stand, "default-second")  # first sweep: the stale template is first seen now
    names = sorted(
        t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]
    )
    assert names == sorted([in_use["LaunchTemplateName"], "joiner-stale", "not-for-a-nodepool"])
    stand.clock.advance(UNUSED_TTL_SECONDS)
    launch(stand, "default-third")
    names = sorted(
        t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]
    )
    assert names == sorted([in_use["LaunchTemplateName"], "not-for-a-nodepool"])
    assert env.audit.report() == []


def test_mark_unavailable_keeps_an_offering_out_for_three_minutes(stand: Stand) -> None:
    nodeclass = stand.nodeclasses["default"]

    def spot_1a_available() -> bool:
        m5 = {it.name: it for it in stand.provider.instance_types_for(nodeclass)}["m5.large"]
        return next(
            o.available for o in m5.offerings if (o.zone, o.capacity_type) == ("us-east-1a", "spot")
        )

    assert spot_1a_available()
    stand.provider.mark_unavailable("m5.large", "us-east-1a", "spot")
    assert not spot_1a_available()
    stand.clock.advance(179)
    assert not spot_1a_available()
    stand.clock.advance(1)
    assert spot_1a_available()


def test_a_template_deleted_behind_our_back_is_recreated(stand: Stand, env: Env) -> None:
    launch(stand, "default-a")
    (template,) = env.clients.ec2.describe_launch_templates()["LaunchTemplates"]
    env.clients.ec2.delete_launch_template(LaunchTemplateName=template["LaunchTemplateName"])
    assert launch(stand, "default-b").status.provider_id
    names = [
        t["LaunchTemplateName"]
        for t in env.clients.ec2.describe_launch_templates()["LaunchTemplates"]
    ]
    assert names == [template["LaunchTemplateName"]]


def test_drift_reads_a_fresh_listing_and_describes_once_it_is_stale(stand: Stand, env: Env) -> None:
    launched = launch(stand, "default-listed")
    assert stand.provider.list() != []
    instance_id = launched.status.provider_id.rsplit("/", 1)[-1]
    env.clients.ec2.modify_instance_attribute(
        InstanceId=instance_id, Groups=[env.other_security_group]
    )
    assert stand.provider.is_drifted(launched) is None  # the listing from just now
    stand.clock.advance(LISTING_FRESH_SECONDS + 1)
    assert stand.provider.is_drifted(launched) == "SecurityGroupDrift"
