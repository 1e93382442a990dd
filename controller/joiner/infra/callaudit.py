"""Every AWS call the controller makes, checked against the policy it ships.

``CallAudit.watch(client)`` hooks a boto3 client's events: before each call it works out
what AWS would authorize (``authorization.call_requests``: actions, resource ARNs and
conditions) and evaluates the policy (``policyeval``). A call the policy does not allow
fails as AWS fails it (AccessDenied) and is kept in ``denied``; ``used`` gathers every
action the calls needed, so a test can list the granted actions nothing needs. moto's
own enforcement checks only actions; this check covers resources and conditions, and
services moto does not serve (the Pricing API).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from joiner.infra.authorization import (
    Call,
    LaunchTemplateFacts,
    call_requests,
    tag_dict,
)
from joiner.infra.policyeval import Request, allowed

_DENIED = "joiner_audit_denied"  # key in botocore's per-call context


class CallAudit:
    def __init__(
        self, policy: Mapping[str, Any], facts: Any, account: str, partition: str = "aws"
    ) -> None:
        self.policy = policy
        self.facts = facts
        self.account = account
        self.partition = partition
        self.calls: list[Call] = []
        self.denied: list[tuple[Call, Request]] = []
        self.used: set[str] = set()

    def watch(self, *clients: Any) -> None:
        for client in clients:
            events = client.meta.events
            events.register("before-parameter-build", functools.partial(self._check, client))
            events.register("before-call", self._refuse)

    def _check(
        self, client: Any, params: Mapping[str, Any], model: Any, context: dict, **_: Any
    ) -> None:
        call = Call(
            model.service_model.signing_name,
            model.name,
            dict(params),
            client.meta.region_name,
            self.account,
            self.partition,
        )
        requests = call_requests(call, self.facts)
        self.calls.append(call)
        self.used.update(r.action for r in requests)
        denied = [r for r in requests if not allowed(self.policy, r)]
        self.denied.extend((call, r) for r in denied)
        context[_DENIED] = denied

    def _refuse(self, model: Any, context: dict, **_: Any) -> tuple[Any, dict] | None:
        denied: list[Request] = context.get(_DENIED) or []
        if not denied:
            return None
        message = "; ".join(f"{r.action} on {r.resource}" for r in denied)
        return _Forbidden(), {
            "Error": {"Code": "AccessDenied", "Message": f"the controller policy denies {message}"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    def report(self) -> list[str]:
        """One line per denied request: operation, action, resource."""
        return [
            f"{call.service}:{call.operation} needs {request.action} on {request.resource}"
            for call, request in self.denied
        ]


class _Forbidden:
    status_code = 403
    headers: dict[str, str] = {}


class BotoResourceFacts:
    """Facts about existing resources, read through clients of another principal."""

    def __init__(self, ec2: Any, iam: Any) -> None:
        self._ec2, self._iam = ec2, iam

    def instance_tags(self, instance_id: str) -> dict[str, str]:
        try:
            reservations = self._ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        except ClientError:
            return {}
        instances = [i for r in reservations for i in r["Instances"]]
        return tag_dict(instances[0].get("Tags")) if instances else {}

    def launch_template(self, name_or_id: str) -> LaunchTemplateFacts | None:
        key = "LaunchTemplateIds" if name_or_id.startswith("lt-") else "LaunchTemplateNames"
        try:
            (template,) = self._ec2.describe_launch_templates(**{key: [name_or_id]})[
                "LaunchTemplates"
            ]
            (version,) = self._ec2.describe_launch_template_versions(
                LaunchTemplateId=template["LaunchTemplateId"], Versions=["$Latest"]
            )["LaunchTemplateVersions"]
        except ClientError:
            return None
        data = version["LaunchTemplateData"]
        return LaunchTemplateFacts(
            template_id=template["LaunchTemplateId"],
            tags=tag_dict(template.get("Tags")),
            image_id=data.get("ImageId"),
            security_group_ids=data.get("SecurityGroupIds", []),
            instance_profile=(data.get("IamInstanceProfile") or {}).get("Name"),
            tag_specifications={
                spec["ResourceType"]: tag_dict(spec.get("Tags"))
                for spec in data.get("TagSpecifications", [])
            },
            capacity_reservation_id=(
                (data.get("CapacityReservationSpecification") or {}).get(
                    "CapacityReservationTarget"
                )
                or {}
            ).get("CapacityReservationId"),
        )

    def instance_profile(self, name: str) -> tuple[dict[str, str], list[str]] | None:
        try:
            profile = self._iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        except ClientError:
            return None
        return tag_dict(profile.get("Tags")), [role["Arn"] for role in profile.get("Roles", [])]

    def role_arn(self, name: str) -> str:
        return self._iam.get_role(RoleName=name)["Role"]["Arn"]
