"""Any quantity, however large, in pods, daemonsets, nodes or limits: a pass never crashes,
and a pod that fits nowhere is reported without changing what happens to the others
(issue #18: one pod asking 10Pi stopped provisioning for the whole cluster)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.scheduling.model import RESOURCES, ClusterSnapshot, DaemonSet, ExistingNode
from sched_builders import nodepool, pod, run

# past int64 in milli-units (9.2e15 units), at its edges, and ordinary amounts
EXTREMES = ("10Pi", "8Ei", "1e30", "9223372036854775807", "9223372036854776", "1e18", "100Ei")
ORDINARY = ("0", "100m", "1", "3", "1Gi", "12Gi")
QUANTITIES = st.sampled_from(EXTREMES + ORDINARY) | st.integers(0, 2**80).map(str)


@st.composite
def _cluster(draw: st.DrawFn) -> dict[str, Any]:
    huge = [
        pod(f"huge{i}", cpu=draw(QUANTITIES), memory=draw(st.sampled_from(EXTREMES)))
        for i in range(draw(st.integers(0, 3)))
    ]
    limits = draw(
        st.none()
        | st.dictionaries(st.sampled_from(("cpu", "memory", "pods")), QUANTITIES, min_size=1)
    )
    daemon = pod("agent", cpu=draw(st.sampled_from(("100m", *EXTREMES))), memory="64Mi")
    node = ExistingNode(
        "big",
        {wk.HOSTNAME: "big", wk.ZONE: "test-zone-1", wk.NODEPOOL: "default"},
        res.parse_resource_list(
            {"cpu": draw(QUANTITIES), "memory": draw(QUANTITIES), "pods": "110"}
        ),
        pods=[pod("bound", cpu=draw(QUANTITIES), memory=draw(QUANTITIES))],
    )
    return {"huge": huge, "limits": limits, "daemon": daemon, "node": node}


def _placed(plan) -> dict[str, str]:
    """Where each placed pod went: a node name, or its NodeClaim's cheapest type."""
    where = dict(plan.existing)
    for claim in plan.nodeclaims:
        where.update(dict.fromkeys(claim.pods, claim.instance_types[0]))
    return where


@settings(max_examples=150, deadline=None)
@given(_cluster())
def test_extreme_quantities_never_crash_and_never_affect_other_pods(cluster) -> None:
    ordinary = [pod(f"web{i}", cpu="1", memory="1Gi") for i in range(3)]
    pools = [nodepool(limits=cluster["limits"])]
    snapshot = ClusterSnapshot(
        nodes=[cluster["node"]], daemonsets=[DaemonSet("kube-system/agent", cluster["daemon"])]
    )
    plan = run([*ordinary, *cluster["huge"]], pools=pools, snapshot=snapshot)
    alone = run(ordinary, pools=pools, snapshot=snapshot)
    others = {k: v for k, v in _placed(plan).items() if k.startswith("default/web")}
    assert others == _placed(alone)
    assert {k: v for k, v in plan.unplaceable.items() if k.startswith("default/web")} == dict(
        alone.unplaceable
    )
    for key, why in plan.unplaceable.items():
        assert why.message  # every pod left pending says why
        if key.startswith("default/huge") and why.constraint == RESOURCES:
            assert why.message.startswith("no instance type has enough resources")


def test_a_request_past_the_vectors_saturation_does_not_fit_a_node_reporting_int64_max() -> None:
    # 10Pi CPUs (1.1e19 milli) is more than 9223372036854776 CPUs (9.2e18 milli); the
    # vectors saturate both at 2**62, and the node's unbounded free room once took them.
    node = ExistingNode(
        "big",
        {wk.HOSTNAME: "big", wk.ZONE: "test-zone-1", wk.NODEPOOL: "default"},
        res.parse_resource_list({"cpu": "9223372036854776", "memory": "10Pi", "pods": "110"}),
    )
    ordinary = [pod(f"web{i}", cpu="1", memory="1Gi") for i in range(3)]
    huge = [pod(f"huge{i}", cpu="10Pi", memory="10Pi") for i in range(2)]
    plan = run([*ordinary, *huge], snapshot=ClusterSnapshot(nodes=[node]))
    assert plan.existing == {f"default/web{i}": "big" for i in range(3)}
    assert plan.nodeclaims == []
    assert sorted(plan.unplaceable) == ["default/huge0", "default/huge1"]
