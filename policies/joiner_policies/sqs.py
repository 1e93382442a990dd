"""SQS queues and the EventBridge targets that feed them [INFRA]."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)

from joiner_policies._declare import resource_policy, stack_policy, string_list_option
from joiner_policies._values import config_value, is_set, is_true, known, mapping, strings
from joiner_policies.iam_documents import (
    DocumentError,
    Statement,
    action_matches,
    parse_document,
)

QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
# Deny statements must cover every SQS action: a made-up one proves a wildcard.
ANY_SQS_ACTION = "sqs:AnyActionAtAll"


def _queue_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != QUEUE:
        return
    if is_true(args.props.get("sqsManagedSseEnabled")) or is_set(args.props, "kmsMasterKeyId"):
        return
    report(
        "server-side encryption is not on: set sqsManagedSseEnabled: true (SSE-SQS) or "
        "kmsMasterKeyId (SSE-KMS)",
        None,
    )


def denies_insecure_transport(document: Any) -> bool:
    """True when the document denies every SQS action to everyone without TLS."""
    try:
        statements = parse_document(document)
    except DocumentError:
        return False
    return any(_is_tls_deny(statement) for statement in statements)


def _is_tls_deny(statement: Statement) -> bool:
    secure = statement.condition_values(("Bool", "BoolIfExists"), "aws:SecureTransport") or []
    return (
        statement.is_deny
        and _everyone(statement.principal)
        and any(action_matches(pattern, ANY_SQS_ACTION) for pattern in statement.actions)
        and "false" in [value.lower() for value in secure]
    )


def _everyone(principal: Any) -> bool:
    if principal == "*":
        return True
    return "*" in strings(mapping(principal).get("AWS"))


def _queue_policy_documents(queue: PolicyResource, policies: list[PolicyResource]) -> list[Any]:
    """The policy documents that apply to ``queue``: its inline ``policy`` and every
    QueuePolicy whose queueUrl comes from it."""
    documents = [queue.props["policy"]] if is_set(queue.props, "policy") else []
    for policy in policies:
        if _targets_queue(policy, queue):
            documents.append(policy.props.get("policy"))
    return documents


def _targets_queue(policy: PolicyResource, queue: PolicyResource) -> bool:
    if queue in policy.property_dependencies.get("queueUrl", []):
        return True
    url = known(lambda: policy.props.get("queueUrl"))
    if not isinstance(url, str):
        return False
    identities = [known(lambda key=key: queue.props.get(key)) for key in ("url", "id")]
    name = known(lambda: queue.props.get("name"))
    return url in identities or (isinstance(name, str) and url.endswith(f"/{name}"))


def _queues_deny_insecure_transport(args: StackValidationArgs, report: ReportViolation) -> None:
    policies = [r for r in args.resources if r.resource_type == QUEUE_POLICY]
    for queue in (r for r in args.resources if r.resource_type == QUEUE):
        documents = known(lambda q=queue: _queue_policy_documents(q, policies))
        verdicts = [known(lambda d=d: denies_insecure_transport(d)) for d in documents or []]
        if documents is None or None in verdicts or True in verdicts:
            continue  # compliant, or not known before the update (checked when it is)
        report(
            f"queue {queue.name} has no policy denying sqs:* to everyone when "
            "aws:SecureTransport is false; attach one (inline policy or an "
            "aws:sqs/queuePolicy:QueuePolicy)",
            queue.urn,
        )


def _sqs_account(arn: Any) -> str | None:
    """The account of an SQS queue ARN (arn:partition:sqs:region:account:name)."""
    if not isinstance(arn, str):
        return None
    parts = arn.split(":")
    return parts[4] if len(parts) == 6 and parts[0] == "arn" and parts[2] == "sqs" else None


def _stack_accounts(args: StackValidationArgs) -> set[str]:
    """The accounts this stack's queues live in (from their ARNs, when known) plus the
    configured ``accountIds``."""
    configured = config_value(args.get_config(), "accountIds", [])
    accounts = {str(account) for account in strings(configured)}
    for queue in (r for r in args.resources if r.resource_type == QUEUE):
        account = _sqs_account(known(lambda q=queue: q.props.get("arn")))
        if account:
            accounts.add(account)
    return accounts


def _is_stack_queue(target: PolicyResource, arn: str) -> bool:
    """True when the target's ARN is the ARN of a queue this stack declares."""
    sources = target.property_dependencies.get("arn") or target.dependencies
    for queue in (r for r in sources if r.resource_type == QUEUE):
        queue_arn = known(lambda q=queue: q.props.get("arn"))
        name = known(lambda q=queue: q.props.get("name"))
        if arn == queue_arn or (isinstance(name, str) and arn.endswith(f":{name}")):
            return True
    return False


def _targets_same_account(args: StackValidationArgs, report: ReportViolation) -> None:
    accounts = _stack_accounts(args)
    for target in (r for r in args.resources if r.resource_type == EVENT_TARGET):
        arn = known(lambda t=target: t.props.get("arn"))
        account = _sqs_account(arn)
        if account is None or account in accounts or _is_stack_queue(target, arn):
            continue
        report(
            f"EventBridge target {target.name} sends events to {arn}, a queue in account "
            f"{account}, which is neither a queue of this stack nor in accountIds",
            target.urn,
        )


sqs_queue_encrypted = resource_policy(
    "sqs-queue-encrypted",
    "SQS queues have server-side encryption on (SSE-SQS or SSE-KMS).",
    _queue_encrypted,
)

sqs_queue_denies_insecure_transport = stack_policy(
    "sqs-queue-denies-insecure-transport",
    "Every SQS queue has a policy (inline or QueuePolicy) that denies sqs:* to everyone "
    "when aws:SecureTransport is false.",
    _queues_deny_insecure_transport,
)

eventbridge_target_same_account = stack_policy(
    "eventbridge-target-same-account",
    "EventBridge targets send only to SQS queues in the stack's own account.",
    _targets_same_account,
    options={
        "accountIds": string_list_option(
            "Accounts this stack deploys to (queues there are 'ours').",
            items={"pattern": "^[0-9]{12}$"},
            default=[],
        )
    },
)

POLICIES = [
    sqs_queue_encrypted,
    sqs_queue_denies_insecure_transport,
    eventbridge_target_same_account,
]
