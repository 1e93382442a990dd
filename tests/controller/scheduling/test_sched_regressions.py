"""Divergences the differential suite found and Joiner now decides as well as upstream's
best run: each oracle input under tests/controller/scheduling/regressions/ gives Joiner's
exact plan, costs no more than upstream's cheapest run that placed the same pods, and
the differential check accepts it (docs/compatibility.md, "Scheduling").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sched_differential as differential
from joiner.api import labels as wk
from joiner.testing import oracle
from joiner.testing.workload import solve_workload

REGRESSIONS_DIR = Path(__file__).parent / "regressions"
RUNS = 16  # upstream places both pods of the second input in about half its runs

# input -> Joiner's NodeClaims as (zone, instance types, pods), and the plan's price
EXPECTED = {
    # four pods with a zonal affinity to each other need 16Gi together: t1 is cheapest
    # in test-zone-2 (1.5344/h); the first pod alone is cheapest in test-zone-1 (t2)
    "affinity-domain-for-the-whole-group.json": (
        [("test-zone-2", ("t1",), 4)],
        1.5344,
    ),
    # app2-3 bootstraps the affinity app2-2 is drawn to: the two need 8Gi together, one
    # t1 in test-zone-2 rather than two t2 (0.959/h each) elsewhere
    "affinity-domain-for-pods-drawn-to-it.json": (
        [("test-zone-2", ("t1",), 2)],
        1.5344,
    ),
    # the first pod's NotIn defines example.com/family on its NodeClaim (its pool does
    # not): the second, requiring family f2 and drawn to the first, may join it
    "custom-label-defined-by-the-nodeclaim.json": (
        [(None, ("t3", "t4"), 2)],
        0.8295,
    ),
    # a 2-CPU pod joins whichever of two t3 claims with two pods each has room for more
    # of it (app0-2 and app3-0: 5 CPU used, against 6): the other keeps room for none of
    # the four pods selecting test-zone-1, and those fill one t2 of their own
    "zonal-group-on-its-own-nodeclaim.json": (
        [(None, ("t3", "t2"), 4), (None, ("t3",), 5), ("test-zone-1", ("t2",), 4)],
        10.8719,
    ),
    # its shrunk form: on the older claim app4-0 left app0-2's claim room for one 6Gi pod,
    # which turned it into a t2 (4.236/h) instead of a t3 (3.318/h)
    "zonal-group-on-its-own-nodeclaim-shrunk.json": (
        [
            (None, ("t3", "t2"), 2),
            (None, ("t3", "t2"), 3),
            (None, ("t3",), 2),
            ("test-zone-1", ("t3", "t2"), 2),
        ],
        13.2719,
    ),
    # the third 500m pod goes to the claim with room for more of them, not to the older
    # one holding three 5-CPU pods: that one keeps its last 0.5 CPU for a 100m pod, which
    # would otherwise need a t1 (3.3888/h) of its own
    "equally-full-nodeclaims-by-room.json": (
        [
            (None, ("t1",), 4),
            (None, ("t1",), 5),
            (None, ("t4", "t1"), 1),
            (None, ("t4", "t1"), 1),
            (None, ("t1",), 1),
        ],
        15.2496,
    ),
    # two DoNotSchedule spreads, over capacity types and zones; a spot node in
    # test-zone-1 holds one web pod: web-0 takes on-demand in test-zone-2, then web-1
    # must take test-zone-3, where only on-demand is offered (the two spreads' choices
    # are one pair some type offers, not spot by price and test-zone-3 by count apart)
    "spreads-over-zone-and-capacity-type.json": (
        [("test-zone-2", ("t1",), 1), ("test-zone-3", ("t1",), 1)],
        2.518,
    ),
    # its shrunk form: one 16-CPU type; the older claim's three 5-CPU pods leave room
    # for the 100m pod, not for a 500m one as well, so a third t1 is not needed
    "equally-full-nodeclaims-by-room-shrunk.json": (
        [(None, ("t1",), 4), (None, ("t1",), 5)],
        16.9439,
    ),
    # app3-0 prefers t4 and has a preferred zonal anti-affinity (so it is placed one pod
    # at a time); of the two claims with two pods, it joins the t4 in test-zone-3 (no
    # rise), not the older one in test-zone-2, which it would turn from a t3 (0.5036/h)
    # into a t4 (1.3272/h)
    "claim-a-topology-pod-raises-least.json": (
        [
            ("test-zone-1", ("t1",), 2),
            ("test-zone-2", ("t3", "t4", "t1"), 2),
            ("test-zone-3", ("t4",), 3),
        ],
        6.3986,
    ),
    # its shrunk form: the zonal spread puts app4-0 in test-zone-2 (a t3), app4-1 in
    # test-zone-3 (a t4); app3-0 joins the t4 claim
    "claim-a-topology-pod-raises-least-shrunk.json": (
        [("test-zone-2", ("t3", "t4"), 1), ("test-zone-3", ("t4",), 2)],
        2.1626,
    ),
}


def test_every_regression_input_has_its_expectation() -> None:
    assert set(EXPECTED) == {p.name for p in REGRESSIONS_DIR.glob("*.json")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_regression_is_decided_as_upstream_best(karpenter_oracle: Path, name: str) -> None:
    document = json.loads((REGRESSIONS_DIR / name).read_text())
    claims, price = EXPECTED[name]
    plan = solve_workload(document)
    runs = [oracle.Outcome.of(r) for r in oracle.run_many(karpenter_oracle, [document] * RUNS)]

    shape = [
        (
            oracle.pinned_labels(claim.requirements).get(wk.ZONE),
            tuple(claim.instance_types),
            len(claim.pods),
        )
        for claim in plan.nodeclaims
    ]
    assert (shape, round(plan.price, 4)) == (claims, price)
    placed = {key for claim in plan.nodeclaims for key in claim.pods}
    same_pods = [run.cost for run in runs if run.placed >= placed]
    assert same_pods, "no upstream run placed the pods Joiner placed"
    assert plan.price <= min(same_pods) + 1e-9
    assert differential.divergences(document, runs, plan) == []
