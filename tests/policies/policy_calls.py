"""Calling policies the way the policy engine does, and collecting what they report.

Properties go through pulumi_policy's own unknown-checking proxy, so policies see the
read-only Mapping/Sequence views (not dicts) the engine hands them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from joiner_policies import ALL_POLICIES
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy


@dataclass(frozen=True)
class Violation:
    policy: str
    level: EnforcementLevel
    resource: str  # the resource's name
    message: str


def _options(parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)


def urn_of(resource_type: str, name: str) -> str:
    return f"urn:pulumi:test::test::{resource_type}::{name}"


def check(
    policy: Policy,
    resource_type: str,
    props: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    name: str = "subject",
) -> list[str]:
    """The messages a resource policy reports for one resource."""
    assert isinstance(policy, ResourceValidationPolicy)
    messages: list[str] = []
    args = _validation_args(resource(resource_type, name, props), config)
    policy.validate(args, lambda message, urn=None: messages.append(message))
    return messages


def resource(
    resource_type: str,
    name: str,
    props: Mapping[str, Any],
    dependencies: Iterable[PolicyResource] = (),
    property_dependencies: Mapping[str, list[PolicyResource]] | None = None,
) -> PolicyResource:
    """A stack resource as a stack policy sees it."""
    return PolicyResource(
        resource_type,
        unknown_checking_proxy(copy.deepcopy(dict(props))),
        urn_of(resource_type, name),
        name,
        _options(),
        None,
        None,
        list(dependencies),
        dict(property_dependencies or {}),
    )


def _validation_args(
    target: PolicyResource, config: Mapping[str, Any] | None
) -> ResourceValidationArgs:
    """What a resource policy gets for ``target``: its inputs and the policy's config."""
    return ResourceValidationArgs(
        target.resource_type,
        target.props,
        target.urn,
        target.name,
        target.opts,
        target.provider,
        config,
    )


def check_stack(
    policy: Policy,
    resources: list[PolicyResource],
    config: Mapping[str, Any] | None = None,
) -> list[tuple[str, str | None]]:
    """(message, urn) for everything a stack policy reports."""
    assert isinstance(policy, StackValidationPolicy)
    reported: list[tuple[str, str | None]] = []
    policy.validate(
        StackValidationArgs(resources, config),
        lambda message, urn=None: reported.append((message, urn)),
    )
    return reported


def evaluate(
    resources: list[PolicyResource],
    config: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Violation]:
    """Run the whole pack over a stack: every resource policy on every resource (with the
    resource's inputs), then every stack policy on the stack, as the engine does."""
    config = config or {}
    by_urn = {r.urn: r.name for r in resources}
    violations: list[Violation] = []
    for policy in ALL_POLICIES:
        level = policy.enforcement_level or EnforcementLevel.ADVISORY
        policy_config = config.get(policy.name)
        if isinstance(policy, StackValidationPolicy):
            for message, urn in check_stack(policy, resources, policy_config):
                name = by_urn.get(urn or "", "<stack>")
                violations.append(Violation(policy.name, level, name, message))
            continue
        for r in resources:
            policy.validate(
                _validation_args(r, policy_config),
                lambda message, urn=None, r=r, p=policy, lv=level: violations.append(
                    Violation(p.name, lv, r.name, message)
                ),
            )
    return violations
