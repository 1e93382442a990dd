"""`joiner simulate FILE --explain-at STEP`: every pending pod's and every NodePool's
answer after a step, the same answers `joiner explain` gives one object at a time."""

from __future__ import annotations

import json

import pytest
from explain_scenarios import EXAMPLES
from joiner.cli import main

PENDING = str(EXAMPLES / "explain-pending.yaml")
POOLS = ["capped", "gpu", "ice", "small", "zone-b"]


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_the_overview_is_each_objects_own_answer(capsys: pytest.CaptureFixture[str]) -> None:
    overview = _out(capsys, "simulate", PENDING, "--explain-at", "pending")
    one_by_one = [_out(capsys, "explain", "pod", "default/big", "--simulate", PENDING)]
    one_by_one += [
        _out(capsys, "explain", "nodepool", pool, "--simulate", PENDING) for pool in POOLS
    ]
    assert overview == "\n".join(one_by_one)
    assert overview.startswith("pod default/big is pending\n  nodepool gpu: taints: ")


def test_json_lists_the_pending_pods_then_the_pools(capsys: pytest.CaptureFixture[str]) -> None:
    answer = json.loads(_out(capsys, "simulate", PENDING, "--explain-at", "3", "--output", "json"))
    assert [(p["pod"], p["status"]) for p in answer["pods"]] == [("default/big", "pending")]
    assert [p["nodepool"] for p in answer["pods"][0]["pools"]] == [
        "gpu",
        "zone-b",
        "capped",
        "ice",
        "small",
    ]
    assert [pool["nodepool"] for pool in answer["nodepools"]] == POOLS


def test_before_the_pod_arrives_nothing_waits(capsys: pytest.CaptureFixture[str]) -> None:
    overview = _out(capsys, "simulate", PENDING, "--explain-at", "0")
    assert overview.startswith(
        "no pod is waiting for capacity\n\nnodepool capped: ready, 0 node(s)\n"
    )


def test_a_step_that_is_not_there_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", PENDING, "--explain-at", "nosuch"]) == 2
    assert capsys.readouterr().err == (
        f"joiner simulate: {PENDING}: --explain-at nosuch: no such step (steps 0-3; names: "
        "ice is out of capacity, the pod arrives, pending)\n"
    )
    assert main(["simulate", PENDING, "--explain-at", "3", "--report", "out"]) == 2
    assert capsys.readouterr().err == (
        "joiner simulate: --report needs the whole run, not --explain-at\n"
    )
