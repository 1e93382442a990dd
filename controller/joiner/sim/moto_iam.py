"""moto with IAM enforcement, and the controller as a principal holding exactly the policy
it ships (``joiner.infra.iam.controller_policy``).

moto (5.x) enforces IAM in server and in-process mode for EC2, SSM, IAM, SQS, EKS and
EventBridge once enforcement is on (``INITIAL_NO_AUTH_ACTION_COUNT`` 0): a request must
be signed by a known access key whose user's policies allow the action. It has no Pricing
API at all. It matches a statement's ``Resource`` only against the ARN it resolves for a
request (IAM roles, SQS queues), else against ``*``, and it ignores conditions on keys a
request does not carry, which is all of them here. So moto checks the action, and
``unresolved_resources_match`` makes a request whose resource moto did not resolve match
any ``Resource`` of a statement (else no statement scoped to ARNs could ever allow). It
also corrects two of moto's answers: moto takes the role named in any IAM request as its
resource, while the resource of Add/RemoveRoleToInstanceProfile is the instance profile
(the role is checked for ``iam:PassRole``), which moto cannot resolve; and it checks SQS
batch operations as actions of their own, while IAM authorizes them as the single
action (``sqs:DeleteMessageBatch`` needs ``sqs:DeleteMessage``).
Resources and conditions are checked for every call by ``joiner.infra.callaudit``.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

from moto.iam.access_control import IAMPolicyStatement
from moto.iam.responses import IamResponse

UNRESOLVED = "*"  # the resource moto checks when it cannot tell the request's resource
# IAM operations naming a role that is not their resource.
_ROLE_IS_NOT_THE_RESOURCE = {"AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile"}
# Operations IAM authorizes as another action.
_AUTHORIZED_AS = {
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}
ADMINISTRATOR = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}


@dataclass(frozen=True)
class Keys:
    access_key_id: str
    secret_access_key: str


def create_principal(iam: Any, name: str, policy: Mapping[str, Any]) -> Keys:
    """An IAM user holding ``policy`` as a managed policy (as the Pulumi stack attaches
    the controller policy to its role), and its access key."""
    iam.create_user(UserName=name)
    arn = iam.create_policy(PolicyName=name, PolicyDocument=json.dumps(policy))["Policy"]["Arn"]
    iam.attach_user_policy(UserName=name, PolicyArn=arn)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return Keys(key["AccessKeyId"], key["SecretAccessKey"])


def set_server_enforcement(url: str, enforced: bool) -> None:
    """Turn a moto server's IAM enforcement on (every request checked) or off."""
    request = urllib.request.Request(
        f"{url}/moto-api/reset-auth",
        data=b"0" if enforced else b"inf",
        method="POST",
        headers={"Content-Type": "text/plain"},  # moto reads the raw body
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


@contextmanager
def moto_iam_corrections() -> Iterator[None]:
    """While active, moto's policy check lets a request whose resource it did not resolve
    match any ``Resource``, and checks what IAM checks where moto differs (see the module
    docstring); resolved ARNs match as before."""
    original_check = IAMPolicyStatement._check_element_matches
    original_resource = IamResponse._determine_resource

    def check(self: IAMPolicyStatement, element: str, value: str) -> bool:
        if element == "Resource" and value == UNRESOLVED:
            return True
        if element in ("Action", "NotAction"):
            value = _AUTHORIZED_AS.get(value, value)
        return original_check(self, element, value)

    def resource(self: IamResponse) -> str:
        if self._get_action() in _ROLE_IS_NOT_THE_RESOURCE:
            return UNRESOLVED
        return original_resource(self)

    with (
        mock.patch.object(IAMPolicyStatement, "_check_element_matches", check),
        mock.patch.object(IamResponse, "_determine_resource", resource),
    ):
        yield
