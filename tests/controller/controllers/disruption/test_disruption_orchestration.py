"""Orchestration and ordering [DISR-2, DISR-9], and terminationGracePeriod during a
forceful drain [DISR-1], end to end."""

from __future__ import annotations

from disruption_world import (
    deployment,
    disruptions,
    instance_type,
    live_types,
    nodepool,
    od,
    scale,
    simulate,
    types_pool,
)
from joiner import testing


def test_a_replacement_that_cannot_launch_leaves_the_old_node_untainted_and_running():
    """[DISR-9] drift wants a c3; every c3 launch fails (no capacity at launch time)."""
    big = instance_type("big8", "8", "16Gi", od(0.50))
    c3 = instance_type("c3", "3", "6Gi", od(0.12))
    before = types_pool("big8", disruption={"consolidateAfter": "Never"})
    after = types_pool("c3", disruption={"consolidateAfter": "Never"})

    def no_c3_capacity(simulation) -> None:
        simulation.cloud.provider.no_capacity.add(("c3", "zone-a", "on-demand"))

    result = simulate(
        [big, c3],
        [before, deployment("app", 1, "1")],
        [{"settle": "5m"}, {"apply": [after]}, {"advance": "2m"}],
        prepare=no_c3_capacity,
    )
    assert live_types(result) == ["big8"]
    (node,) = [n for n in result.final.nodes if n.managed]
    assert all(t["key"] != "karpenter.sh/disrupted" for t in node.taints)
    assert len(node.pods) == 1
    failed = [e for e in result.events if e.reason == "DisruptionFailed"]
    assert [e.message for e in failed][:1] == ["Drifted: a replacement failed to launch; node kept"]
    assert all(c.disruption_reason is None for c in result.nodeclaims if c.instance_type == "big8")


def test_emptiness_goes_first_when_a_pass_could_also_consolidate():
    """[DISR-2] one empty node and one that a cheaper type could replace: the first
    command of the pass is the empty node's deletion."""
    big = instance_type("big", "8", "16Gi", od(1.0))
    small = instance_type("small", "2", "4Gi", od(0.1))
    only_big = types_pool(
        "big", disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]}
    )
    both = types_pool(
        "big", "small", disruption={"consolidateAfter": "30s", "budgets": [{"nodes": "100%"}]}
    )
    result = simulate(
        [big, small],
        [
            only_big,
            deployment("keep", 1, "500m", anti_affinity=True),
            deployment("leave", 1, "7600m"),
        ],
        [
            {"settle": "5m"},
            {"expect": {"nodes": {"managed": 2}}},
            scale("leave", 0),
            {"advance": "1m"},
            {"apply": [both]},
            {"advance": "10m"},
        ],
    )
    assert result.failures == []
    kinds = [message.split(":")[0] for _, message in disruptions(result)]
    assert kinds[0] == "Empty"
    assert "Underutilized" in kinds
    assert live_types(result) == ["small"]


def test_termination_grace_period_ends_a_drain_that_a_pdb_blocks():
    """[DISR-1, LIFE-2] expireAfter 10m, terminationGracePeriod 2m: the PDB holds the
    pod for two minutes, then it is deleted and the node goes."""
    pool = nodepool(expire_after="10m", disruption={"consolidateAfter": "Never"})
    pool["spec"]["template"]["spec"]["terminationGracePeriod"] = "2m"
    pdb = testing.pod_disruption_budget("app")
    result = simulate(
        [instance_type("small", "2", "4Gi", od(0.1))],
        [pool, pdb, deployment("app", 1, "500m")],
        [{"settle": "5m"}, {"advance": "15m"}],
    )
    first = result.nodeclaims[0]
    assert first.disruption_reason == "Expired"
    assert 600 + 120 <= first.deleted_at <= 600 + 130
    deleted = [e for e in result.events if e.reason == "Deleted" and e.kind == "Pod"]
    assert len(deleted) == 1
    assert deleted[0].message == "terminationGracePeriod elapsed"
    assert 720 <= deleted[0].time <= 725
    assert any(e.reason == "FailedDraining" for e in result.events)


def test_a_restart_right_after_a_command_started_leaves_no_node_tainted():
    """A restart between tainting an empty node and deleting it; meanwhile the node was
    annotated do-not-disrupt, so no new pass chooses it again: the fresh process removes
    the taint and the reason the dropped command left (Karpenter does so each pass)."""
    small = instance_type("small", "2", "4Gi", od(0.1))
    pool = types_pool("small", disruption={"consolidateAfter": "30s"})

    def interrupt_the_first_command(simulation) -> None:
        orchestrator = simulation.operator.orchestrator
        start = orchestrator.start

        def start_then_crash(command) -> None:
            start(command)
            for candidate in command.candidates:
                node = simulation.kube.get("Node", candidate.name)
                node["metadata"].setdefault("annotations", {})["karpenter.sh/do-not-disrupt"] = (
                    "true"
                )
                simulation.kube.update(node)
            simulation.restarts.request()

        orchestrator.start = start_then_crash

    result = simulate(
        [small],
        [pool, deployment("app", 1, "1")],
        [{"settle": "5m"}, scale("app", 0), {"advance": "3m"}],
        prepare=interrupt_the_first_command,
    )
    assert result.totals.restarts == 1
    assert [message for _, message in disruptions(result)] == [
        f"Empty: delete {result.nodeclaims[0].name}"
    ]
    (node,) = [n for n in result.final.nodes if n.managed]
    assert all(t["key"] != "karpenter.sh/disrupted" for t in node.taints)
    assert [c.disruption_reason for c in result.nodeclaims] == [None]
