"""What AWS authorizes for each call the controller makes: the IAM requests (action,
resource ARN, request context) one API call is checked against, after the Service
Authorization Reference. ``call_requests`` raises for an operation it does not model, so a
new call cannot slip past the check of the controller policy (``callaudit``).

Besides the action of the operation itself, AWS checks dependent actions:
- CreateFleet (type instant) launches through RunInstances: ``ec2:CreateFleet`` and
  ``ec2:RunInstances`` on the fleet, every created instance, volume, network interface
  (and spot request for spot) with their request tags, and on every referenced launch
  template (with its tags), image, subnet and security group; ``ec2:CreateTags`` for the
  tags applied at creation (``ec2:CreateAction`` CreateFleet for the fleet, RunInstances
  for what it launches); ``iam:PassRole`` of the launch template's instance profile role
  (to ec2.amazonaws.com).
- CreateLaunchTemplate with tags: ``ec2:CreateTags`` (``ec2:CreateAction``
  CreateLaunchTemplate).
- CreateInstanceProfile with tags: ``iam:TagInstanceProfile`` (the new profile's tags are
  its request tags, and its resource tags once created).
- AddRoleToInstanceProfile: ``iam:PassRole`` of the role (an instance profile exists to
  hand its role to EC2).
- DeleteMessageBatch is authorized as ``sqs:DeleteMessage``.

Tags of existing resources (``aws:ResourceTag/...``) and the launch template's contents
come from ``ResourceFacts``, read by a principal other than the audited one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from joiner.infra.policyeval import Request

EC2_SERVICE = "ec2.amazonaws.com"
# Resource types CreateFleet creates, and which TagSpecifications tag them.
FLEET_CREATED = ("instance", "volume", "network-interface")


@dataclass(frozen=True)
class Call:
    """One API call as the client made it."""

    service: str  # the signing name: ec2, ssm, iam, pricing, sqs, eks
    operation: str  # e.g. DescribeSubnets
    params: Mapping[str, Any]
    region: str
    account: str
    partition: str = "aws"


@dataclass(frozen=True)
class LaunchTemplateFacts:
    template_id: str
    tags: Mapping[str, str]
    image_id: str | None
    security_group_ids: Sequence[str]
    instance_profile: str | None
    tag_specifications: Mapping[str, Mapping[str, str]]  # resource type -> tags
    capacity_reservation_id: str | None = None  # the reservation a launch goes into


class ResourceFacts(Protocol):
    """What the audit must know of existing resources (read with other credentials)."""

    def instance_tags(self, instance_id: str) -> Mapping[str, str]: ...

    def launch_template(self, name_or_id: str) -> LaunchTemplateFacts | None: ...

    def instance_profile(self, name: str) -> tuple[Mapping[str, str], list[str]] | None:
        """(tags, role ARNs) of an instance profile, None when it does not exist."""
        ...

    def role_arn(self, name: str) -> str: ...


def tag_dict(tags: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or ()}


def tag_context(prefix: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """``aws:RequestTag/k`` (or ``aws:ResourceTag/k``) for every tag."""
    return {f"aws:{prefix}/{key}": value for key, value in tags.items()}


def _tag_specs(specs: Iterable[Mapping[str, Any]] | None) -> dict[str, dict[str, str]]:
    return {s["ResourceType"]: tag_dict(s.get("Tags")) for s in specs or ()}


class _Model:
    """The requests of one call; ``requests()`` dispatches on the operation."""

    def __init__(self, call: Call, facts: ResourceFacts) -> None:
        self.call, self.facts, self.params = call, facts, call.params
        self.base = {"aws:RequestedRegion": call.region}

    def requests(self) -> list[Request]:
        handler = _HANDLERS.get((self.call.service, self.call.operation))
        if handler is None:
            if self.call.service == "ec2" and self.call.operation.startswith("Describe"):
                return [self.request(f"ec2:{self.call.operation}", "*")]
            raise ValueError(
                f"{self.call.service}:{self.call.operation} is not modelled in "
                "joiner.infra.authorization: add what AWS checks for it"
            )
        return handler(self)

    # --- helpers --------------------------------------------------------------------

    def request(self, action: str, resource: str, **context: Any) -> Request:
        return Request(action, resource, {**self.base, **context})

    def arn(self, service: str, resource: str, region: str | None = None, account: str = "") -> str:
        region = self.call.region if region is None else region
        return f"arn:{self.call.partition}:{service}:{region}:{account}:{resource}"

    def ec2_arn(self, resource: str) -> str:
        account = "" if resource.startswith(("image/", "snapshot/")) else self.call.account
        return self.arn("ec2", resource, account=account)

    def iam_arn(self, resource: str) -> str:
        return self.arn("iam", resource, region="", account=self.call.account)

    def pass_role(self, role_arn: str) -> Request:
        return self.request("iam:PassRole", role_arn, **{"iam:PassedToService": EC2_SERVICE})

    # --- EC2 ------------------------------------------------------------------------

    def create_launch_template(self) -> list[Request]:
        tags = _tag_specs(self.params.get("TagSpecifications")).get("launch-template", {})
        created = self.ec2_arn("launch-template/*")
        requests = [
            self.request("ec2:CreateLaunchTemplate", created, **tag_context("RequestTag", tags))
        ]
        if tags:
            requests.append(self._create_tags(created, tags, "CreateLaunchTemplate"))
        return requests

    def _create_tags(self, resource: str, tags: Mapping[str, str], action: str) -> Request:
        return self.request(
            "ec2:CreateTags",
            resource,
            **tag_context("RequestTag", tags),
            **{"ec2:CreateAction": action, "aws:TagKeys": sorted(tags)},
        )

    def delete_launch_template(self) -> list[Request]:
        name = self.params.get("LaunchTemplateId") or self.params["LaunchTemplateName"]
        template = self.facts.launch_template(name)
        template_id = template.template_id if template else "*"
        tags = template.tags if template else {}
        arn = self.ec2_arn(f"launch-template/{template_id}")
        return [self.request("ec2:DeleteLaunchTemplate", arn, **tag_context("ResourceTag", tags))]

    def terminate_instances(self) -> list[Request]:
        return [
            self.request(
                "ec2:TerminateInstances",
                self.ec2_arn(f"instance/{instance_id}"),
                **tag_context("ResourceTag", self.facts.instance_tags(instance_id)),
            )
            for instance_id in self.params["InstanceIds"]
        ]

    def create_fleet(self) -> list[Request]:
        specs = _tag_specs(self.params.get("TagSpecifications"))
        referenced, created_tags, roles = self._fleet_templates()
        for kind, tags in specs.items():
            created_tags.setdefault(kind, {}).update(tags)
        spot = self.params["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
        created = [*FLEET_CREATED, "spot-instances-request"] if spot else list(FLEET_CREATED)
        fleet_tags = specs.get("fleet", {})
        fleet = self.ec2_arn("fleet/*")
        requests = [self.request("ec2:CreateFleet", fleet, **tag_context("RequestTag", fleet_tags))]
        for action in ("ec2:CreateFleet", "ec2:RunInstances"):
            for kind in created:
                # a spot request carries no tags of its own here: it is the instance's
                tags = created_tags.get(kind, created_tags.get("instance", {}))
                arn = self.ec2_arn(f"{kind}/*")
                requests.append(self.request(action, arn, **tag_context("RequestTag", tags)))
            for arn, tags in referenced:
                requests.append(self.request(action, arn, **tag_context("ResourceTag", tags)))
        if fleet_tags:
            requests.append(self._create_tags(fleet, fleet_tags, "CreateFleet"))
        requests += [
            self._create_tags(self.ec2_arn(f"{kind}/*"), created_tags[kind], "RunInstances")
            for kind in created
            if created_tags.get(kind)
        ]
        return requests + [self.pass_role(arn) for arn in sorted(roles)]

    def _fleet_templates(
        self,
    ) -> tuple[list[tuple[str, Mapping[str, str]]], dict[str, dict[str, str]], set[str]]:
        """What the fleet's launch templates bring: the resources a launch references
        (ARN, resource tags), the tags of what it creates, the roles it passes."""
        referenced: list[tuple[str, Mapping[str, str]]] = []
        created_tags: dict[str, dict[str, str]] = {}
        roles: set[str] = set()
        for config in self.params["LaunchTemplateConfigs"]:
            spec = config["LaunchTemplateSpecification"]
            template = self.facts.launch_template(
                spec.get("LaunchTemplateId") or spec["LaunchTemplateName"]
            )
            if template is None:
                continue  # EC2 answers that the template does not exist
            referenced += self._referenced(template, config["Overrides"])
            for kind, tags in template.tag_specifications.items():
                created_tags.setdefault(kind, {}).update(tags)
            if template.instance_profile:
                profile = self.facts.instance_profile(template.instance_profile)
                roles.update(profile[1] if profile else ())
        return referenced, created_tags, roles

    def _referenced(
        self, template: LaunchTemplateFacts, overrides: Sequence[Mapping[str, Any]]
    ) -> list[tuple[str, Mapping[str, str]]]:
        images = {o.get("ImageId") or template.image_id for o in overrides} - {None}
        return [
            (self.ec2_arn(f"launch-template/{template.template_id}"), template.tags),
            *((self.ec2_arn(f"image/{i}"), {}) for i in sorted(images)),
            *((self.ec2_arn(f"subnet/{o['SubnetId']}"), {}) for o in overrides),
            *((self.ec2_arn(f"security-group/{g}"), {}) for g in template.security_group_ids),
            *(
                (self.ec2_arn(f"capacity-reservation/{r}"), {})
                for r in [template.capacity_reservation_id]
                if r
            ),
        ]

    # --- SSM, pricing, EKS ----------------------------------------------------------------

    def get_parameter(self) -> list[Request]:
        name = self.params["Name"]
        if name.startswith("arn:"):
            return [self.request("ssm:GetParameter", name)]
        path = name if name.startswith("/") else f"/{name}"
        # AWS's public parameters belong to no account; a class's own ones to ours.
        account = "" if path.startswith("/aws/service/") else self.call.account
        return [
            self.request("ssm:GetParameter", self.arn("ssm", f"parameter{path}", account=account))
        ]

    def get_products(self) -> list[Request]:
        return [self.request("pricing:GetProducts", "*")]

    def describe_cluster(self) -> list[Request]:
        arn = self.arn("eks", f"cluster/{self.params['name']}", account=self.call.account)
        return [self.request("eks:DescribeCluster", arn)]

    # --- IAM ------------------------------------------------------------------------

    def get_role(self) -> list[Request]:
        return [self.request("iam:GetRole", self.iam_arn(f"role/{self.params['RoleName']}"))]

    def _profile_arn(self) -> str:
        return self.iam_arn(f"instance-profile/{self.params['InstanceProfileName']}")

    def _owned_profile(self, action: str) -> Request:
        found = self.facts.instance_profile(self.params["InstanceProfileName"])
        tags = found[0] if found else {}
        return self.request(action, self._profile_arn(), **tag_context("ResourceTag", tags))

    def get_instance_profile(self) -> list[Request]:
        return [self.request("iam:GetInstanceProfile", self._profile_arn())]

    def create_instance_profile(self) -> list[Request]:
        tags = tag_dict(self.params.get("Tags"))
        requests = [
            self.request(
                "iam:CreateInstanceProfile", self._profile_arn(), **tag_context("RequestTag", tags)
            )
        ]
        if tags:
            requests.append(
                self.request(
                    "iam:TagInstanceProfile",
                    self._profile_arn(),
                    **tag_context("RequestTag", tags),
                    **tag_context("ResourceTag", tags),
                    **{"aws:TagKeys": sorted(tags)},
                )
            )
        return requests

    def add_role_to_instance_profile(self) -> list[Request]:
        role = self.facts.role_arn(self.params["RoleName"])
        return [self._owned_profile("iam:AddRoleToInstanceProfile"), self.pass_role(role)]

    def remove_role_from_instance_profile(self) -> list[Request]:
        return [self._owned_profile("iam:RemoveRoleFromInstanceProfile")]

    def delete_instance_profile(self) -> list[Request]:
        return [self._owned_profile("iam:DeleteInstanceProfile")]

    # --- SQS ------------------------------------------------------------------------

    def _queue_arn(self) -> str:
        if "QueueName" in self.params:
            return self.arn("sqs", self.params["QueueName"], account=self.call.account)
        account, name = self.params["QueueUrl"].rstrip("/").split("/")[-2:]
        return self.arn("sqs", name, account=account)

    def get_queue_url(self) -> list[Request]:
        return [self.request("sqs:GetQueueUrl", self._queue_arn())]

    def receive_message(self) -> list[Request]:
        return [self.request("sqs:ReceiveMessage", self._queue_arn())]

    def delete_message(self) -> list[Request]:
        return [self.request("sqs:DeleteMessage", self._queue_arn())]


_HANDLERS: dict[tuple[str, str], Callable[[_Model], list[Request]]] = {
    ("ec2", "CreateLaunchTemplate"): _Model.create_launch_template,
    ("ec2", "DeleteLaunchTemplate"): _Model.delete_launch_template,
    ("ec2", "TerminateInstances"): _Model.terminate_instances,
    ("ec2", "CreateFleet"): _Model.create_fleet,
    ("ssm", "GetParameter"): _Model.get_parameter,
    ("pricing", "GetProducts"): _Model.get_products,
    ("eks", "DescribeCluster"): _Model.describe_cluster,
    ("iam", "GetRole"): _Model.get_role,
    ("iam", "GetInstanceProfile"): _Model.get_instance_profile,
    ("iam", "CreateInstanceProfile"): _Model.create_instance_profile,
    ("iam", "AddRoleToInstanceProfile"): _Model.add_role_to_instance_profile,
    ("iam", "RemoveRoleFromInstanceProfile"): _Model.remove_role_from_instance_profile,
    ("iam", "DeleteInstanceProfile"): _Model.delete_instance_profile,
    ("sqs", "GetQueueUrl"): _Model.get_queue_url,
    ("sqs", "ReceiveMessage"): _Model.receive_message,
    ("sqs", "DeleteMessage"): _Model.delete_message,
    ("sqs", "DeleteMessageBatch"): _Model.delete_message,
}


def call_requests(call: Call, facts: ResourceFacts) -> list[Request]:
    """Every IAM request AWS checks for ``call``; a ValueError for an unmodelled one."""
    return _Model(call, facts).requests()
