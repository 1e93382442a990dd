"""The pods of nodes being deleted in the disruption simulations [DISR-6, DISR-7], as
Karpenter's SimulateScheduling adds them: they take room, and they may go to a node
still starting (the drift-during-a-drain regression is tests/e2e/crash/)."""

from __future__ import annotations

from typing import Any

from disruption_world import disruptions, instance_type, nodepool, simulate
from joiner import testing

ZONE = "topology.kubernetes.io/zone"
LARGE = instance_type(
    "large",
    "8",
    "16Gi",
    {"zone-a/spot": 0.1, "zone-b/spot": 0.1, "zone-a/on-demand": 0.3},
)
POOL = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h", "budgets": [{"nodes": "3"}]}
CAPACITY_TYPES = [testing.capacity_types("spot", "on-demand")]


def pool(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return nodepool(requirements=CAPACITY_TYPES, disruption=POOL, labels=labels)


def test_a_drained_nodes_pods_may_go_to_a_starting_node_without_blocking_a_drift():
    """Node A (zone a, its four 2-CPU pods under a PDB of one) is interrupted while node B
    (zone b) drifts. A's first evicted pod gets a new node, still starting when the drift
    pass runs; A's other three pods would go there too. That node may well be their
    replacement, so B's drift goes at once (at 0:01:40), not only once it is initialized
    (0:02:10 without the rule: "would schedule on ..., which is not initialized yet")."""
    result = simulate(
        [LARGE],
        [
            pool(),
            testing.deployment("a", 4, "2", "256Mi", nodeSelector={ZONE: "zone-a"}),
            testing.pod_disruption_budget("a", max_unavailable=1),
            testing.deployment("b", 0, "3", "256Mi", nodeSelector={ZONE: "zone-b"}),
        ],
        [
            {"settle": "5m"},
            {"scale": {"kind": "Deployment", "name": "b", "namespace": "default", "replicas": 2}},
            {"settle": "5m"},
            {
                "interrupt": {
                    "nodeSelector": {ZONE: "zone-a"},
                    "count": 1,
                    "kind": "spot-interruption",
                }
            },
            {"apply": [pool(labels={"rev": "2"})]},
            {"advance": "5m"},
        ],
    )
    assert result.failures == []
    blocked = [e.message for e in result.events if e.reason == "DisruptionBlocked"]
    assert not [m for m in blocked if "not initialized yet" in m]
    ((at, message),) = disruptions(result)
    assert message.startswith("Drifted: replace ")
    starting = [c for c in result.nodeclaims if c.capacity_type == "on-demand"]
    assert len(starting) == 1 and at < starting[0].initialized_at
