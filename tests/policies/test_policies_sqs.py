"""SQS encryption and transport, EventBridge targets."""

import json

import pytest
from joiner.infra.iam import interruption_queue_policy
from joiner_policies.sqs import (
    EVENT_TARGET,
    QUEUE,
    QUEUE_POLICY,
    eventbridge_target_same_account,
    sqs_queue_denies_insecure_transport,
    sqs_queue_encrypted,
)
from policy_calls import check, check_stack, resource, urn_of
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

ARN = "arn:aws:sqs:us-west-2:123456789012:demo"
URL = "https://sqs.us-west-2.amazonaws.com/123456789012/demo"
NOT_ENCRYPTED = (
    "server-side encryption is not on: set sqsManagedSseEnabled: true (SSE-SQS) or "
    "kmsMasterKeyId (SSE-KMS)"
)


@pytest.mark.parametrize(
    "props",
    [
        {"sqsManagedSseEnabled": True},
        {"sqsManagedSseEnabled": "true"},
        {"kmsMasterKeyId": "alias/aws/sqs"},
        {"kmsMasterKeyId": UNKNOWN_STRING_VALUE},  # a key created by the same update
    ],
)
def test_encrypted_queues_pass(props):
    assert check(sqs_queue_encrypted, QUEUE, {"name": "demo", **props}) == []


@pytest.mark.parametrize(
    "props",
    [{}, {"sqsManagedSseEnabled": False}, {"sqsManagedSseEnabled": False, "kmsMasterKeyId": ""}],
)
def test_unencrypted_queues_are_reported(props):
    assert check(sqs_queue_encrypted, QUEUE, {"name": "demo", **props}) == [NOT_ENCRYPTED]


def test_encryption_applies_to_queues_only():
    assert check(sqs_queue_encrypted, QUEUE_POLICY, {"policy": "{}"}) == []


def queue(name="demo", **props):
    return resource(QUEUE, name, {"name": name, **props})


def queue_policy(document, target, url=URL, by_dependency=True, name="demo-policy"):
    document = document if isinstance(document, str) else json.dumps(document)
    dependencies = [target] if by_dependency else []
    return resource(
        QUEUE_POLICY,
        name,
        {"policy": document, "queueUrl": url},
        dependencies,
        {"queueUrl": dependencies},
    )


def no_tls_deny(name="demo"):
    return (
        f"queue {name} has no policy denying sqs:* to everyone when aws:SecureTransport is "
        "false; attach one (inline policy or an aws:sqs/queuePolicy:QueuePolicy)",
        urn_of(QUEUE, name),
    )


def test_the_joiner_queue_policy_passes_matched_by_dependency_or_url():
    q = queue()
    for by_dependency in (True, False):
        stack = [q, queue_policy(interruption_queue_policy(ARN), q, by_dependency=by_dependency)]
        assert check_stack(sqs_queue_denies_insecure_transport, stack) == []


def test_an_inline_queue_policy_passes():
    q = queue(policy=json.dumps(interruption_queue_policy(ARN)))
    assert check_stack(sqs_queue_denies_insecure_transport, [q]) == []


def test_a_queue_without_any_policy_is_reported():
    assert check_stack(sqs_queue_denies_insecure_transport, [queue()]) == [no_tls_deny()]


def test_a_policy_of_another_queue_does_not_count():
    mine, other = queue(), queue("other")
    stack = [mine, other, queue_policy(interruption_queue_policy(ARN), mine)]
    assert check_stack(sqs_queue_denies_insecure_transport, stack) == [no_tls_deny("other")]


def deny(**changes):
    statement = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sqs:*",
        "Resource": ARN,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    statement.update(changes)
    return {"Statement": [statement]}


@pytest.mark.parametrize(
    "document",
    [
        deny(Effect="Allow"),
        deny(Action="sqs:SendMessage"),
        deny(Principal={"AWS": "arn:aws:iam::123456789012:root"}),
        deny(Condition={"Bool": {"aws:SecureTransport": "true"}}),
        deny(Condition={}),
        "not json",
    ],
)
def test_policies_that_do_not_deny_insecure_transport_are_reported(document):
    q = queue()
    assert check_stack(sqs_queue_denies_insecure_transport, [q, queue_policy(document, q)]) == [
        no_tls_deny()
    ]


@pytest.mark.parametrize(
    "document",
    [
        deny(Principal={"AWS": ["*"]}, Action=["*"]),
        deny(Condition={"BoolIfExists": {"aws:securetransport": False}}),
    ],
)
def test_equivalent_tls_denials_pass(document):
    q = queue()
    assert check_stack(sqs_queue_denies_insecure_transport, [q, queue_policy(document, q)]) == []


def test_a_queue_policy_not_known_before_the_update_is_checked_later():
    q = queue()
    unknown = queue_policy(UNKNOWN_STRING_VALUE, q)
    assert check_stack(sqs_queue_denies_insecure_transport, [q, unknown]) == []


def target(arn, *dependencies, name="rule-target"):
    return resource(
        EVENT_TARGET, name, {"arn": arn, "rule": "rule"}, dependencies, {"arn": list(dependencies)}
    )


def test_targets_to_the_stacks_own_queue_pass():
    q = queue()
    assert check_stack(eventbridge_target_same_account, [q, target(ARN, q)]) == []


def test_targets_to_queues_in_the_stacks_account_pass():
    # The stack's account is known from its queues' ARNs (after an update) or config.
    known_queue = queue("mine", arn="arn:aws:sqs:us-west-2:123456789012:mine")
    other_queue = "arn:aws:sqs:us-west-2:123456789012:elsewhere"
    assert check_stack(eventbridge_target_same_account, [known_queue, target(other_queue)]) == []
    config = {"accountIds": ["123456789012"]}
    assert check_stack(eventbridge_target_same_account, [target(other_queue)], config) == []


def test_targets_to_queues_of_other_accounts_are_reported():
    foreign = "arn:aws:sqs:us-west-2:999999999999:exfiltrate"
    q = queue()
    stack = [q, target(ARN, q), target(foreign, name="leak")]
    assert check_stack(eventbridge_target_same_account, stack, {"accountIds": []}) == [
        (
            f"EventBridge target leak sends events to {foreign}, a queue in account "
            "999999999999, which is neither a queue of this stack nor in accountIds",
            urn_of(EVENT_TARGET, "leak"),
        )
    ]


def test_non_queue_targets_and_unknown_arns_are_not_judged():
    lambda_arn = "arn:aws:lambda:us-west-2:999999999999:function:f"
    stack = [target(lambda_arn), target(UNKNOWN_STRING_VALUE, name="later")]
    assert check_stack(eventbridge_target_same_account, stack) == []
