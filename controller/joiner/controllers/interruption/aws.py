"""The production feed: the queue named by INTERRUPTION_QUEUE, long-polled in a thread,
and EC2 for the DescribeInstanceStatus poller, through boto3's usual credentials (IRSA
or Pod Identity in the cluster)."""

from __future__ import annotations

from collections.abc import Callable

import boto3
from botocore.config import Config

from joiner.background import FailureHook
from joiner.controllers.interruption.controller import InterruptionFeed
from joiner.controllers.interruption.queue import LONG_POLL_SECONDS, BackgroundReceiver, SQSQueue

# A long poll holds the connection for 20 s: the read timeout must outlast it.
_SQS_CONFIG = Config(read_timeout=LONG_POLL_SECONDS + 10, retries={"mode": "standard"})


def production_feed(
    queue: str,
    region: str | None = None,
    active: Callable[[], bool] = lambda: True,
    endpoint_url: str | None = None,
    on_failure: FailureHook | None = None,
) -> tuple[InterruptionFeed, BackgroundReceiver]:
    """``queue`` is the queue's name or URL; ``active`` says whether this replica should
    receive (it leads); ``on_failure`` is told of each failed receive. The receiver's
    thread is not started: ``start()`` it once the operator runs, ``stop()`` it on
    shutdown."""
    session = boto3.Session(region_name=region) if region else boto3.Session()
    sqs = session.client("sqs", endpoint_url=endpoint_url, config=_SQS_CONFIG)
    ec2 = session.client("ec2", endpoint_url=endpoint_url)
    message_queue = SQSQueue(sqs, queue)
    receiver = BackgroundReceiver(message_queue, active=active, on_failure=on_failure)
    return InterruptionFeed(message_queue, receiver, ec2=ec2), receiver
