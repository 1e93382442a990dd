"""Each deliberate scheduling difference docs/compatibility.md ("Scheduling") documents,
shown on its own oracle input (tests/controller/scheduling/compatibility/*.json) run
through upstream Karpenter's scheduler and Joiner's ``solve``: both outcomes are exactly
as the page says, the differential suite's predicate for it recognises every pod of the
input, and the suite accepts Joiner's plan. The page names each input, so neither can
change without the other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sched_differential as differential
from joiner.api import labels as wk
from joiner.scheduling.model import Plan
from joiner.testing import oracle
from joiner.testing.workload import solve_workload

CASES_DIR = Path(__file__).parent / "compatibility"
COMPATIBILITY = Path(__file__).parents[3] / "docs" / "compatibility.md"
RUNS = 4


@dataclass(frozen=True)
class Case:
    """What each side does with the input. Counts, not pod names: upstream breaks ties
    between identical pods at random."""

    input: str
    upstream_placed: int  # pods every upstream run placed
    upstream_valid: int  # of those, pods on a node their node selection admits
    upstream_nodeclaims: int
    joiner_placed: int
    joiner_nodeclaims: int
    joiner_zones: int  # distinct zones Joiner's NodeClaims are pinned to


CASES = {
    "required anti-affinity beyond the hostname": Case(
        "anti-affinity-beyond-hostname.json", 1, 1, 1, 3, 3, 3
    ),
    "spread honoring taints, PreferNoSchedule": Case(
        "spread-prefer-no-schedule.json", 3, 3, 1, 3, 3, 3
    ),
    "spread after tolerating PreferNoSchedule": Case(
        "spread-after-tolerating-prefer-no-schedule.json", 2, 2, 0, 2, 1, 0
    ),
    "pod affinity beyond the hostname, PreferNoSchedule": Case(
        "affinity-prefer-no-schedule.json", 0, 0, 0, 3, 1, 1
    ),
    "pod affinity to a NodePool of one domain": Case(
        "affinity-to-a-nodepool-of-one-zone.json", 1, 1, 1, 2, 2, 1
    ),
    "contradictory node selection": Case("contradictory-node-selection.json", 1, 0, 1, 0, 0, 0),
    "pod affinity to pods outside its domains": Case(
        "affinity-to-pods-outside-its-domains.json", 2, 2, 1, 0, 0, 0
    ),
    "spread with nodeAffinityPolicy Ignore": Case(
        "spread-node-affinity-ignore.json", 3, 3, 1, 1, 1, 1
    ),
    "daemonsets a pod's node selection excludes": Case(
        "daemonsets-the-pod-excludes.json", 0, 0, 0, 1, 1, 0
    ),
    "spread within maxSkew": Case("spread-within-max-skew.json", 0, 0, 0, 1, 1, 1),
    "Exists beside NotIn": Case("exists-beside-not-in.json", 1, 1, 1, 0, 0, 0),
    "spread after relaxing a node-affinity term": Case(
        "spread-after-relaxing-a-node-affinity-term.json", 2, 2, 1, 1, 1, 1
    ),
}


# Not pod-level differences: upstream picks among equally good domains at random, and
# some of its runs are cheaper by chance (docs/compatibility.md, "Other deliberate
# differences"). Input -> Joiner's NodeClaims and price, and what gave upstream's
# cheaper runs their luck: a spread domain (``spread_domain_by_chance``), or a required
# node-affinity term, a preferred one or a NodePool earlier in Karpenter's order given
# up after a random pick failed (``gave_up``, by the names ``broken_preferences`` gives
# them).
SPREAD, TERM, PREFERENCE = "spread domain", "node affinity term", "preferred node affinity"
NODEPOOL = "nodepool order"
BY_CHANCE = {
    "spread-domain-by-price.json": (6, 10.7592, SPREAD),
    "spread-domain-tie-at-the-first-nodeclaim.json": (4, 5.0268, SPREAD),
    "spread-domain-then-capacity-type.json": (2, 5.754, SPREAD),
    "spread-domain-then-a-larger-type.json": (3, 6.8335, SPREAD),
    "node-affinity-term-by-chance.json": (4, 5.4212, TERM),
    "node-affinity-term-by-chance-2.json": (4, 5.8507, TERM),
    "node-affinity-term-by-chance-3.json": (4, 5.4212, TERM),
    "spread-domain-schedule-anyway.json": (3, 5.0832, SPREAD),
    "preferred-node-affinity-given-up-by-chance.json": (2, 4.236, PREFERENCE),
    "later-nodepool-by-chance.json": (3, 2.7475, NODEPOOL),
    "later-nodepool-by-chance-2.json": (11, 36.9772, NODEPOOL),
    "affinity-domain-by-chance.json": (3, 6.354, SPREAD),
}
CHANCE_RUNS = 8

# Pods left pending only because a pod of a documented difference took their room on an
# existing node, or their NodePool's limits.
DISPLACED = "room-taken-by-a-documented-pod.json"
DISPLACED_IN_POOL = "pool-limits-taken-by-a-documented-pod.json"
# Room a documented pod took on one node, which moved pods off another.
ANOTHER_NODE = "room-taken-on-another-node.json"
# Room upstream gave to pods kube-scheduler refuses there.
REFUSED_ROOM = "room-taken-by-a-refused-placement.json"
# A pod upstream puts beside a documented pod, on a NodeClaim Joiner pins elsewhere.
BESIDE = "nodeclaim-shared-with-a-documented-pod.json"
# ... and, the other way round, pods whose room upstream gave to a documented pod.
DISPLACED_BY_UPSTREAM = "room-taken-by-a-relaxed-spread.json"
# A pod upstream puts on an existing node that meets neither of its required terms.
REFUSED = "existing-node-its-terms-refuse.json"
# Pods upstream puts beyond a capacity-type spread's maxSkew after relaxing a term.
OVERCROWDED = "spread-min-domains-above-its-domains.json"
# Pods that tolerate every taint, which upstream still relaxes to tolerate PreferNoSchedule.
RELAXED_AGAIN = "spread-after-tolerating-prefer-no-schedule-again.json"
# A NodeClaim Joiner opens within a NodePool's limits that upstream's reservation fills.
LIMITS = "nodepool-limits-as-candidates-narrow.json"


def _document(case: Case) -> dict[str, Any]:
    return _read(case.input)


def _read(name: str) -> dict[str, Any]:
    return json.loads((CASES_DIR / name).read_text())


def _zones(plan: Plan) -> set[str]:
    return {
        zone
        for claim in plan.nodeclaims
        if (zone := oracle.pinned_labels(claim.requirements).get(wk.ZONE)) is not None
    }


def test_every_documented_difference_has_a_case() -> None:
    assert set(CASES) == set(differential.DOCUMENTED)
    inputs = {case.input for case in CASES.values()} | set(BY_CHANCE)
    others = {
        DISPLACED,
        DISPLACED_IN_POOL,
        DISPLACED_BY_UPSTREAM,
        REFUSED,
        OVERCROWDED,
        LIMITS,
        RELAXED_AGAIN,
        BESIDE,
        ANOTHER_NODE,
        REFUSED_ROOM,
    }
    assert inputs | others == {p.name for p in CASES_DIR.glob("*.json")}


def test_the_page_documents_each_difference_with_its_input() -> None:
    scheduling = COMPATIBILITY.read_text().split("\n## Scheduling\n", 1)[1].split("\n## ", 1)[0]
    sections = re.split(r"^### ", scheduling, flags=re.MULTILINE)[1:]
    titled = {section.splitlines()[0].strip(): section for section in sections}
    for name, case in CASES.items():
        assert name in titled, f"no '### {name}' under '## Scheduling'"
        assert f"compatibility/{case.input}" in titled[name]
    for name in BY_CHANCE:
        assert f"compatibility/{name}" in titled["Other deliberate differences"]
    for name in (DISPLACED, DISPLACED_IN_POOL, BESIDE, ANOTHER_NODE):
        assert f"compatibility/{name}" in titled["required anti-affinity beyond the hostname"]
    assert f"compatibility/{REFUSED}" in titled["Other deliberate differences"]
    assert f"compatibility/{REFUSED_ROOM}" in titled["Other deliberate differences"]
    assert f"compatibility/{OVERCROWDED}" in titled["Other deliberate differences"]
    assert f"compatibility/{LIMITS}" in titled["NodePool limits"]
    relaxed = titled["spread after tolerating PreferNoSchedule"]
    assert f"compatibility/{DISPLACED_BY_UPSTREAM}" in relaxed
    assert f"compatibility/{RELAXED_AGAIN}" in relaxed


@pytest.mark.parametrize("name", sorted(CASES))
def test_documented_difference_is_as_documented(karpenter_oracle: Path, name: str) -> None:
    case = CASES[name]
    document = _document(case)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)

    assert [len(run.placed) for run in runs] == [case.upstream_placed] * RUNS
    valid = [differential.validly_placed(document, run) for run in runs]
    assert [len(v) for v in valid] == [case.upstream_valid] * RUNS
    assert [run.nodeclaims for run in runs] == [case.upstream_nodeclaims] * RUNS

    joiner_placed = set(plan.existing) | {key for claim in plan.nodeclaims for key in claim.pods}
    assert len(joiner_placed) == case.joiner_placed
    assert len(plan.nodeclaims) == case.joiner_nodeclaims
    assert len(_zones(plan)) == case.joiner_zones

    pods = [differential.pod_key(pod) for pod in document["pods"]]
    assert {differential.explained(document, key) for key in pods} == {name}
    assert differential.divergences(document, runs, plan) == []


@pytest.mark.parametrize("name", sorted(BY_CHANCE))
def test_runs_cheaper_by_chance_are_no_cost_baseline(karpenter_oracle: Path, name: str) -> None:
    """Joiner's plan is exactly the one the page describes; every upstream run cheaper
    than it owes that to the named chance, and the suite accepts the plan. In
    spread-domain-by-price.json, for one, Joiner puts the first spread pod in the zone
    cheapest for it (test-zone-1, spot); upstream picks a zone at random, and when it
    picks test-zone-3 the accelerator pods, which only fit there, share that NodeClaim:
    10.0956/h against Joiner's 10.7592/h."""
    document = _read(name)
    nodeclaims, price, cause = BY_CHANCE[name]
    runs = [
        oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * CHANCE_RUNS)
    ]
    plan = solve_workload(document)
    assert (len(plan.nodeclaims), round(plan.price, 4)) == (nodeclaims, price)
    assert differential.divergences(document, runs, plan) == []
    for run in runs:
        if run.cost < plan.price - 1e-9:
            if cause == SPREAD:
                assert differential.spread_domain_by_chance(document, run, plan)
            else:
                assert gave_up(document, run, plan, cause)


