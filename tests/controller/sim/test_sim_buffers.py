"""CapacityBuffers in the simulator's views: each buffer's chunks wanted and held after
every step, why not all are held, in the table and the report, and the Events on the
buffer in the timeline."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from joiner import testing
from joiner.sim.engine import Simulation
from joiner.sim.report import render_html
from joiner.sim.result import BufferView, SimulationResult
from joiner.sim.scenario import load_scenario
from joiner.sim.table import render_table
from sim_builders import BASE_SCENARIO, to_text

LIMIT_WHY = (
    "all available instance types exceed limits for nodepool (NodePool=default), limits "
    "on cpu leave no room for a node, nodepool=default"
)


def _capped_buffer_scenario() -> dict[str, Any]:
    """BASE_SCENARIO's one app pod (500m) and a buffer of three 1-CPU chunks, in a pool
    capped at 4 CPU: two small nodes (2 CPU each, one chunk beside the app pod on the
    first), so one chunk is not held."""
    document = copy.deepcopy(BASE_SCENARIO)
    spec = document["spec"]
    spec["objects"][1] = testing.nodepool(limits={"cpu": "4"})
    chunk = testing.pod("chunk", "1", "512Mi")
    spec["objects"] += [
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "chunk"},
            "template": {"metadata": chunk["metadata"], "spec": chunk["spec"]},
        },
        {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": "spare"},
            "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 3},
        },
    ]
    spec["steps"] = [{"advance": "2m"}]
    return document


@pytest.fixture(scope="module")
def capped() -> SimulationResult:
    return Simulation(load_scenario(to_text(_capped_buffer_scenario()))).run()


def test_the_snapshot_says_what_is_held_and_why_not_the_rest(capped: SimulationResult):
    assert capped.final.buffers == [
        BufferView("default/spare", 3, 2, "PoolLimitReached", LIMIT_WHY)
    ]


def test_the_table_shows_the_buffers_and_their_events(capped: SimulationResult):
    text = render_table(capped)
    assert (
        "  CapacityBuffers (chunks wanted / held):\n"
        f"    default/spare  3 / 2  PoolLimitReached: {LIMIT_WHY}\n"
    ) in text
    events = [re.split(r"  +", line.strip()) for line in text.splitlines()]
    assert [
        "0:00:01",
        "CapacityBuffer/spare",
        "PoolLimitReached",
        f"2 of 3 chunks held; {LIMIT_WHY}",
    ] in events


def test_the_report_tables_the_buffers_when_they_change(capped: SimulationResult):
    page = render_html(capped)
    assert (
        "<h2>CapacityBuffers</h2>\n<table><thead><tr><th>step</th><th>at</th><th>buffer</th>"
        "<th>chunks wanted</th><th>held</th><th>reason</th><th>why not all held</th></tr>"
        "</thead><tbody><tr><td>0</td><td>0:02:00</td><td>default/spare</td><td>3</td>"
        f"<td>2</td><td>PoolLimitReached</td><td>{LIMIT_WHY}</td></tr></tbody></table>"
    ) in page  # once: the end is as after step 0


def test_a_buffer_that_does_not_resolve_and_a_run_without_buffers(sample_result):
    assert "CapacityBuffers" not in render_table(sample_result)
    assert "CapacityBuffers" not in render_html(sample_result)
    why = "spec.podTemplateRef.name: no PodTemplate 'chunk' in default"
    sample_result.final.buffers = [BufferView("default/spare", None, 0, "PodTemplateNotFound", why)]
    lines = render_table(sample_result).splitlines()
    start = lines.index("  CapacityBuffers (chunks wanted / held):")
    assert lines[start + 1] == f"    default/spare  - / 0  PodTemplateNotFound: {why}"
    page = render_html(sample_result)
    assert "<td>default/spare</td><td></td><td>0</td><td>PodTemplateNotFound</td>" in page
