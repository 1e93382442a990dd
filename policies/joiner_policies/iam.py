"""IAM least privilege, for any stack's policies and roles [INFRA].

Checked documents: ``policy`` of aws:iam Policy / RolePolicy / UserPolicy / GroupPolicy,
a Role's ``inlinePolicies`` (permissions) and a Role's ``assumeRolePolicy`` (trust).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from joiner.infra.iam import LAUNCH_ACTIONS
from pulumi_policy import ReportViolation, ResourceValidationArgs

from joiner_policies._declare import resource_policy
from joiner_policies._values import items, mapping, strings
from joiner_policies.iam_documents import (
    DocumentError,
    Statement,
    is_service_wildcard,
    parse_document,
    resource_type_matches,
)

ROLE = "aws:iam/role:Role"
# Resource type -> the property holding its permissions document.
PERMISSION_DOCUMENTS = {
    "aws:iam/policy:Policy": "policy",
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:iam/userPolicy:UserPolicy": "policy",
    "aws:iam/groupPolicy:GroupPolicy": "policy",
}
# Destructive or ownership-changing EC2 calls: only on resources tagged as ours.
TAG_SCOPED_ACTIONS = ("ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ec2:CreateTags")
TAG_CONDITION_PREFIXES = ("aws:resourcetag/", "aws:requesttag/", "ec2:resourcetag/")
# Any launch template: a probe the Resource patterns are matched against.
LAUNCH_TEMPLATE = "launch-template/lt-0123456789abcdef0"
# A role name nobody scoped a PassRole statement to: matching it means "any role".
ANY_ROLE = "role/any-role-of-the-account"
WEB_IDENTITY = "sts:AssumeRoleWithWebIdentity"


def permission_documents(args: ResourceValidationArgs) -> list[tuple[str, Any]]:
    """(where, raw document) for every permissions document the resource declares."""
    key = PERMISSION_DOCUMENTS.get(args.resource_type)
    if key is not None:
        raw = args.props.get(key)
        return [] if raw is None else [(key, raw)]
    if args.resource_type != ROLE:
        return []
    return [
        (f"inlinePolicies[{index}]", mapping(inline).get("policy"))
        for index, inline in enumerate(items(args.props.get("inlinePolicies")))
        if mapping(inline).get("policy")
    ]


def _statements(
    args: ResourceValidationArgs, report: ReportViolation | None = None
) -> Iterator[tuple[str, Statement]]:
    """Every statement of the resource's permission documents. Unreadable documents are
    reported through ``report`` when given (only one policy does, so they appear once)."""
    for where, raw in permission_documents(args):
        try:
            statements = parse_document(raw)
        except DocumentError as error:
            if report is not None:
                report(f"{where}: {error}", None)
            continue
        for statement in statements:
            yield where, statement


def _no_wildcard_actions(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for where, statement in _statements(args, report):
        if not statement.is_allow:
            continue
        if statement.not_actions:
            report(
                f"{where}: {statement.label} is an Allow with NotAction "
                f"{list(statement.not_actions)}, which grants every other action; "
                "list the actions it needs instead",
                None,
            )
        for pattern in statement.actions:
            if is_service_wildcard(pattern):
                report(
                    f"{where}: {statement.label} allows {pattern!r}; "
                    "name the actions it needs instead",
                    None,
                )


def _has_tag_condition(statement: Statement) -> bool:
    return any(key.lower().startswith(TAG_CONDITION_PREFIXES) for key in statement.condition_keys())


def _untagged_grants(statement: Statement) -> list[str]:
    """The tag-scoped EC2 permissions a statement grants without a tag condition."""
    if _has_tag_condition(statement):
        return []
    granted = [action for action in TAG_SCOPED_ACTIONS if statement.grants(action)]
    if statement.covers_resource(lambda p: resource_type_matches(p, "ec2", LAUNCH_TEMPLATE)):
        granted += [
            f"{action} on launch templates" for action in LAUNCH_ACTIONS if statement.grants(action)
        ]
    return granted


def _ec2_tag_conditions(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for where, statement in _statements(args):
        granted = _untagged_grants(statement)
        if granted:
            report(
                f"{where}: {statement.label} allows {', '.join(granted)} without an "
                "aws:ResourceTag/... or aws:RequestTag/... condition; scope it to the "
                "resources the workload owns",
                None,
            )


def _passrole_scoped(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for where, statement in _statements(args):
        if statement.grants("iam:PassRole") and statement.covers_resource(
            lambda p: resource_type_matches(p, "iam", ANY_ROLE)
        ):
            report(
                f"{where}: {statement.label} allows iam:PassRole on any role; "
                "name the role ARNs that may be passed",
                None,
            )


def _irsa_trust_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != ROLE or args.props.get("assumeRolePolicy") is None:
        return
    try:
        statements = parse_document(args.props["assumeRolePolicy"])
    except DocumentError as error:
        report(f"assumeRolePolicy: {error}", None)
        return
    for statement in statements:
        if not statement.grants(WEB_IDENTITY):
            continue
        for provider in _oidc_providers(statement):
            missing = _unpinned_claims(statement, provider.split(":oidc-provider/", 1)[1])
            if missing:
                report(
                    f"assumeRolePolicy: {statement.label} lets tokens of {provider} assume "
                    f"the role without pinning {' and '.join(missing)} (StringEquals); any "
                    "service account of the cluster could assume it",
                    None,
                )


def _oidc_providers(statement: Statement) -> list[str]:
    federated = strings(mapping(statement.principal).get("Federated"))
    return [arn for arn in federated if ":oidc-provider/" in arn]


def _unpinned_claims(statement: Statement, issuer: str) -> list[str]:
    sub = f"{issuer}:sub"
    exact_sub = statement.condition_values(("StringEquals",), sub) or []
    like_sub = statement.condition_values(("StringLike",), sub) or []
    sub_pinned = bool(exact_sub) or (
        bool(like_sub) and not any("*" in v or "?" in v for v in like_sub)
    )
    aud_pinned = bool(statement.condition_values(("StringEquals",), f"{issuer}:aud"))
    return [
        claim for claim, pinned in ((sub, sub_pinned), (f"{issuer}:aud", aud_pinned)) if not pinned
    ]


iam_no_wildcard_actions = resource_policy(
    "iam-no-wildcard-actions",
    "IAM Allow statements name their actions: no '*', no 'service:*', no NotAction.",
    _no_wildcard_actions,
)

iam_ec2_tag_conditions = resource_policy(
    "iam-ec2-tag-conditions",
    "ec2:TerminateInstances, ec2:DeleteLaunchTemplate, ec2:CreateTags and "
    "ec2:RunInstances/CreateFleet on launch templates carry a resource- or request-tag "
    "condition.",
    _ec2_tag_conditions,
)

iam_passrole_scoped = resource_policy(
    "iam-passrole-scoped",
    "iam:PassRole is allowed only on named roles, never on '*'.",
    _passrole_scoped,
)

iam_irsa_trust_pinned = resource_policy(
    "iam-irsa-trust-pinned",
    "Roles trusted through an OIDC provider (IRSA) pin both the token's sub (the "
    "service account) and aud (sts.amazonaws.com).",
    _irsa_trust_pinned,
)

POLICIES = [
    iam_no_wildcard_actions,
    iam_ec2_tag_conditions,
    iam_passrole_scoped,
    iam_irsa_trust_pinned,
]