def test_a_pod_that_lost_its_room_to_a_documented_pod_is_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """The node has room for app1-0 (2 CPU) or for app0-0 and app2-0, whose zonal
    anti-affinity selects app1-0. Upstream keeps app1-0 out while app2-0 is pending;
    Joiner places it (first by size, as both order pods), so app0-0 finds no room. Only
    app1-0 and app2-0 are cases of the difference, and app0-0 is not a divergence."""
    document = _read(DISPLACED)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert [sorted(run.on_nodes) for run in runs] == [["default/app0-0", "default/app2-0"]] * RUNS
    assert (plan.existing, sorted(plan.unplaceable)) == (
        {"default/app1-0": "node-1"},
        ["default/app0-0", "default/app2-0"],
    )
    anti_affinity = "required anti-affinity beyond the hostname"
    assert [differential.explained(document, key) for key in sorted(plan.unplaceable)] == [
        None,
        anti_affinity,
    ]
    assert differential.explained(document, "default/app1-0") == anti_affinity
    assert differential.divergences(document, runs, plan) == []


def test_pods_that_lost_their_pools_limits_to_a_documented_pod_are_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """np-a's memory limit allows one node. Joiner opens it for app2-0 (its zonal
    anti-affinity is a documented difference; upstream leaves it pending) with app0-0 and
    app1-0; upstream fills it with app0-0 and app1-0 to app1-3 instead."""
    document = _read(DISPLACED_IN_POOL)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    every_run = frozenset.intersection(*(differential.validly_placed(document, r) for r in runs))
    pending = sorted(every_run & plan.unplaceable.keys())
    assert pending == ["default/app1-1", "default/app1-2", "default/app1-3"]
    assert [differential.explained(document, key) for key in pending] == [None] * 3
    assert all(differential.displaced(document, runs, plan, key) for key in pending)
    assert differential.explained(document, "default/app2-0") is not None
    assert differential.divergences(document, runs, plan) == []


