"""The interruption queue port, and the two ways of taking messages off it.

``SQSQueue`` speaks SQS through boto3: ``receive(wait_seconds)`` returns up to 10
messages, long-polling up to ``wait_seconds``; ``delete`` removes handled ones.

The reconciler never blocks: it asks a ``Receiver`` for whatever has arrived.
``InlineReceiver`` calls ``receive(0)`` on the spot (the simulator: one thread, a
virtual clock). ``BackgroundReceiver`` long-polls 20 s at a time in a background loop
and hands batches over (production), so a message is picked up as soon as SQS has it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from joiner.background import BackgroundLoop, FailureHook
from joiner.backoff import Retrier

log = logging.getLogger(__name__)

MAX_MESSAGES = 10  # the most SQS returns per ReceiveMessage
LONG_POLL_SECONDS = 20  # the longest SQS long poll
INACTIVE_PAUSE = 1.0  # seconds between two looks at whether to receive


@dataclass(frozen=True)
class QueueMessage:
    message_id: str
    body: str
    receipt_handle: str


class MessageQueue(Protocol):
    def receive(self, wait_seconds: int) -> list[QueueMessage]: ...

    def delete(self, messages: list[QueueMessage]) -> None: ...


class Receiver(Protocol):
    def take(self) -> list[QueueMessage]: ...


class SQSQueue:
    """One SQS queue, named by URL or by name (resolved once with GetQueueUrl)."""

    def __init__(self, client: Any, queue: str) -> None:
        self.client = client
        self.url = queue if queue.startswith("https://") or queue.startswith("http://") else ""
        self._name = queue

    def queue_url(self) -> str:
        if not self.url:
            self.url = self.client.get_queue_url(QueueName=self._name)["QueueUrl"]
        return self.url

    def receive(self, wait_seconds: int) -> list[QueueMessage]:
        response = self.client.receive_message(
            QueueUrl=self.queue_url(),
            MaxNumberOfMessages=MAX_MESSAGES,
            WaitTimeSeconds=wait_seconds,
            AttributeNames=["SentTimestamp"],
        )
        return [
            QueueMessage(m["MessageId"], m.get("Body", ""), m["ReceiptHandle"])
            for m in response.get("Messages", [])
        ]

    def delete(self, messages: list[QueueMessage]) -> None:
        for start in range(0, len(messages), MAX_MESSAGES):
            batch = messages[start : start + MAX_MESSAGES]
            response = self.client.delete_message_batch(
                QueueUrl=self.queue_url(),
                Entries=[
                    {"Id": str(index), "ReceiptHandle": m.receipt_handle}
                    for index, m in enumerate(batch)
                ],
            )
            for failure in response.get("Failed", []):
                # The message comes back after its visibility timeout and is handled again;
                # handling is idempotent, so this costs a repeat, not a wrong action.
                log.warning("interruption message not deleted: %s", failure.get("Message"))


class InlineReceiver:
    """Receives without waiting, on the caller's thread: for a single-threaded loop."""

    def __init__(self, queue: MessageQueue) -> None:
        self.queue = queue

    def take(self) -> list[QueueMessage]:
        return self.queue.receive(0)


class BackgroundReceiver:
    """Long-polls in a background loop; ``take`` returns what arrived since the last call.

    A failed receive, whatever the exception (throttling, a network blip, a missing
    permission, an answer our code cannot read), is logged, counted (``on_failure``
    feeds the metric) and retried after a backoff: the queue is an optional feed, never
    a reason to stop, and the thread never dies of it. While ``active()`` is false (a
    replica that is not the leader) nothing is received, so messages stay visible to
    the replica that handles them."""

    def __init__(
        self,
        queue: MessageQueue,
        wait_seconds: int = LONG_POLL_SECONDS,
        active: Callable[[], bool] = lambda: True,
        on_failure: FailureHook | None = None,
        retrier: Retrier | None = None,
    ) -> None:
        self.queue = queue
        self.wait_seconds = wait_seconds
        self.active = active
        self._inbox: deque[QueueMessage] = deque()
        self._stop = threading.Event()
        self.loop = BackgroundLoop(
            "interruption-queue",
            self._receive,
            self._stop,
            retrier=retrier,
            on_failure=on_failure,
        )

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        """Stops after the poll in flight returns (at most ``wait_seconds``); does not wait."""
        self._stop.set()

    def take(self) -> list[QueueMessage]:
        taken = []
        while self._inbox:
            taken.append(self._inbox.popleft())
        return taken

    def _receive(self) -> None:
        if not self.active():
            self._stop.wait(INACTIVE_PAUSE)
            return
        self._inbox.extend(self.queue.receive(self.wait_seconds))
