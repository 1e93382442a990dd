"""NodePool: a Karpenter NodePool and its EC2NodeClass with sensible defaults, each field
overridable; overrides are validated like the API server would, before anything is created."""

import copy
from collections.abc import Mapping
from typing import Any, Required, TypedDict

import pulumi
from joiner.api import labels as wk
from joiner.api.ec2nodeclass import DEFAULT_METADATA_OPTIONS, default_block_device_mappings
from joiner.api.validation import validate_object

from pulumi_joiner._common import (
    TYPE_PREFIX,
    ArgumentError,
    child_opts,
    custom_resource,
    declared_outputs,
    require,
)

DISCOVERY_TAG = "karpenter.sh/discovery"
DEFAULT_CPU_LIMIT = "1000"
# The NodePool's deletion waits until its NodeClaims are gone, i.e. until the controller
# has drained and terminated every node of the pool (a clean `pulumi destroy`).
FOREGROUND_DELETION = {"pulumi.com/deletionPropagationPolicy": "foreground"}
# Stand-ins for values not known at preview time, so overrides are still validated then.
_UNKNOWN_CLUSTER = "cluster-name-at-preview"
_UNKNOWN_ROLE = "node-role-at-preview"


class NodePoolArgs(TypedDict, total=False):
    """Inputs of NodePool."""

    cluster_name: Required[pulumi.Input[str]]
    """Name of the EKS cluster; subnets and security groups are discovered by the tag
    karpenter.sh/discovery=<cluster_name>."""
    node_role_name: Required[pulumi.Input[str]]
    """Name of the IAM role the nodes run with (EC2NodeClass spec.role)."""
    node_pool_name: str
    """Name of the NodePool object (default: the component name)."""
    node_class_name: str
    """Name of the EC2NodeClass object (default: the NodePool name)."""
    node_pool: Mapping[str, Any]
    """Overrides merged field by field into the NodePool spec (dicts merge, lists and
    scalars replace, null removes a default)."""
    node_class: Mapping[str, Any]
    """Overrides merged field by field into the EC2NodeClass spec."""


class NodePool(pulumi.ComponentResource):
    """A NodePool + EC2NodeClass pair: AL2023, discovery tags, IMDSv2 required, encrypted
    gp3 root, on-demand and spot, c/m/r of generation > 2, a CPU limit, and consolidation
    WhenEmptyOrUnderutilized."""

    node_pool_name: pulumi.Output[str]
    """Name of the NodePool."""
    node_class_name: pulumi.Output[str]
    """Name of the EC2NodeClass."""

    def __init__(
        self,
        name: str,
        args: NodePoolArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(f"{TYPE_PREFIX}NodePool", name, None, opts)
        cluster_name = require("NodePool", name, args, "cluster_name")
        role = require("NodePool", name, args, "node_role_name")
        pool_name = args.get("node_pool_name") or name
        class_name = args.get("node_class_name") or pool_name
        pool_overrides = dict(args.get("node_pool") or {})
        class_overrides = dict(args.get("node_class") or {})
        check_overrides(
            f"NodePool {name!r}", pool_name, class_name, pool_overrides, class_overrides
        )
        node_class = ec2_node_class_manifest(class_name, cluster_name, role, class_overrides)
        node_pool = node_pool_manifest(pool_name, class_name, pool_overrides)
        node_pool["metadata"]["annotations"] = FOREGROUND_DELETION
        class_resource = custom_resource(f"{name}-node-class", node_class, child_opts(self))
        custom_resource(
            f"{name}-node-pool", node_pool, child_opts(self, depends_on=[class_resource])
        )
        self.node_pool_name = pulumi.Output.from_input(pool_name)
        self.node_class_name = pulumi.Output.from_input(class_name)
        self.register_outputs(declared_outputs(self))


def default_node_pool_spec(class_name: str) -> dict[str, Any]:
    return {
        "template": {
            "spec": {
                "nodeClassRef": {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": class_name},
                "requirements": [
                    _requirement(wk.ARCH, "In", ["amd64"]),
                    _requirement(wk.OS, "In", ["linux"]),
                    _requirement(
                        wk.CAPACITY_TYPE, "In", [wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND]
                    ),
                    _requirement(wk.INSTANCE_CATEGORY, "In", ["c", "m", "r"]),
                    _requirement(wk.INSTANCE_GENERATION, "Gt", ["2"]),
                ],
                "expireAfter": "720h",
            }
        },
        "limits": {"cpu": DEFAULT_CPU_LIMIT},
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "1m",
        },
    }


def default_ec2_node_class_spec(cluster_name: Any, role: Any) -> dict[str, Any]:
    return {
        "role": role,
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "metadataOptions": dict(DEFAULT_METADATA_OPTIONS),
        "blockDeviceMappings": default_block_device_mappings("AL2023"),
    }


def node_pool_manifest(
    pool_name: str, class_name: str, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": wk.API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": pool_name},
        "spec": merge(default_node_pool_spec(class_name), overrides),
    }


def ec2_node_class_manifest(
    class_name: str, cluster_name: Any, role: Any, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": wk.AWS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": {"name": class_name},
        "spec": merge(default_ec2_node_class_spec(cluster_name, role), overrides),
    }


def merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied field by field: nested dicts merge, anything else
    replaces, and None removes the field. ``base`` itself is left as it is (its values may
    be Pulumi Outputs, which cannot be copied)."""
    merged = dict(base)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def check_overrides(
    component: str,
    pool_name: str,
    class_name: str,
    pool_overrides: Mapping[str, Any],
    class_overrides: Mapping[str, Any],
) -> None:
    """Validate the merged objects as the API server would; raise naming the argument."""
    candidates = (
        ("node_pool", node_pool_manifest(pool_name, class_name, pool_overrides)),
        (
            "node_class",
            ec2_node_class_manifest(class_name, _UNKNOWN_CLUSTER, _UNKNOWN_ROLE, class_overrides),
        ),
    )
    for argument, manifest in candidates:
        errors = validate_object(manifest)
        if errors:
            details = "; ".join(f"{error.path}: {error.message}" for error in errors)
            raise ArgumentError(f"{component}: argument '{argument}' is invalid: {details}")


def _requirement(key: str, operator: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": values}
