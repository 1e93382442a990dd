"""A simulation spaces the garbage collector's full collections while it runs, and
leaves the process's thresholds as it found them."""

from __future__ import annotations

import gc

from joiner.controllers.disruption import candidates
from joiner.scheduling import occupancy, pods, solver
from joiner.sim.engine import Simulation
from joiner.sim.heap import FULL_COLLECTION_SPACING, full_collections_spaced
from joiner.sim.progress import Progress
from joiner.sim.scenario import load_scenario
from sim_builders import BASE_SCENARIO, to_text


def test_full_collections_are_spaced_within_the_block_and_restored_after():
    before = gc.get_threshold()
    try:
        gc.set_threshold(500, 7, 10)
        with full_collections_spaced():
            assert gc.get_threshold() == (500, 7, FULL_COLLECTION_SPACING)
        assert gc.get_threshold() == (500, 7, 10)
    finally:
        gc.set_threshold(*before)


def test_a_run_spaces_full_collections_while_it_runs():
    seen: list[tuple[int, int, int]] = []

    def report(_: Progress) -> None:
        seen.append(gc.get_threshold())

    before = gc.get_threshold()
    Simulation(load_scenario(to_text(BASE_SCENARIO)), progress=report).run()
    assert seen and {t[2] for t in seen} == {max(before[2], FULL_COLLECTION_SPACING)}
    assert gc.get_threshold() == before


def test_a_finished_run_leaves_nothing_in_the_process_caches():
    """The caches by identity hold the objects their values came from: a run that ended
    empties them, or a process running thousands of simulations (the crash property
    suite) keeps each one's pods and nodes alive until the caches fill (it grew to 6 GB)."""
    Simulation(load_scenario(to_text(BASE_SCENARIO))).run()
    held = {
        "solver": len(solver._facts._values),
        "occupancy": len(occupancy._remembered._values) + len(occupancy._by_list._values),
        "candidates": len(candidates._machines._values) + len(candidates._made._values),
        "requests": len(pods._requests_by_pod),
    }
    assert held == {"solver": 0, "occupancy": 0, "candidates": 0, "requests": 0}
