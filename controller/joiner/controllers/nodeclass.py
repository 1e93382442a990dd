"""EC2NodeClass status: the cloud provider resolves selectors (subnets, security
groups, AMIs, instance profile) into status and conditions; this controller
writes them and the static drift hash."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.controllers.runtime import DONE, Result
from joiner.kube.api import Conflict, KubeAPI, NotFound

# (nodeclass) -> the complete status dict, including its conditions.
Resolver = Callable[[EC2NodeClass], dict[str, Any]]

RESOLVE_INTERVAL = 300.0  # selectors can match new resources: look again periodically


class NodeClassStatus:
    name = "nodeclass.status"

    def __init__(self, kube: KubeAPI, resolve: Resolver) -> None:
        self.kube, self.resolve = kube, resolve

    def reconcile(self, key: str) -> Result:
        try:
            raw = self.kube.get("EC2NodeClass", key)
        except NotFound:
            return DONE
        nodeclass = EC2NodeClass.from_dict(raw)
        try:
            self._write_hash(raw, nodeclass.static_hash())
            status = self.resolve(nodeclass)
            if status != raw.get("status"):
                raw["status"] = status
                self.kube.update_status(raw)
        except Conflict:
            return Result(requeue_after=0.0)
        return Result(requeue_after=RESOLVE_INTERVAL)

    def _write_hash(self, raw: dict[str, Any], digest: str) -> None:
        annotations = raw["metadata"].setdefault("annotations", {})
        if annotations.get(wk.EC2NODECLASS_HASH) == digest:
            return
        annotations[wk.EC2NODECLASS_HASH] = digest
        raw["metadata"]["resourceVersion"] = self.kube.update(raw)["metadata"]["resourceVersion"]
