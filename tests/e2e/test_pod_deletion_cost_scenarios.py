"""Pod deletion cost end to end [PDC]: the real operator in the simulator, whose
ReplicaSet controller ranks pods for scale-down as the real one does. With the
PodDeletionCostManagement gate, Joiner writes controller.kubernetes.io/pod-deletion-cost
on the ReplicaSet pods of its nodes, so a Deployment scaling in empties the node
consolidation would remove first and that node goes without a single eviction; without
the gate the scale-down spreads over the nodes and consolidation evicts to repack."""

from __future__ import annotations

from typing import Any

import yaml
from joiner import testing
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api.conditions import set_condition
from joiner.controllers.deletioncost import DISRUPTING, PodDeletionCost
from joiner.controllers.disruption.candidates import build_candidates
from joiner.sim.engine import Simulation
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import load_scenario

APP = "web"


def _scenario(
    gate: bool,
    steps: list[dict[str, Any]],
    extra: tuple[dict, ...] = (),
    budget: str = "100%",
    consolidate_after: str = "0s",
) -> dict:
    """Three 4-CPU nodes, two web pods of 1500m on each (six replicas)."""
    return testing.on_demand_pool_scenario(
        "deletion-cost",
        [testing.scenario_instance_type("m-4x16", "4", "16Gi", {"zone-a/on-demand": 0.192})],
        {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": consolidate_after,
            "budgets": [{"nodes": budget}],
        },
        [
            # pods that go at once when the ReplicaSet deletes them, as most web servers
            testing.deployment(
                APP, replicas=6, cpu="1500m", memory="1Gi", terminationGracePeriodSeconds=0
            ),
            *extra,
        ],
        [{"settle": "5m"}, *steps],
        f"PodDeletionCostManagement={str(gate).lower()}",
    )


def _run(doc: dict[str, Any]) -> tuple[Simulation, SimulationResult]:
    simulation = Simulation(load_scenario(yaml.safe_dump(doc)))
    return simulation, simulation.run()


def _costs(simulation: Simulation) -> dict[str, set[str | None]]:
    """Node -> the deletion costs of the web pods on it."""
    costs: dict[str, set[str | None]] = {}
    for pod in simulation.kube.list("Pod", "default").items:
        node = pod["spec"].get("nodeName")
        annotations = pod["metadata"].get("annotations") or {}
        costs.setdefault(node, set()).add(annotations.get(wk.POD_DELETION_COST))
    return costs


SCALE_IN = [
    {"advance": "3m"},
    {"scale": {"kind": "Deployment", "name": APP, "replicas": 4}},
    {"advance": "15m"},
]


def test_every_pod_of_a_node_gets_its_rank_and_the_ranks_are_distinct() -> None:
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}]))
    costs = _costs(simulation)
    assert len(costs) == 3
    assert all(len(values) == 1 for values in costs.values())  # one value a node
    assert sorted(int(next(iter(v))) for v in costs.values()) == [-3, -2, -1]


def test_with_the_gate_a_scale_in_empties_one_node_and_nothing_is_evicted() -> None:
    _, result = _run(_scenario(True, SCALE_IN))
    assert result.totals.evictions == 0
    assert len(result.final.managed_nodes) == 2
    assert result.final.pods_running == 4


def test_without_the_gate_no_annotation_and_consolidation_evicts_to_repack() -> None:
    simulation, result = _run(_scenario(False, SCALE_IN))
    assert result.totals.evictions == 1
    assert len(result.final.managed_nodes) == 2
    assert all(v == {None} for v in _costs(simulation).values())


def test_only_the_nodes_within_the_budget_are_ranked() -> None:
    """The default budget (10% of three nodes: one) lets one node be disrupted: only its
    pods are ranked; the others have no annotation."""
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}], budget="10%"))
    assert sorted(next(iter(v)) or "" for v in _costs(simulation).values()) == ["", "", "-1"]


def test_a_do_not_disrupt_pod_takes_the_annotation_off_its_node() -> None:
    """A pod that may not be disrupted keeps its node: that node's pods are not ranked."""
    guarded = testing.pod("guarded", cpu="100m", memory="64Mi")
    guarded["metadata"].setdefault("annotations", {})[wk.DO_NOT_DISRUPT] = "true"
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}], extra=(guarded,)))
    node = simulation.kube.get("Pod", "guarded", "default")["spec"]["nodeName"]
    costs = _costs(simulation)
    assert costs[node] == {None}
    assert sorted(int(next(iter(v))) for n, v in costs.items() if n != node) == [-2, -1]


def test_a_node_being_disrupted_gets_the_least_cost() -> None:
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}]))
    operator = simulation.operator
    assert operator.deletion_cost is not None
    name = next(iter(operator.state.managed_nodes())).name
    operator.state.marked_for_deletion.add(name)
    assert isinstance(operator.deletion_cost, PodDeletionCost)
    assert operator.deletion_cost.costs()[name] == DISRUPTING


def test_consolidation_does_not_read_back_the_ranks_joiner_wrote() -> None:
    """With the gate the annotation is Joiner's own rank, not a user's word: consolidation
    weighs each pod as if it were absent (as upstream's, which then reads only
    karpenter.sh/disruption-cost) [PDC-6]. Read back, a node being disrupted would weigh
    -10 a pod and the ranks would reorder the very candidates they were ranked from."""
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}]))
    assert {int(next(iter(v))) for v in _costs(simulation).values()} == {-3, -2, -1}
    state = simulation.operator.state
    candidates, _ = build_candidates(state, {}, simulation.clock.now())
    # two pods each, launched together: the same cost, so the order is by name
    assert len(candidates) == 3
    assert len({c.disruption_cost for c in candidates}) == 1
    assert [c.name for c in candidates] == sorted(c.name for c in candidates)


def test_a_pool_never_consolidated_has_no_node_ranked() -> None:
    """consolidateAfter: Never: consolidation will not remove these nodes, so a scale-in
    is left to the ReplicaSet's own ranking: no annotation (as upstream's)."""
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}], consolidate_after="Never"))
    costs = _costs(simulation)
    assert len(costs) == 3
    assert all(v == {None} for v in costs.values())


def test_a_drifted_node_is_ranked_ahead_of_the_others() -> None:
    """The node ranked last (-1) drifts: drifted nodes within the Drifted budget come
    before every other candidate, so it is ranked first (-3) and the others move up."""
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}]))
    deletion_cost = simulation.operator.deletion_cost
    assert isinstance(deletion_cost, PodDeletionCost)
    before = deletion_cost.costs()
    last = next(name for name, cost in before.items() if cost == -1)
    node = next(sn for sn in simulation.operator.state.managed_nodes() if sn.name == last)
    assert node.nodeclaim is not None
    set_condition(node.nodeclaim.status.conditions, nc.DRIFTED, "True", simulation.clock.now())
    after = deletion_cost.costs()
    assert after[last] == -3
    assert sorted(after.values()) == [-3, -2, -1]
    assert [n for n, _ in sorted(after.items(), key=lambda kv: kv[1])][1:] == [
        n for n, _ in sorted(before.items(), key=lambda kv: kv[1])
    ][:2]


def test_a_pdb_allowing_no_eviction_leaves_every_node_unranked() -> None:
    """The web pods' PDB allows no eviction: consolidation cannot drain any of their
    nodes, so none is ranked and no pod has the annotation."""
    pdb = testing.pod_disruption_budget(APP, max_unavailable=0)
    simulation, _ = _run(_scenario(True, [{"advance": "3m"}], extra=(pdb,)))
    costs = _costs(simulation)
    assert len(costs) == 3
    assert all(v == {None} for v in costs.values())