def test_pods_whose_room_upstream_gave_to_a_documented_pod_are_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """node-1 has 16 CPUs and no pool can launch a node for these pods. Upstream relaxes
    app3-1 to tolerate the pool's PreferNoSchedule taint, counts its spread afresh and
    puts it beside app3-0 and app0-0 (15 CPUs): app2-0 fits, app4-0 and app4-1 do not.
    Joiner keeps app3-1 out (maxSkew), so app4-0 and app4-1 take the room and app2-0
    finds none. Neither app2-0 pending nor the app4 pods placed is a divergence."""
    document = _read(DISPLACED_BY_UPSTREAM)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    app3 = ["default/app3-0", "default/app3-1"]
    assert [sorted(run.on_nodes) for run in runs] == [
        ["default/app0-0", "default/app2-0", *app3]
    ] * RUNS
    assert sorted(plan.existing) == [
        "default/app0-0",
        "default/app3-0",
        "default/app4-0",
        "default/app4-1",
    ]
    assert sorted(plan.unplaceable) == ["default/app2-0", "default/app3-1"]
    assert differential.explained(document, "default/app3-1") == differential.RELAXED_SPREAD
    for key in ("default/app2-0", "default/app4-0"):
        assert differential.explained(document, key) is None
    assert differential.displaced(document, runs, plan, "default/app2-0")
    assert differential.divergences(document, runs, plan) == []


