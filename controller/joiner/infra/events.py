"""The EventBridge rules that feed the interruption queue [INFRA] [INT]."""

from __future__ import annotations

# Rule name suffix -> event pattern. The controller handles exactly these [INT].
INTERRUPTION_EVENT_PATTERNS: dict[str, dict] = {
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Spot Instance Interruption Warning"],
    },
    "rebalance": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Instance Rebalance Recommendation"],
    },
    "instance-state-change": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Instance State-change Notification"],
    },
    "capacity-reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}
