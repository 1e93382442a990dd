"""IAM and SQS policy documents for Joiner [INFRA], as pure functions returning dicts.

The Pulumi components, the ``joiner render iam-policy`` command and the tests all build
the documents here, so what is reviewed is what is deployed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from joiner.api import labels as wk

POLICY_VERSION = "2012-10-17"
DEFAULT_NAMESPACE = "karpenter"
DEFAULT_SERVICE_ACCOUNT = "karpenter"
PARTITIONS = ("aws", "aws-cn", "aws-us-gov", "aws-iso", "aws-iso-b")

# Tag keys the controller puts on what it creates [LAUNCH-5].
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
NODECLAIM_TAG = "karpenter.sh/nodeclaim"

# EC2 read calls the controller makes, allowed on * within the cluster's region (every
# one is called: tests/controller/cloudprovider/aws/test_aws_iam.py keeps it so).
EC2_READ_ACTIONS = (
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeInstances",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
)
LAUNCH_ACTIONS = ("ec2:RunInstances", "ec2:CreateFleet")
# Resource types a launch only references (they cannot carry request tags).
REFERENCED_EC2_RESOURCES = (
    "image",
    "snapshot",
    "security-group",
    "subnet",
    "capacity-reservation",
    "placement-group",
)
# Resource types a launch creates; every one must carry the cluster's tags.
CREATED_EC2_RESOURCES = (
    "fleet",
    "instance",
    "volume",
    "network-interface",
    "launch-template",
    "spot-instances-request",
)
NODE_ROLE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)

# Field -> (pattern, what a valid value looks like). ``check_field`` applies them.
FIELD_FORMATS: dict[str, tuple[re.Pattern[str], str]] = {
    "cluster_name": (
        re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"),
        "1-100 letters, digits, - or _, starting with a letter or digit",
    ),
    "region": (re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$"), "an AWS region such as us-east-1"),
    "account_id": (re.compile(r"^[0-9]{12}$"), "12 digits"),
    "node_role_arn": (
        re.compile(r"^arn:[a-z-]+:iam::[0-9]{12}:role/[\w+=,.@/-]+$"),
        "an IAM role ARN such as arn:aws:iam::123456789012:role/NodeRole",
    ),
    "queue_arn": (
        re.compile(r"^arn:[a-z-]+:sqs:[a-z0-9-]+:[0-9]{12}:[\w-]+$"),
        "an SQS queue ARN such as arn:aws:sqs:us-east-1:123456789012:my-cluster",
    ),
    "partition": (re.compile(f"^({'|'.join(PARTITIONS)})$"), f"one of {', '.join(PARTITIONS)}"),
}


def check_field(field: str, value: object) -> str:
    """``value`` when it is a valid ``field``; a ValueError saying what is expected."""
    pattern, expected = FIELD_FORMATS[field]
    if not isinstance(value, str) or not pattern.match(value):
        raise ValueError(f"{value!r} is not valid (expected {expected})")
    return value


@dataclass(frozen=True)
class ControllerPolicyParams:
    """What the controller policy is scoped to. ``validate`` names the first bad field."""

    cluster_name: str
    region: str
    account_id: str
    node_role_arn: str
    queue_arn: str | None = None
    partition: str = "aws"

    def validate(self) -> None:
        for field in FIELD_FORMATS:
            value = getattr(self, field)
            if field == "queue_arn" and value is None:
                continue
            try:
                check_field(field, value)
            except ValueError as error:
                raise ValueError(f"{field}: {error}") from None


def cluster_tag(cluster_name: str) -> str:
    """The ownership tag key every instance, volume and template of the cluster carries."""
    return f"kubernetes.io/cluster/{cluster_name}"


def controller_policy(params: ControllerPolicyParams) -> dict:
    """The controller's least-privilege policy [INFRA], statement by statement."""
    params.validate()
    p, r, a, c = params.partition, params.region, params.account_id, params.cluster_name
    statements = [
        *_launch_statements(p, r, c),
        *_tagging_statements(p, r, c),
        _statement(
            "AllowScopedDeletion",
            ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            [_ec2_arn(p, r, "instance"), _ec2_arn(p, r, "launch-template")],
            {
                "StringEquals": {f"aws:ResourceTag/{cluster_tag(c)}": "owned"},
                "StringLike": {f"aws:ResourceTag/{wk.NODEPOOL}": "*"},
            },
        ),
        _statement(
            "AllowRegionalReadActions",
            list(EC2_READ_ACTIONS),
            ["*"],
            {"StringEquals": {"aws:RequestedRegion": r}},
        ),
        _statement(
            "AllowSSMReadActions",
            ["ssm:GetParameter"],
            # AWS's public AMI parameters, and the account's own (a class's ssmParameter)
            [f"arn:{p}:ssm:{r}::parameter/aws/service/*", f"arn:{p}:ssm:{r}:{a}:parameter/*"],
        ),
        _statement("AllowPricingReadActions", ["pricing:GetProducts"], ["*"]),
        *_queue_statements(params.queue_arn),
        _statement(
            "AllowPassingInstanceRole",
            ["iam:PassRole"],
            [params.node_role_arn],
            {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
        *_instance_profile_statements(p, r, a, c),
        _statement(
            "AllowAPIServerEndpointDiscovery",
            ["eks:DescribeCluster"],
            [f"arn:{p}:eks:{r}:{a}:cluster/{c}"],
        ),
    ]
    return {"Version": POLICY_VERSION, "Statement": statements}


def irsa_trust_policy(
    oidc_provider_arn: str,
    oidc_provider_url: str,
    namespace: str = DEFAULT_NAMESPACE,
    service_account: str = DEFAULT_SERVICE_ACCOUNT,
) -> dict:
    """Trust for IRSA: only the controller's service account, only for STS."""
    issuer = oidc_provider_url.removeprefix("https://")
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{issuer}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def pod_identity_trust_policy() -> dict:
    """Trust for EKS Pod Identity (the association names the service account)."""
    return _service_trust("pods.eks.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"])


def node_role_trust_policy() -> dict:
    """Trust for the role the nodes run with."""
    return _service_trust("ec2.amazonaws.com", ["sts:AssumeRole"])


def managed_policy_arn(partition: str, policy_name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{policy_name}"


def node_role_managed_policy_arns(partition: str = "aws") -> list[str]:
    """The AWS managed policies a node needs to join and pull images."""
    return [managed_policy_arn(partition, name) for name in NODE_ROLE_MANAGED_POLICIES]


def _service_trust(service: str, actions: list[str]) -> dict:
    return {
        "Version": POLICY_VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
    }


def _statement(
    sid: str, actions: list[str], resources: list[str], condition: dict | None = None
) -> dict:
    statement: dict = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
    if condition:
        statement["Condition"] = condition
    return statement


def _ec2_arn(partition: str, region: str, resource_type: str) -> str:
    # Images and snapshots are owned by other accounts (AMIs): their ARNs have no account.
    account = "" if resource_type in ("image", "snapshot") else "*"
    return f"arn:{partition}:ec2:{region}:{account}:{resource_type}/*"


def _owned_request_tags(cluster_name: str) -> dict:
    return {
        "StringEquals": {
            f"aws:RequestTag/{cluster_tag(cluster_name)}": "owned",
            f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": cluster_name,
        },
        "StringLike": {f"aws:RequestTag/{wk.NODEPOOL}": "*"},
    }


def _launch_statements(p: str, r: str, c: str) -> list[dict]:
    created = [_ec2_arn(p, r, t) for t in CREATED_EC2_RESOURCES]
    return [
        _statement(
            "AllowScopedEC2InstanceAccessActions",
            list(LAUNCH_ACTIONS),
            [_ec2_arn(p, r, t) for t in REFERENCED_EC2_RESOURCES],
        ),
        _statement(
            "AllowScopedEC2LaunchTemplateAccessActions",
            list(LAUNCH_ACTIONS),
            [_ec2_arn(p, r, "launch-template")],
            {
                "StringEquals": {f"aws:ResourceTag/{cluster_tag(c)}": "owned"},
                "StringLike": {f"aws:ResourceTag/{wk.NODEPOOL}": "*"},
            },
        ),
        _statement(
            "AllowScopedEC2InstanceActionsWithTags",
            [*LAUNCH_ACTIONS, "ec2:CreateLaunchTemplate"],
            created,
            _owned_request_tags(c),
        ),
    ]


def _tagging_statements(p: str, r: str, c: str) -> list[dict]:
    at_creation = _owned_request_tags(c)
    at_creation["StringEquals"]["ec2:CreateAction"] = [
        "RunInstances",
        "CreateFleet",
        "CreateLaunchTemplate",
    ]
    return [
        _statement(
            "AllowScopedResourceCreationTagging",
            ["ec2:CreateTags"],
            [_ec2_arn(p, r, t) for t in CREATED_EC2_RESOURCES],
            at_creation,
        ),
        _statement(
            "AllowScopedResourceTagging",
            ["ec2:CreateTags"],
            [_ec2_arn(p, r, "instance")],
            {
                "StringEquals": {f"aws:ResourceTag/{cluster_tag(c)}": "owned"},
                "StringLike": {f"aws:ResourceTag/{wk.NODEPOOL}": "*"},
                "StringEqualsIfExists": {f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": c},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": [EKS_CLUSTER_NAME_TAG, NODECLAIM_TAG, "Name"]
                },
            },
        ),
    ]


def _queue_statements(queue_arn: str | None) -> list[dict]:
    if queue_arn is None:
        return []
    return [
        _statement(
            "AllowInterruptionQueueActions",
            ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            [queue_arn],
        )
    ]


def _instance_profile_statements(p: str, r: str, a: str, c: str) -> list[dict]:
    profiles = f"arn:{p}:iam::{a}:instance-profile/*"
    owned_resource = {
        f"aws:ResourceTag/{cluster_tag(c)}": "owned",
        f"aws:ResourceTag/{wk.REGION}": r,
    }
    owned_request = {
        f"aws:RequestTag/{cluster_tag(c)}": "owned",
        f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": c,
        f"aws:RequestTag/{wk.REGION}": r,
    }
    return [
        _statement(
            "AllowScopedInstanceProfileCreationActions",
            ["iam:CreateInstanceProfile"],
            [profiles],
            {
                "StringEquals": owned_request,
                "StringLike": {f"aws:RequestTag/{wk.EC2NODECLASS}": "*"},
            },
        ),
        _statement(
            "AllowScopedInstanceProfileTagActions",
            ["iam:TagInstanceProfile"],
            [profiles],
            {
                "StringEquals": {**owned_resource, **owned_request},
                "StringLike": {
                    f"aws:ResourceTag/{wk.EC2NODECLASS}": "*",
                    f"aws:RequestTag/{wk.EC2NODECLASS}": "*",
                },
            },
        ),
        _statement(
            "AllowScopedInstanceProfileActions",
            [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            [profiles],
            {
                "StringEquals": owned_resource,
                "StringLike": {f"aws:ResourceTag/{wk.EC2NODECLASS}": "*"},
            },
        ),
        _statement("AllowInstanceProfileReadActions", ["iam:GetInstanceProfile"], [profiles]),
        # A class's spec.role is checked before its profile is made (NoSuchEntity: not Ready).
        _statement("AllowRoleReadActions", ["iam:GetRole"], [f"arn:{p}:iam::{a}:role/*"]),
    ]


def interruption_queue_policy(queue_arn: str) -> dict:
    """EventBridge may send, for the rules of the queue's own account and region only (a
    rule of another account cannot feed it, which upstream's policy allows); nothing may
    use the queue without TLS."""
    check_field("queue_arn", queue_arn)
    partition, _, region, account = queue_arn.split(":")[1:5]
    return {
        "Version": POLICY_VERSION,
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "AllowEventBridgeFromThisAccount",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": account},
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{partition}:events:{region}:{account}:rule/*"
                    },
                },
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }
