"""Declaring a policy: every Joiner policy is mandatory unless it says otherwise, and its
configuration is a set of named options, each a JSON schema with a default and a
description (docs/policies.md lists them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

Options = Mapping[str, dict[str, Any]]


def resource_policy(
    name: str,
    description: str,
    validate: Callable[..., None],
    *,
    options: Options | None = None,
    level: EnforcementLevel = EnforcementLevel.MANDATORY,
) -> ResourceValidationPolicy:
    return ResourceValidationPolicy(
        name=name,
        description=description,
        enforcement_level=level,
        config_schema=_config_schema(options),
        validate=validate,
    )


def stack_policy(
    name: str,
    description: str,
    validate: Callable[..., None],
    *,
    options: Options | None = None,
) -> StackValidationPolicy:
    return StackValidationPolicy(
        name=name,
        description=description,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=_config_schema(options),
        validate=validate,
    )


def allow_option(description: str) -> dict[str, Any]:
    """A boolean option that lifts a check; off by default."""
    return {"type": "boolean", "default": False, "description": description}


def string_list_option(description: str, **schema: Any) -> dict[str, Any]:
    """A list-of-strings option; ``schema`` adds a default or constrains the items."""
    items = {"type": "string", **schema.pop("items", {})}
    return {"type": "array", "items": items, **schema, "description": description}


def _config_schema(options: Options | None) -> PolicyConfigSchema | None:
    return PolicyConfigSchema(properties=dict(options)) if options else None
