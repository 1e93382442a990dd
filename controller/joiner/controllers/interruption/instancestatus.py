"""DescribeInstanceStatus, once a minute: what the queue does not tell [INT].

An instance whose instance or system status check reports ``impaired`` cannot be
trusted with pods; an instance with a pending scheduled event (retirement, stop,
reboot, maintenance) will be taken away or bounced by EC2. Either way its NodeClaim is
drained and deleted through the same path as a queue message, so the metrics, events
and the "already draining" check are shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joiner.controllers.interruption.controller import Interruption
from joiner.controllers.interruption.messages import Kind, Message
from joiner.controllers.runtime import Result

KEY = "poll"
POLL_INTERVAL = 60.0
IMPAIRED = "impaired"
# A finished or cancelled scheduled event stays listed for a while, its description
# prefixed so.
_DONE_PREFIXES = ("[Completed]", "[Canceled]", "[Cancelled]")


def messages_from_statuses(statuses: list[Mapping[str, Any]]) -> list[Message]:
    """The DescribeInstanceStatus entries that call for a drain, as messages."""
    found = []
    for status in statuses:
        instance_id = status.get("InstanceId")
        if not isinstance(instance_id, str):
            continue
        events = [
            e
            for e in status.get("Events") or ()
            if not str(e.get("Description", "")).startswith(_DONE_PREFIXES)
        ]
        if events:
            code = str(events[0].get("Code", ""))
            found.append(Message(Kind.SCHEDULED_CHANGE, "", (instance_id,), code))
            continue
        impaired = [
            check
            for check in ("InstanceStatus", "SystemStatus")
            if (status.get(check) or {}).get("Status") == IMPAIRED
        ]
        if impaired:
            found.append(Message(Kind.INSTANCE_IMPAIRED, "", (instance_id,), ",".join(impaired)))
    return found


class InstanceStatusPoller:
    name = "interruption.instancestatus"

    def __init__(
        self, ec2: Any, interruption: Interruption, interval: float = POLL_INTERVAL
    ) -> None:
        self.ec2, self.interruption, self.interval = ec2, interruption, interval

    def reconcile(self, key: str) -> Result:
        claims = self.interruption.claims_by_instance()
        if claims:
            for message in messages_from_statuses(self._statuses(set(claims))):
                self.interruption.handle(message, claims)
        return Result(requeue_after=self.interval)

    def _statuses(self, ours: set[str]) -> list[Mapping[str, Any]]:
        """Running instances only (the default: a stopping one is the queue's business),
        all of the region's, kept when they are ours. Asking by id would fail the whole
        call when one instance has meanwhile disappeared."""
        pages = self.ec2.get_paginator("describe_instance_status").paginate(
            PaginationConfig={"PageSize": 1000}
        )
        return [
            status
            for page in pages
            for status in page.get("InstanceStatuses", [])
            if status.get("InstanceId") in ours
        ]
