"""Joiner's CrossGuard policies, importable without starting a policy pack.

``../__main__.py`` builds the ``PolicyPack`` from ``ALL_POLICIES`` (building it serves
gRPC forever, so tests import this package instead). See docs/policies.md.
"""

from pulumi_policy import Policy

from joiner_policies import ec2, eks, iam, kubernetes, sqs

ALL_POLICIES: list[Policy] = [
    *iam.POLICIES,
    *sqs.POLICIES,
    *ec2.POLICIES,
    *eks.POLICIES,
    *kubernetes.POLICIES,
]
POLICIES_BY_NAME: dict[str, Policy] = {policy.name: policy for policy in ALL_POLICIES}

__all__ = ["ALL_POLICIES", "POLICIES_BY_NAME"]
