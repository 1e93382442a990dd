"""NodeOverlays (gate NodeOverlay) [OVERLAY-5]: works out which overlay changes what
(``joiner.cloudprovider.overlays``), hands that to the provider every controller reads
instance types from, and reports each overlay's outcome in its status as upstream does:
``ValidationSucceeded`` False with reason ``Conflict`` for an overlay that conflicts with
one of the same weight (applied nowhere), else True; ``Ready`` follows it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joiner.api import conditions as cond
from joiner.api.nodeoverlay import KIND, NodeOverlay
from joiner.clock import Clock
from joiner.cloudprovider.overlays import OverlaidCloudProvider, resolve
from joiner.controllers.runtime import Result
from joiner.kube.api import Conflict, KubeAPI, NotFound
from joiner.state.cluster import ClusterState, with_own_status

KEY = "overlays"  # one key: every overlay is weighed against every other
# As upstream: look again now and then, for instance types the cloud adds.
RESYNC = 6 * 3600.0
CONFLICT = "Conflict"
CONFLICT_MESSAGE = "conflict with another overlay"
RUNTIME_VALIDATION = "RuntimeValidation"


class NodeOverlays:
    name = "nodeoverlay"

    def __init__(
        self,
        kube: KubeAPI,
        state: ClusterState,
        cloud: OverlaidCloudProvider,
        clock: Clock,
        changed: Callable[[], None],
    ) -> None:
        self.kube, self.state, self.cloud, self.clock = kube, state, cloud, clock
        self.changed = changed  # prices or capacity may differ now: pending pods get a pass

    def reconcile(self, key: str) -> Result:
        overlays, invalid = self._overlays()
        resolution = resolve(
            overlays, self.state.nodepools.values(), self.cloud.base_instance_types
        )
        if resolution != self.cloud.resolution:
            self.cloud.set_resolution(resolution)
            self.changed()
        for raw in list(self.state.objects[KIND].values()):
            name = raw["metadata"]["name"]
            if name in invalid:
                self._write(raw, cond.FALSE, RUNTIME_VALIDATION, invalid[name])
            elif name in resolution.conflicts:
                self._write(raw, cond.FALSE, CONFLICT, CONFLICT_MESSAGE)
            else:
                self._write(raw, cond.TRUE, "ValidationSucceeded", "")
        return Result(requeue_after=RESYNC)

    def _overlays(self) -> tuple[list[NodeOverlay], dict[str, str]]:
        """The overlays as the scheduler uses them, and why the others cannot be read
        (the API server checked them; an object stored before the CRD was can differ)."""
        overlays, invalid = [], {}
        for raw in self.state.objects[KIND].values():
            try:
                overlays.append(NodeOverlay.from_dict(raw))
            except (KeyError, ValueError) as error:  # QuantityError, RequirementError
                invalid[raw["metadata"]["name"]] = str(error)
        return overlays, invalid

    def _write(self, raw: dict[str, Any], status: str, reason: str, message: str) -> None:
        obj = with_own_status(raw)
        conditions = obj["status"].setdefault("conditions", [])
        now, generation = self.clock.now(), raw["metadata"].get("generation")
        changed = cond.set_condition(
            conditions, "ValidationSucceeded", status, now, reason, message, generation
        )
        changed |= cond.set_condition(conditions, "Ready", status, now, reason, message, generation)
        if not changed:
            return
        try:
            self.kube.update_status(obj)
        except (Conflict, NotFound):  # a newer version's event brings another pass
            return
