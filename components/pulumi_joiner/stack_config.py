"""Reading the stacks' configuration (the programs under stacks/ stay a few lines long)."""

import json
from collections.abc import Mapping
from typing import Any

import pulumi

from pulumi_joiner._common import ArgumentError

CONFIG_NAMESPACE = "joiner"
# Stack config spells the per-pool keys in camelCase, as Pulumi config usually does.
NODE_POOL_CONFIG_KEYS = {"nodePool": "node_pool", "nodeClass": "node_class"}


def node_pools_from_config(config: pulumi.Config, key: str = "nodePools") -> dict[str, Any] | None:
    """``joiner:nodePools`` ({name: {nodePool: {...}, nodeClass: {...}}}) as the components'
    ``node_pools`` argument; None when unset (the components' default pool)."""
    value = config.get_object(key)
    if value is None:
        return None
    where = f"{CONFIG_NAMESPACE}:{key}"
    if not isinstance(value, Mapping):
        raise ArgumentError(f"config '{where}' must be a map of NodePool name to overrides")
    pools: dict[str, Any] = {}
    for name, overrides in value.items():
        overrides = overrides or {}
        if not isinstance(overrides, Mapping):
            raise ArgumentError(f"config '{where}.{name}' must be a map (nodePool, nodeClass)")
        unknown = sorted(set(overrides) - set(NODE_POOL_CONFIG_KEYS))
        if unknown:
            raise ArgumentError(
                f"config '{where}.{name}' has unknown keys {unknown}"
                f" (expected {', '.join(NODE_POOL_CONFIG_KEYS)})"
            )
        pools[name] = {NODE_POOL_CONFIG_KEYS[k]: v for k, v in overrides.items()}
    return pools


def optional_settings(config: pulumi.Config, **keys: str) -> dict[str, Any]:
    """Component arguments from the config keys that are set: ``argument=configKey``."""
    values = {argument: config.get(key) for argument, key in keys.items()}
    return {argument: value for argument, value in values.items() if value is not None}


def string_list_from_config(config: pulumi.Config, key: str, example: str) -> list[str] | None:
    """A list-of-strings key (``pulumi config set --path 'joiner:<key>[0]' <example>``), or
    None when unset. A bare string is refused with the command that sets a list."""
    raw = config.get(key)
    if raw is None:
        return None
    where = f"{CONFIG_NAMESPACE}:{key}"
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ArgumentError(
            f"config '{where}' must be a list of strings, got {raw!r}: set it with"
            f" pulumi config set --path '{where}[0]' {example}"
        )
    return value


# Stack outputs both programs export: output name -> attribute of Autoscaler and Cluster.
JOINER_OUTPUTS = {
    "controllerRoleArn": "controller_role_arn",
    "nodeRoleArn": "node_role_arn",
    "nodeRoleName": "node_role_name",
    "interruptionQueue": "queue_name",
    "namespace": "namespace",
}


def export_outputs(component: pulumi.ComponentResource, **outputs: str) -> None:
    """Exports the JOINER_OUTPUTS of ``component``, then ``name=attribute`` for each of
    ``outputs``."""
    for name, attribute in {**JOINER_OUTPUTS, **outputs}.items():
        pulumi.export(name, getattr(component, attribute))
