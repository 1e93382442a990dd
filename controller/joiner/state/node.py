"""A StateNode joins what the controller knows about one machine: its NodeClaim
(absent for unmanaged nodes) and its Node (absent until registration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import resources as res
from joiner.api.conditions import is_true
from joiner.api.nodeclaim import NodeClaim
from joiner.api.resources import ResourceList


@dataclass
class StateNode:
    nodeclaim: NodeClaim | None = None
    node: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        """The Node's name once registered, else the NodeClaim's."""
        if self.node is not None:
            return self.node["metadata"]["name"]
        assert self.nodeclaim is not None
        return self.nodeclaim.status.node_name or self.nodeclaim.name

    @property
    def provider_id(self) -> str | None:
        if self.node is not None and (self.node.get("spec") or {}).get("providerID"):
            return self.node["spec"]["providerID"]
        return self.nodeclaim.status.provider_id if self.nodeclaim else None

    @property
    def managed(self) -> bool:
        return self.nodeclaim is not None

    @property
    def labels(self) -> dict[str, str]:
        if self.node is not None:
            return (self.node.get("metadata") or {}).get("labels") or {}
        assert self.nodeclaim is not None
        return {
            **self.nodeclaim.requirement_set().labels(),
            **_single_valued(self.nodeclaim),
            **(self.nodeclaim.metadata.get("labels") or {}),
            wk.HOSTNAME: self.name,
        }

    @property
    def taints(self) -> list[dict[str, Any]]:
        if self.node is not None:
            return list((self.node.get("spec") or {}).get("taints") or [])
        return list(self.nodeclaim.taints) if self.nodeclaim else []

    @property
    def startup_taints(self) -> list[dict[str, Any]]:
        return list(self.nodeclaim.startup_taints) if self.nodeclaim else []

    @property
    def allocatable(self) -> ResourceList:
        """The Node's allocatable once it reports one, else what the NodeClaim says."""
        if self.node is not None:
            reported = (self.node.get("status") or {}).get("allocatable")
            if reported and (self.initialized or self.nodeclaim is None):
                return res.parse_resource_list(reported)
        if self.nodeclaim is not None and self.nodeclaim.status.allocatable:
            return res.parse_resource_list(self.nodeclaim.status.allocatable)
        if self.nodeclaim is not None:
            # Not launched yet: it still holds room for the pods it was opened for, so a
            # batch running before (or while retrying) the launch does not open another.
            return dict(self.nodeclaim.requests_milli)
        return {}

    @property
    def capacity(self) -> ResourceList:
        if self.node is not None and (self.node.get("status") or {}).get("capacity"):
            return res.parse_resource_list(self.node["status"]["capacity"])
        if self.nodeclaim is not None:
            return res.parse_resource_list(self.nodeclaim.status.capacity)
        return {}

    @property
    def registered(self) -> bool:
        return self.node is not None

    @property
    def initialized(self) -> bool:
        if self.nodeclaim is not None:
            return self.nodeclaim.condition_true(nc.INITIALIZED)
        return self.ready

    @property
    def ready(self) -> bool:
        return self.node is not None and is_true(
            (self.node.get("status") or {}).get("conditions"), "Ready"
        )

    @property
    def deleting(self) -> bool:
        node_deleting = self.node is not None and bool(
            (self.node.get("metadata") or {}).get("deletionTimestamp")
        )
        claim_deleting = self.nodeclaim is not None and bool(
            self.nodeclaim.metadata.get("deletionTimestamp")
        )
        return node_deleting or claim_deleting

    @property
    def nodepool(self) -> str | None:
        if self.nodeclaim is not None:
            return self.nodeclaim.nodepool
        return self.labels.get(wk.NODEPOOL)


def _single_valued(nodeclaim: NodeClaim) -> dict[str, str]:
    """Well-known labels the NodeClaim's requirements pin to one value (e.g. the pool)."""
    out = {}
    for key, requirement in nodeclaim.requirement_set().items():
        value = requirement.any_value()
        if value is not None and len(requirement) == 1:
            out[key] = value
    return out
