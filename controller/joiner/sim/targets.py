"""The managed nodes a step that acts on nodes (``interrupt``, ``unhealthy``) picks."""

from __future__ import annotations

from typing import Any

from joiner.api import labels as wk
from joiner.kube.api import KubeAPI
from joiner.sim.scenario import NodeTargetStep, ScenarioError


def target_nodes(kube: KubeAPI, step: NodeTargetStep) -> list[dict[str, Any]]:
    """The named managed node, or the first ``count`` (by name) the selector matches; a
    name that is no managed node at this step is the scenario's error."""
    where = f"spec.steps[{step.index}].{step.action}"
    managed = {
        n["metadata"]["name"]: n
        for n in kube.list("Node").items
        if (n["metadata"].get("labels") or {}).get(wk.NODEPOOL)
        and (n.get("spec") or {}).get("providerID")
    }
    if step.node is not None:
        if step.node not in managed:
            raise ScenarioError(f"{where}.node: no managed node named {step.node!r} at this step")
        return [managed[step.node]]
    selector = step.node_selector or {}
    chosen = [
        name
        for name in sorted(managed)
        if all(
            (managed[name]["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items()
        )
    ][: step.count]
    return [managed[name] for name in chosen]