def test_a_nodeclaim_within_limits_upstream_reserved_is_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """The pool's limit is 20 CPUs; a-0 opens a NodeClaim that may be big (16) or mid (8),
    b-0 (mid only) joins it. Upstream reserved 16 when it opened, so c-0 (apart from
    a-0) finds no type within the 4 left; Joiner reserves mid's 8 once b-0 joined and
    opens a second mid for c-0. The suite does not count c-0 as placed against Joiner."""
    document = _read(LIMITS)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert [sorted(run.errors) for run in runs] == [["default/c-0"]] * RUNS
    assert [(tuple(c.instance_types), len(c.pods)) for c in plan.nodeclaims] == [
        (("mid",), 2),
        (("mid",), 1),
    ]
    assert differential.explained(document, "default/c-0") is None
    assert differential.limits_reserved_as_candidates_narrow(document, plan, "default/c-0")
    assert differential.divergences(document, runs, plan) == []


def test_upstream_adds_its_toleration_to_a_pod_that_tolerates_every_taint(
    karpenter_oracle: Path,
) -> None:
    """Both pods tolerate every taint ({operator: Exists}); test-zone-1 runs three of
    their pods, test-zone-3 has an empty node, and nothing with room can launch in
    test-zone-2. Upstream still adds its PreferNoSchedule toleration to app0-1 (it is not
    the same toleration), counts the spread afresh and puts it beside app0-0; Joiner
    leaves it pending (test-zone-3 would be 2 against test-zone-2's 0)."""
    document = _read(RELAXED_AGAIN)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    both = ["default/app0-0", "default/app0-1"]
    assert [sorted(run.on_nodes) for run in runs] == [both] * RUNS
    assert (plan.existing, sorted(plan.unplaceable)) == (
        {"default/app0-0": "node-2"},
        ["default/app0-1"],
    )
    assert {differential.explained(document, key) for key in both} == {differential.RELAXED_SPREAD}
    assert differential.divergences(document, runs, plan) == []


