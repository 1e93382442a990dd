"""The Joiner policy pack: `pulumi preview --policy-pack policies`.

Only builds the pack (which then serves the engine until it exits); the policies live in
the importable ``joiner_policies`` package next to this file.
"""

from joiner_policies import ALL_POLICIES
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(
    name="joiner",
    policies=ALL_POLICIES,
    # Each policy states its own level; this only covers one that would not.
    enforcement_level=EnforcementLevel.MANDATORY,
    description="Least privilege, encryption and bounded autoscaling for EKS with Karpenter "
    "or Joiner (docs/policies.md).",
)
