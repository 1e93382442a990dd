"""docs/interruption.md shows exactly what the infrastructure creates and the controller
needs: the queue policy, the five rules and the controller's SQS statement."""

from __future__ import annotations

import json
import re
from pathlib import Path

from joiner.infra.events import INTERRUPTION_EVENT_PATTERNS
from joiner.infra.iam import ControllerPolicyParams, controller_policy, interruption_queue_policy

PAGE = Path(__file__).resolve().parents[4] / "docs" / "interruption.md"
QUEUE_ARN = "arn:aws:sqs:us-east-1:111122223333:my-cluster"


def json_blocks() -> list[dict]:
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", PAGE.read_text(), re.S)]


def test_the_page_shows_the_queue_policy_and_the_rules() -> None:
    blocks = json_blocks()
    assert blocks[0] == interruption_queue_policy(QUEUE_ARN)
    assert blocks[1] == INTERRUPTION_EVENT_PATTERNS


def test_the_page_shows_the_controllers_queue_statement() -> None:
    policy = controller_policy(
        ControllerPolicyParams(
            "my-cluster",
            "us-east-1",
            "111122223333",
            "arn:aws:iam::111122223333:role/KarpenterNodeRole-my-cluster",
            QUEUE_ARN,
        )
    )
    statements = {s["Sid"]: s for s in policy["Statement"]}
    sqs, read = json_blocks()[2:4]
    assert statements[sqs["Sid"]] == sqs
    assert "ec2:DescribeInstanceStatus" in statements[read["Sid"]]["Action"]
    assert statements[read["Sid"]]["Condition"] == read["Condition"]