def test_a_pod_upstream_put_beside_a_documented_pod_is_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """The pool's limit allows one node. api-0 has a zonal anti-affinity: Joiner pins its
    NodeClaim to test-zone-3, so web-0 (test-zone-2 only) finds no room; upstream leaves
    the NodeClaim's zone open and web-0 joins it in test-zone-2."""
    document = _read(BESIDE)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert [run.nodeclaims for run in runs] == [1] * RUNS
    assert all(len(run.placed) == 2 for run in runs)
    assert [oracle.pinned_labels(c.requirements).get(wk.ZONE) for c in plan.nodeclaims] == [
        "test-zone-3"
    ]
    assert sorted(plan.unplaceable) == ["default/web-0"]
    assert differential.explained(document, "default/web-0") is None
    assert differential.displaced(document, runs, plan, "default/web-0")
    assert differential.divergences(document, runs, plan) == []


def test_room_a_documented_pod_took_on_another_node_is_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """Joiner puts app4-0 (5 CPU, a zonal anti-affinity upstream leaves pending) on
    node-1; the pods upstream puts on node-1 move to node-2, and two pods upstream puts
    on node-2 find no room (5,000-workload run, seed 20260301 finding 4, as drawn)."""
    document = _read(ANOTHER_NODE)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert all("default/app4-0" not in run.placed for run in runs)
    assert plan.existing["default/app4-0"] == "node-1"
    for key in ("default/app1-1", "default/app3-1"):
        assert key in plan.unplaceable
        assert all(run.homes[key][wk.HOSTNAME] == "node-2" for run in runs)
        assert differential.explained(document, key) is None
        assert differential.displaced(document, runs, plan, key)
    assert differential.divergences(document, runs, plan) == []


def test_a_pod_on_room_upstream_gave_to_refused_placements_is_no_divergence(
    karpenter_oracle: Path,
) -> None:
    """Upstream puts the four 6Gi app1 pods on node-0, which lacks the example.com/team
    label they require; app0-1 then finds no room beside app0-0 (a hostname affinity).
    Joiner leaves the app1 pods pending and places app0-1 (5,000-workload run, seed
    20260302 finding 10, as drawn)."""
    document = _read(REFUSED_ROOM)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    app1 = {f"default/app1-{i}" for i in range(4)}
    assert all(app1 <= run.on_nodes for run in runs)
    assert all(not app1 & differential.validly_placed(document, run) for run in runs)
    assert all("default/app0-1" not in run.placed for run in runs)
    assert plan.existing["default/app0-1"] == "node-0"
    assert app1 <= plan.unplaceable.keys()
    assert differential.divergences(document, runs, plan) == []


def test_affinity_outside_its_domains_is_judged_by_the_first_term() -> None:
    """A second term that admits test-zone-1 does not change which domains upstream
    bootstraps the affinity in: those of the first term."""
    document = _read("affinity-to-pods-outside-its-domains.json")
    pod = document["pods"][0]
    node_affinity = pod["spec"]["affinity"]["nodeAffinity"]
    terms = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    later = {"key": wk.ZONE, "operator": "In", "values": ["test-zone-1"]}
    terms["nodeSelectorTerms"].append({"matchExpressions": [later]})
    key = differential.pod_key(pod)
    assert differential.affinity_to_pods_outside_its_domains(document, key)
    terms["nodeSelectorTerms"].reverse()
    assert not differential.affinity_to_pods_outside_its_domains(document, key)


