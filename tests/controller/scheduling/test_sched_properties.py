"""Invariants of any plan, on random small clusters (hypothesis)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.scheduling.model import ClusterSnapshot, ExistingNode, Plan
from joiner.scheduling.pods import host_ports, pod_requests
from joiner.scheduling.solver import solve
from sched_builders import catalogue, nodepool, pod

GI = 2**30 * 1000
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


@st.composite
def _pod(draw: st.DrawFn, index: int) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    labels = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = {wk.ZONE: draw(st.sampled_from(ZONES))}
    if draw(st.integers(0, 4)) == 0:
        labels["solo"] = "yes"
        term = {"labelSelector": {"matchLabels": {"solo": "yes"}}, "topologyKey": wk.HOSTNAME}
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    if draw(st.integers(0, 4)) == 0:
        spec["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    cpu = draw(st.sampled_from(["100m", "500m", "1", "1500m", "3", "7"]))
    memory = draw(st.sampled_from(["64Mi", "512Mi", "1Gi", "3Gi", "12Gi"]))
    return pod(f"p{index:02d}", cpu=cpu, memory=memory, labels=labels, **spec)


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[ExistingNode]]:
    count = draw(st.integers(1, 25))
    pods = [draw(_pod(i)) for i in range(count)]
    nodes = [
        ExistingNode(
            f"n{i}",
            {wk.ZONE: draw(st.sampled_from(ZONES)), wk.HOSTNAME: f"n{i}"},
            {"cpu": 2000 * draw(st.integers(1, 4)), "memory": 4 * GI, "pods": 10000},
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    return pods, nodes


def _zone_of_claim(claim) -> set[str] | None:
    for requirement in claim.requirements:
        if requirement["key"] == wk.ZONE and requirement["operator"] == "In":
            return set(requirement["values"])
    return None


def _check(plan: Plan, pods: list[dict[str, Any]], nodes: list[ExistingNode]) -> None:
    by_key = {f"default/{p['metadata']['name']}": p for p in pods}
    claimed = [key for claim in plan.nodeclaims for key in claim.pods]
    everywhere = Counter([*plan.existing, *claimed, *plan.unplaceable])
    assert everywhere == Counter(list(by_key)), "each pod exactly once"
    types = {t.name: t for t in catalogue()}
    hosts: dict[str, list[str]] = {n.name: [] for n in nodes}
    for key, node in plan.existing.items():
        hosts[node].append(key)
    for claim in plan.nodeclaims:
        summed = res.sum_lists(pod_requests(by_key[k], {}) for k in claim.pods)
        assert claim.requests == summed
        assert all(res.fits(summed, types[t].allocatable) for t in claim.instance_types)
        zones = _zone_of_claim(claim)
        for key in claim.pods:
            wanted = (by_key[key]["spec"].get("nodeSelector") or {}).get(wk.ZONE)
            assert wanted is None or zones == {wanted}
        hosts[claim.hostname] = list(claim.pods)
    for node in nodes:
        used = res.sum_lists(pod_requests(by_key[k], {}) for k in hosts[node.name])
        assert res.fits(used, node.allocatable)
        for key in hosts[node.name]:
            wanted = (by_key[key]["spec"].get("nodeSelector") or {}).get(wk.ZONE)
            assert wanted in (None, node.labels[wk.ZONE])
    for keys in hosts.values():
        assert sum(by_key[k]["metadata"]["labels"].get("solo") == "yes" for k in keys) <= 1
        ports = [port for k in keys for port in host_ports(by_key[k])]
        assert len(ports) == len(set(ports))


@settings(max_examples=60)
@given(_scenario())
def test_any_plan_respects_capacity_selectors_anti_affinity_and_ports(scenario) -> None:
    pods, nodes = scenario
    plan = solve(pods, [nodepool()], {"default": catalogue()}, ClusterSnapshot(nodes=nodes))
    _check(plan, pods, nodes)
    assert not plan.unplaceable or all(
        p.constraint == "resources" for p in plan.unplaceable.values()
    )
