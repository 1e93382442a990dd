"""Pulumi components that ship Joiner as an infrastructure module.

    Cluster            a new EKS cluster with Joiner on it
    Autoscaler         Joiner on an existing cluster
    ControllerRole     the controller's IAM role (IRSA or Pod Identity) and policy
    NodeRole           the role of the nodes Joiner launches
    InterruptionQueue  SQS + EventBridge rules for interruption events
    Controller         the controller Deployment and everything it needs in the cluster
    NodePool           a NodePool + EC2NodeClass pair with sensible defaults

Every component takes ``(name, args, opts)`` with ``args`` a TypedDict (see each
``*Args``); type tokens are ``joiner:index:<Class>``. See docs/pulumi.md.
"""

from pulumi_joiner.autoscaler import Autoscaler, AutoscalerArgs
from pulumi_joiner.cluster import Cluster, ClusterArgs
from pulumi_joiner.controller import Controller, ControllerArgs
from pulumi_joiner.controller_role import ControllerRole, ControllerRoleArgs
from pulumi_joiner.interruption_queue import InterruptionQueue, InterruptionQueueArgs
from pulumi_joiner.node_role import NodeRole, NodeRoleArgs
from pulumi_joiner.nodepool import NodePool, NodePoolArgs

COMPONENTS = [
    Cluster,
    Autoscaler,
    ControllerRole,
    NodeRole,
    InterruptionQueue,
    Controller,
    NodePool,
]

__all__ = [
    "COMPONENTS",
    "Autoscaler",
    "AutoscalerArgs",
    "Cluster",
    "ClusterArgs",
    "Controller",
    "ControllerArgs",
    "ControllerRole",
    "ControllerRoleArgs",
    "InterruptionQueue",
    "InterruptionQueueArgs",
    "NodePool",
    "NodePoolArgs",
    "NodeRole",
    "NodeRoleArgs",
]
