"""Per-pod facts the scheduler needs: requests, host ports, labels [SPEC 3.5]."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from joiner import identity
from joiner.api import resources as res
from joiner.api.resources import ResourceList
from joiner.scheduling.model import Pod

ONE_POD = 1000  # one pod, in milli-units of the "pods" resource

HostPort = tuple[str, str, int]  # (host IP, protocol, port)
WILDCARD_IP = "0.0.0.0"


def _container_requests(container: Mapping) -> ResourceList:
    resources = container.get("resources") or {}
    # A limit without a request means request == limit (Kubernetes defaulting).
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return dict(_parsed(tuple((k, str(v)) for k, v in merged.items())))


@lru_cache(maxsize=4096)
def _parsed(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, int], ...]:
    """Parsing quantities is slow and pods repeat the same few: memoised."""
    return tuple(res.parse_resource_list(dict(items)).items())


# Requests of pod objects seen recently, by identity: the controller's state hands the
# same (never edited) pod dicts to every scheduling pass, which sum the requests of every
# pod on every node. The entry holds the pod, so its id cannot be reused while cached.
_REQUESTS_CACHE_SIZE = 20_000
_requests_by_pod: dict[int, tuple[Pod, ResourceList]] = {}
identity.also_forget(_requests_by_pod.clear)


def pod_requests(pod: Pod, runtime_classes: Mapping[str, ResourceList]) -> ResourceList:
    """max(sum of containers + sidecars, each init container + sidecars started before it)
    + pod overhead (spec.overhead, else the RuntimeClass's), plus one ``pods``."""
    if (pod.get("spec") or {}).get("runtimeClassName"):
        return _pod_requests(pod, runtime_classes)  # depends on the RuntimeClasses too
    cached = _requests_by_pod.get(id(pod))
    if cached is not None and cached[0] is pod:
        return dict(cached[1])
    requests = _pod_requests(pod, runtime_classes)
    if len(_requests_by_pod) >= _REQUESTS_CACHE_SIZE:
        _requests_by_pod.clear()
    _requests_by_pod[id(pod)] = (pod, requests)
    return dict(requests)


def _pod_requests(pod: Pod, runtime_classes: Mapping[str, ResourceList]) -> ResourceList:
    spec = pod.get("spec") or {}
    running = res.sum_lists(_container_requests(c) for c in spec.get("containers") or ())
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for init in spec.get("initContainers") or ():
        requests = _container_requests(init)
        if init.get("restartPolicy") == "Always":
            sidecars = res.add(sidecars, requests)
            init_peak = res.max_of(init_peak, sidecars)
        else:
            init_peak = res.max_of(init_peak, res.add(sidecars, requests))
    total = res.max_of(res.add(running, sidecars), init_peak)
    overhead = spec.get("overhead")
    if overhead:
        total = res.add(total, res.parse_resource_list(overhead))
    elif spec.get("runtimeClassName") in runtime_classes:
        total = res.add(total, runtime_classes[spec["runtimeClassName"]])
    total[res.PODS] = total.get(res.PODS, 0) + ONE_POD
    return {name: amount for name, amount in total.items() if amount}


def host_ports(pod: Pod) -> frozenset[HostPort]:
    """(IP, protocol, port) the pod binds on its node; with hostNetwork every container
    port is a host port."""
    spec = pod.get("spec") or {}
    host_network = bool(spec.get("hostNetwork"))
    containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
    return frozenset(
        (
            port.get("hostIP") or WILDCARD_IP,
            port.get("protocol") or "TCP",
            int(port.get("hostPort") or port["containerPort"]),
        )
        for container in containers
        for port in container.get("ports") or ()
        if port.get("hostPort") or (host_network and port.get("containerPort"))
    )


def host_port_conflict(wanted: Iterable[HostPort], used: Iterable[HostPort]) -> HostPort | None:
    """The first wanted port already taken (same protocol and port, overlapping IPs)."""
    taken = {}
    for ip, protocol, port in used:
        taken.setdefault((protocol, port), set()).add(ip)
    for ip, protocol, port in wanted:
        ips = taken.get((protocol, port))
        if ips and (ip == WILDCARD_IP or WILDCARD_IP in ips or ip in ips):
            return (ip, protocol, port)
    return None


def labels_of(pod: Pod) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def namespace_of(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("namespace") or "default"


def is_owned_by_daemonset(pod: Pod) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(owner.get("kind") == "DaemonSet" for owner in owners)


def daemonset_owner(pod: Pod) -> str | None:
    """The ``namespace/name`` of the DaemonSet that runs the pod, if one does."""
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if owner.get("kind") == "DaemonSet":
            return f"{namespace_of(pod)}/{owner.get('name')}"
    return None
