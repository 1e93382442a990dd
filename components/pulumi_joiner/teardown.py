"""Clean teardown: on `pulumi destroy`, terminate every instance the controller launched for
the cluster and delete its launch templates and instance profiles, before the roles, the
queue and the cluster go. Nothing is left orphaned even if the controller could not drain.

The sweep is plain boto3 (tested against moto); ``NodeCleanup`` is a dynamic resource whose
delete runs it. The components order it: NodePools and the controller are deleted first, then
this, then the roles, queue and cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
import pulumi
import pulumi.dynamic
from joiner.api import labels as wk
from joiner.infra.iam import cluster_tag

LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
TERMINATE_BATCH = 500


@dataclass
class SweepReport:
    """What a sweep removed."""

    terminated_instances: list[str] = field(default_factory=list)
    deleted_launch_templates: list[str] = field(default_factory=list)
    deleted_instance_profiles: list[str] = field(default_factory=list)


def sweep_cluster(
    ec2: Any, iam: Any, cluster_name: str, wait: bool = True, waiter_delay: int = 15
) -> SweepReport:
    """Terminate the cluster's controller-launched instances (waiting for them when ``wait``),
    then delete its launch templates and instance profiles. Only resources tagged
    ``kubernetes.io/cluster/<cluster>=owned`` by the controller are touched."""
    report = SweepReport()
    report.terminated_instances = _terminate_instances(ec2, cluster_name, wait, waiter_delay)
    report.deleted_launch_templates = _delete_launch_templates(ec2, cluster_name)
    report.deleted_instance_profiles = _delete_instance_profiles(iam, cluster_name)
    return report


def _owned_filters(cluster_name: str, marker_tag: str) -> list[dict[str, Any]]:
    return [
        {"Name": f"tag:{cluster_tag(cluster_name)}", "Values": ["owned"]},
        {"Name": "tag-key", "Values": [marker_tag]},
    ]


def _terminate_instances(ec2: Any, cluster_name: str, wait: bool, delay: int) -> list[str]:
    filters = [
        *_owned_filters(cluster_name, wk.NODEPOOL),
        {"Name": "instance-state-name", "Values": LIVE_STATES},
    ]
    ids = [
        instance["InstanceId"]
        for page in ec2.get_paginator("describe_instances").paginate(Filters=filters)
        for reservation in page["Reservations"]
        for instance in reservation["Instances"]
    ]
    for start in range(0, len(ids), TERMINATE_BATCH):
        batch = ids[start : start + TERMINATE_BATCH]
        ec2.terminate_instances(InstanceIds=batch)
        if wait:
            # Templates and profiles stay in use until the instances are gone.
            ec2.get_waiter("instance_terminated").wait(
                InstanceIds=batch, WaiterConfig={"Delay": delay, "MaxAttempts": 80}
            )
    return ids


def _delete_launch_templates(ec2: Any, cluster_name: str) -> list[str]:
    filters = _owned_filters(cluster_name, wk.NODEPOOL)
    names = [
        template["LaunchTemplateName"]
        for page in ec2.get_paginator("describe_launch_templates").paginate(Filters=filters)
        for template in page["LaunchTemplates"]
    ]
    for template_name in names:
        ec2.delete_launch_template(LaunchTemplateName=template_name)
    return names


def _delete_instance_profiles(iam: Any, cluster_name: str) -> list[str]:
    deleted = []
    for page in iam.get_paginator("list_instance_profiles").paginate():
        for profile in page["InstanceProfiles"]:
            name = profile["InstanceProfileName"]
            # Listing omits tags; GetInstanceProfile has them.
            tags = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"].get(
                "Tags", []
            )
            if not _owned_by(tags, cluster_name):
                continue
            for role in profile.get("Roles", []):
                iam.remove_role_from_instance_profile(
                    InstanceProfileName=name, RoleName=role["RoleName"]
                )
            iam.delete_instance_profile(InstanceProfileName=name)
            deleted.append(name)
    return deleted


def _owned_by(tags: list[dict[str, str]], cluster_name: str) -> bool:
    values = {tag["Key"]: tag["Value"] for tag in tags}
    return values.get(cluster_tag(cluster_name)) == "owned" and wk.EC2NODECLASS in values


class _CleanupProvider(pulumi.dynamic.ResourceProvider):
    """Does nothing on create; sweeps the cluster on delete."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(
            id_=f"joiner-cleanup-{props['cluster_name']}", outs=props
        )

    def update(
        self, _id: str, _olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        session = boto3.session.Session(region_name=props["region"])
        report = sweep_cluster(session.client("ec2"), session.client("iam"), props["cluster_name"])
        pulumi.log.info(
            f"joiner cleanup of {props['cluster_name']}: terminated"
            f" {len(report.terminated_instances)} instances, deleted"
            f" {len(report.deleted_launch_templates)} launch templates and"
            f" {len(report.deleted_instance_profiles)} instance profiles"
        )


class NodeCleanup(pulumi.dynamic.Resource):
    """Sweeps the cluster's controller-launched EC2 resources when it is deleted. Make it
    depend on the roles, queue and cluster (so it goes before them) and make the controller
    depend on it (so the controller is stopped before the sweep)."""

    cluster_name: pulumi.Output[str]
    region: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        cluster_name: pulumi.Input[str],
        region: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            _CleanupProvider(), name, {"cluster_name": cluster_name, "region": region}, opts
        )