def test_a_run_that_placed_a_pod_kube_scheduler_refuses_is_no_cost_baseline(
    karpenter_oracle: Path,
) -> None:
    """Upstream folds the preference team DoesNotExist into the first term (team In
    [a]) and puts the pod on node-1 in test-zone-2, which meets neither term: no cost, but
    no placement kube-scheduler would bind. Joiner's NodeClaim in test-zone-1 is the
    plan to compare, and nothing is left to compare it with."""
    document = _read(REFUSED)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert [(sorted(run.on_nodes), run.cost) for run in runs] == [(["default/app2-0"], 0)] * RUNS
    assert [differential.validly_placed(document, run) for run in runs] == [frozenset()] * RUNS
    assert (len(plan.nodeclaims), round(plan.price, 4), _zones(plan)) == (
        1,
        0.8295,
        {"test-zone-1"},
    )
    assert differential.divergences(document, runs, plan) == []


def test_pods_beyond_a_spread_kube_scheduler_refuses_are_not_validly_placed(
    karpenter_oracle: Path,
) -> None:
    """Four pods spread over the two capacity types with minDomains 3: kube-scheduler
    takes the global minimum as 0, so one pod per capacity type. Upstream places two
    under the first node-affinity term, relaxes the others to the second, restarts the
    spread's counts and places them too; the suite counts none of the four as validly
    placed (it cannot tell which two kube-scheduler would bind), and Joiner places two."""
    document = _read(OVERCROWDED)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert [(len(run.placed), run.nodeclaims) for run in runs] == [(4, 2)] * RUNS
    assert [differential.validly_placed(document, run) for run in runs] == [frozenset()] * RUNS
    assert (len(plan.nodeclaims), len(plan.unplaceable)) == (2, 2)
    assert differential.divergences(document, runs, plan) == []
    one_each = json.loads(json.dumps(document))
    for pod in one_each["pods"]:
        del pod["spec"]["topologySpreadConstraints"][0]["minDomains"]
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [one_each] * RUNS)]
    assert [len(differential.validly_placed(one_each, run)) for run in runs] == [4] * RUNS


def gave_up(document: dict[str, Any], run: oracle.Outcome, plan: Plan, what: str) -> bool:
    """Whether the run gave up, for some pod, a preference of the kind ``what`` that
    Joiner's plan keeps (a required node-affinity term counts as given up when the pod
    was placed by a later one)."""
    ours = differential.broken_preferences(document, differential.plan_homes(plan))
    theirs = differential.broken_preferences(document, run.homes)
    return any(name.startswith(what) for _, name in theirs - ours)


def test_upstream_spreads_as_joiner_when_the_toleration_is_given(karpenter_oracle: Path) -> None:
    """The cause of "spread after tolerating PreferNoSchedule" is upstream's relaxation:
    the same pods, tolerating the taint from the start, are spread by upstream as by
    Joiner (one on the existing spot node, one on an on-demand NodeClaim)."""
    document = _read("spread-after-tolerating-prefer-no-schedule.json")
    tolerating = {"operator": "Exists", "effect": "PreferNoSchedule"}
    for pod in document["pods"]:
        pod["spec"]["tolerations"] = [tolerating]
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    plan = solve_workload(document)
    assert [(len(run.placed), run.nodeclaims) for run in runs] == [(2, 1)] * RUNS
    assert (len(plan.existing), len(plan.nodeclaims)) == (1, 1)
    assert differential.divergences(document, runs, plan) == []
    assert not any(differential.spread_skewed_after_relaxing(document, run) for run in runs)


def test_runs_that_skew_a_relaxed_spread_are_no_cost_baseline(karpenter_oracle: Path) -> None:
    """Each upstream run puts both pods on the spot node, two against on-demand's none
    with maxSkew 1: the cost check leaves such runs out, not the whole workload."""
    document = _read("spread-after-tolerating-prefer-no-schedule.json")
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]
    assert all(differential.spread_skewed_after_relaxing(document, run) for run in runs)
