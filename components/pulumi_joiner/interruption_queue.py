"""InterruptionQueue: the SQS queue and EventBridge rules that warn the controller of spot
interruptions, health events and instance state changes [INFRA] [INT]."""

import json
from collections.abc import Mapping
from typing import Required, TypedDict

import pulumi
import pulumi_aws as aws
from joiner.infra.events import INTERRUPTION_EVENT_PATTERNS

from pulumi_joiner import iam
from pulumi_joiner._common import TYPE_PREFIX, child_opts, declared_outputs, json_output, require

MESSAGE_RETENTION_SECONDS = 300


class InterruptionQueueArgs(TypedDict, total=False):
    """Inputs of InterruptionQueue."""

    cluster_name: Required[pulumi.Input[str]]
    """Name of the EKS cluster; the default queue name."""
    queue_name: pulumi.Input[str]
    """Name of the SQS queue (default: the cluster name, as Karpenter does)."""
    tags: Mapping[str, pulumi.Input[str]]
    """Tags for the queue and the rules."""


class InterruptionQueue(pulumi.ComponentResource):
    """SQS queue (retention 300 s, SSE), its policy, and five EventBridge rules feeding it."""

    queue_arn: pulumi.Output[str]
    """ARN of the queue (scopes the controller's sqs permissions)."""
    queue_name: pulumi.Output[str]
    """Name of the queue (the controller's INTERRUPTION_QUEUE setting)."""
    queue_url: pulumi.Output[str]
    """URL of the queue."""
    rule_names: pulumi.Output[list[str]]
    """Names of the EventBridge rules."""

    def __init__(
        self,
        name: str,
        args: InterruptionQueueArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}InterruptionQueue", name, None, opts)
        cluster_name = require("InterruptionQueue", name, args, "cluster_name")
        tags = dict(args.get("tags") or {})
        queue = aws.sqs.Queue(
            f"{name}-queue",
            name=args.get("queue_name") or cluster_name,
            message_retention_seconds=MESSAGE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child_opts(self),
        )
        aws.sqs.QueuePolicy(
            f"{name}-queue-policy",
            queue_url=queue.url,
            policy=json_output(iam.interruption_queue_policy, queue.arn),
            opts=child_opts(self),
        )
        rules = []
        for suffix, pattern in INTERRUPTION_EVENT_PATTERNS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{suffix}",
                description=f"Joiner interruption events: {pattern['detail-type'][0]}",
                event_pattern=json.dumps(pattern),
                tags=tags,
                opts=child_opts(self),
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{suffix}",
                rule=rule.name,
                arn=queue.arn,
                target_id="JoinerInterruptionQueue",
                opts=child_opts(self),
            )
            rules.append(rule.name)
        self.queue_arn = queue.arn
        self.queue_name = queue.name
        self.queue_url = queue.url
        self.rule_names = pulumi.Output.all(*rules)
        self.register_outputs(declared_outputs(self))
