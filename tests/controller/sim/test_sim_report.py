"""``--report DIR``: index.html with three PNG plots it embeds, and the series behind them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from joiner.sim.report import (
    COST_PLOT,
    INDEX,
    NODES_PLOT,
    PENDING_PLOT,
    ReportError,
    cost_over_time,
    instances_by_type,
    pending_pods,
    write_report,
)
from joiner.sim.result import EventRecord, NodeClaimRecord

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_report_writes_index_and_the_plots_it_references(tmp_path: Path, sample_result):
    out = tmp_path / "report" / "run-1"
    index = write_report(sample_result, out)

    assert index == out / INDEX
    page = index.read_text(encoding="utf-8")
    for plot in (NODES_PLOT, PENDING_PLOT, COST_PLOT):
        assert (out / plot).read_bytes().startswith(PNG_SIGNATURE)
        assert f'<img src="{plot}"' in page
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [INDEX, NODES_PLOT, PENDING_PLOT, COST_PLOT]
    )


def test_page_has_summary_failures_steps_nodeclaims_and_events(tmp_path: Path, sample_result):
    sample_result.events.append(
        EventRecord(50.0, "Pod", "default/app-1", "Nominated", "to <ip-10-0-1-1> & friends")
    )
    page = write_report(sample_result, tmp_path).read_text(encoding="utf-8")

    assert "<title>Simulation: sample</title>" in page
    assert "<span>total cost $0.0020</span>" in page
    assert "<li>spec.steps[2]: nodes.total: expected 3, got 2</li>" in page
    rows = re.findall(r"<tr>(.*?)</tr>", page)
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in rows]
    assert ["1", "wait", "settle", "0:01:05", "2", "1", "3", "0", "$0.1640/h", "settled"] in cells
    assert ["2", "", "expect", "0:01:05", "2", "1", "3", "0", "$0.1640/h", "failed"] in cells
    assert [
        "default-x7k2p",
        "default",
        "c5.xlarge",
        "us-east-1a",
        "spot",
        "$0.0680/h",
        "0:00:01",
        "0:00:41.5",
        "",
        "",
    ] in cells
    assert [
        "0:00:50",
        "Pod",
        "default/app-1",
        "Nominated",
        "to &lt;ip-10-0-1-1&gt; &amp; friends",
    ] in cells


def test_summary_counts_rebalance_moves(tmp_path: Path, sample_result):
    message = "rebalance: 2 nodes -> 1, saves $0.05/h, evicts 20 pods"
    sample_result.events += [
        EventRecord(60.0, "NodePool", "default", "Rebalanced", message),
        EventRecord(60.0, "Node", "ip-10-0-1-1", "Rebalanced", message),
    ]
    page = write_report(sample_result, tmp_path).read_text(encoding="utf-8")
    assert "<span>rebalance moves 1 (see the Rebalanced events)</span>" in page
    assert message.replace(">", "&gt;") in page


def test_all_expectations_held(tmp_path: Path, sample_result):
    sample_result.steps[2].failures = []
    page = write_report(sample_result, tmp_path).read_text(encoding="utf-8")
    assert '<p class="ok">All expectations held.</p>' in page


def test_instances_by_type_from_launch_to_deletion(sample_result):
    sample_result.nodeclaims.append(
        NodeClaimRecord(
            name="default-b",
            nodepool="default",
            created_at=10.0,
            instance_type="m5.xlarge",
            launched_at=10.5,
            deleted_at=60.0,
        )
    )
    series = instances_by_type(sample_result)

    assert series.times == [0.0, 1.5, 10.5, 60.0, 65.0]
    assert series.values == {
        "c5.xlarge": [0, 1, 1, 1, 1],
        "m5.large (static)": [1, 1, 1, 1, 1],
        "m5.xlarge": [0, 0, 1, 0, 0],
    }
    assert list(series.values) == ["m5.large (static)", "c5.xlarge", "m5.xlarge"]


def test_cost_over_time_adds_static_nodes(sample_result):
    series = cost_over_time(sample_result)
    assert series.times == [0.0, 1.5, 65.0]
    assert series.values["cost per hour"] == pytest.approx([0.096, 0.164, 0.164])


def test_pending_pods_after_each_step(sample_result):
    series = pending_pods(sample_result)
    assert (series.times, series.values) == ([0.0, 65.0], {"pending pods": [4, 0]})


def test_unwritable_directory(tmp_path: Path, sample_result):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ReportError) as caught:
        write_report(sample_result, blocker / "report")
    assert str(caught.value) == f"--report {blocker / 'report'}: cannot write: Not a directory"
