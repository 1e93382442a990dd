"""What the pods already on a node take from it: their summed requests, host ports and
CSI volumes, the daemonsets they run and their required anti-affinity terms.

Every solve starts from these facts for every existing node, and solves come often
over the same nodes (each disruption simulation, each emulated kube-scheduler pass).
Callers hand the same pod dicts until a pod changes (the controller's state never
edits a pod in place), so a node's facts are remembered by the identity of its pods.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from joiner.api import resources as res
from joiner.api.resources import ResourceList
from joiner.identity import IdentityCache
from joiner.scheduling.model import Pod, VolumeCatalog
from joiner.scheduling.pods import (
    HostPort,
    daemonset_owner,
    host_ports,
    namespace_of,
    pod_requests,
)
from joiner.scheduling.volumes import pod_volumes


@dataclass(frozen=True, slots=True)
class Occupancy:
    requests: ResourceList
    ports: frozenset[HostPort]
    volumes: Mapping[str, frozenset[str]]  # CSI driver -> volume ids
    daemonsets: frozenset[str]  # names of the daemonsets with a pod here
    anti_affinity: tuple[tuple[str, Mapping[str, Any]], ...]  # (namespace, required term)


# By the node's pods; about two pod lists per node per state change is typical. Callers
# that name a slot (the solver, disruption) hold only each node's latest pods.
_remembered: IdentityCache[Occupancy] = IdentityCache(20_000)
# By the pod list itself, for callers that hand the very same list until a pod changes
# (the state's and the emulated kube-scheduler's nodes): one identity to look up instead
# of one per pod, which was 3% of a simulated day.
_by_list: IdentityCache[Occupancy] = IdentityCache(20_000)


def occupancy(
    pods: Sequence[Pod],
    runtime_classes: Mapping[str, ResourceList],
    volumes: VolumeCatalog,
    slot: Hashable = None,
) -> Occupancy:
    """``slot``: the caller's name for whose pods these are (e.g. ("solver", node name));
    their value replaces the one remembered for the slot's earlier pods. ``pods`` is not
    edited once passed (a changed list is a new list)."""
    found = _by_list.get((pods,))
    if found is not None:
        return found
    found = _remembered.get(pods)
    if found is None:
        found = _occupancy(pods, runtime_classes, volumes)
        if any(_reads_cluster_objects(pod) for pod in pods):
            return found
        _remembered.put(pods, found, slot=slot)
    _by_list.put((pods,), found, slot=slot)
    return found


def _reads_cluster_objects(pod: Pod) -> bool:
    """Whether the pod's facts depend on more than the pod: a RuntimeClass's overhead, or
    the PVCs, PVs and StorageClasses behind its volumes."""
    spec = pod.get("spec") or {}
    return bool(spec.get("runtimeClassName")) or any(
        v.get("persistentVolumeClaim") or v.get("ephemeral") for v in spec.get("volumes") or ()
    )


def _occupancy(
    pods: Sequence[Pod], runtime_classes: Mapping[str, ResourceList], catalog: VolumeCatalog
) -> Occupancy:
    volumes: dict[str, set[str]] = {}
    for pod in pods:
        for driver, ids in pod_volumes(pod, catalog).usage.items():
            volumes.setdefault(driver, set()).update(ids)
    return Occupancy(
        requests=res.sum_lists(pod_requests(p, runtime_classes) for p in pods),
        ports=frozenset(port for pod in pods for port in host_ports(pod)),
        volumes={driver: frozenset(ids) for driver, ids in volumes.items()},
        daemonsets=frozenset(filter(None, map(daemonset_owner, pods))),
        anti_affinity=tuple(
            (namespace_of(pod), term) for pod in pods for term in _required_anti_affinity(pod)
        ),
    )


def _required_anti_affinity(pod: Pod) -> Sequence[Mapping[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    return affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
