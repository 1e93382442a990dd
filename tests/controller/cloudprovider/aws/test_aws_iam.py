"""The controller policy it ships, against the calls its code makes (issue #18): every
AWS test runs as a principal holding exactly the rendered policy, moto enforcing the
actions and the audit (joiner.infra.callaudit) every resource and condition. Here one
walk through every code path that talks to AWS shows that nothing is granted that no
call needs, and nothing needed is missing."""

from __future__ import annotations

import pytest
from aws_moto_seed import (
    ACCOUNT,
    CLUSTER,
    CONTROLLER_POLICY,
    K8S_VERSION,
    QUEUE,
    Env,
    Keys,
    client,
    make_pricing,
    make_stand,
    moto_unenforced,
    nodeclaim_dict,
)
from botocore.exceptions import ClientError
from joiner.api import labels as wk
from joiner.api.nodeclaim import NodeClaim
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.instancetypes import InstanceTypeCatalogue
from joiner.cloudprovider.aws.launchtemplates import UNUSED_TTL_SECONDS
from joiner.controllers.interruption.instancestatus import InstanceStatusPoller
from joiner.controllers.interruption.queue import SQSQueue
from joiner.infra.callaudit import CallAudit
from joiner.infra.policyeval import granted_actions

M5 = {"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}


class RunningInstance:
    """The interruption controller's side of the poller: one NodeClaim's instance, whose
    status must not be a reason to act (it is running and healthy)."""

    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id

    def claims_by_instance(self) -> dict[str, str]:
        return {self.instance_id: "default-1"}

    def handle(self, message: object, claims: object) -> None:
        raise AssertionError(f"a healthy running instance was reported: {message}")


def walk_the_controllers_aws_calls(env: Env, catalogue: InstanceTypeCatalogue) -> None:
    """Start-up, a class resolved (with a capacity reservation) and finalized, a launch,
    listing, termination, the template sweep, the interruption queue and the
    instance-status poll."""
    eks, sqs = client(env, "eks", env.controller_keys), client(env, "sqs", env.controller_keys)
    env.audit.watch(eks, sqs)
    client(env, "eks", env.admin_keys).create_cluster(
        name=CLUSTER,
        version=K8S_VERSION,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/cluster",
        resourcesVpcConfig={"subnetIds": sorted(env.subnets.values())},
    )
    with moto_unenforced(env):
        assert ClusterInfo.from_eks(eks, CLUSTER).name == CLUSTER
    stand = make_stand(env, catalogue, make_pricing(env.controller, catalogue))
    reservation = env.clients.ec2.create_capacity_reservation(
        InstanceType="m5.large",
        InstancePlatform="Linux/UNIX",
        AvailabilityZone="us-east-1a",
        InstanceCount=1,
    )["CapacityReservation"]["CapacityReservationId"]
    nodeclass = stand.add_nodeclass(capacityReservationSelectorTerms=[{"id": reservation}])
    assert [r["id"] for r in nodeclass.status["capacityReservations"]] == [reservation]
    launched = stand.provider.create(NodeClaim.from_dict(nodeclaim_dict("default-1", [M5])))
    assert launched.labels[wk.CAPACITY_RESERVATION_ID] == reservation  # a launch into it
    assert [n.name for n in stand.provider.list()] == ["default-1"]
    instance_id = launched.status.provider_id.rsplit("/", 1)[-1]
    poller = InstanceStatusPoller(env.controller.ec2, interruption=RunningInstance(instance_id))
    poller.reconcile("poll")  # DescribeInstanceStatus: the instance runs, nothing to handle
    stand.provider.delete(launched)
    stand.clock.advance(UNUSED_TTL_SECONDS)
    assert len(stand.provider.launch_templates.delete_unused()) == 1
    stand.provider.finalize_nodeclass(nodeclass)
    admin_sqs = client(env, "sqs", env.admin_keys)
    url = admin_sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    admin_sqs.send_message(QueueUrl=url, MessageBody="{}")
    queue = SQSQueue(sqs, QUEUE)
    messages = queue.receive(0)
    assert len(messages) == 1
    queue.delete(messages)


def test_every_granted_action_is_called_and_every_call_is_granted(
    env: Env, catalogue: InstanceTypeCatalogue, session_audit: CallAudit
) -> None:
    walk_the_controllers_aws_calls(env, catalogue)
    assert env.audit.report() == []
    assert session_audit.report() == []
    used = env.audit.used | session_audit.used
    granted = granted_actions(CONTROLLER_POLICY)
    assert sorted(granted - used) == []  # granted, yet no code path needs it
    assert sorted(used - granted) == []


def test_moto_refuses_a_key_it_does_not_know(env: Env) -> None:
    """moto's enforcement is on while a test runs: an unknown signer is refused."""
    ec2 = client(env, "ec2", Keys("AKIAUNKNOWN000000000", "secret"))
    with pytest.raises(ClientError) as refused:
        ec2.describe_subnets()
    assert refused.value.response["Error"]["Code"] == "AuthFailure"


def test_moto_refuses_an_action_the_policy_does_not_grant(env: Env) -> None:
    """...and the controller's key may do what its policy grants, nothing else."""
    ec2 = client(env, "ec2", env.controller_keys)
    assert ec2.describe_subnets()["Subnets"]
    with pytest.raises(ClientError) as refused:
        ec2.create_vpc(CidrBlock="10.1.0.0/16")
    assert refused.value.response["Error"]["Code"] in ("AccessDenied", "UnauthorizedOperation")
