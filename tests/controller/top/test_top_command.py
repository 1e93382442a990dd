"""``joiner top`` against the real kube-apiserver, as its read-only ServiceAccount."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from joiner.cli import main
from joiner.commands import top as top_command
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.testing.envtest import ControlPlane
from joiner.testing.polling import wait_for
from joiner.top.live import follow
from joiner.top.snapshot import ClusterObjects
from top_cluster import TopCluster

JOINER = str(Path(sys.executable).with_name("joiner"))
CELLS = re.compile(r" {2,}")  # columns are two spaces apart; a bar cell has one inside


def run_top(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [JOINER, "top", *args], capture_output=True, text=True, timeout=60, check=False
    )


def rows(text: str) -> dict[str, list[str]]:
    """The cells of each row of the frame, by its first cell."""
    return {cells[0]: cells[1:] for line in text.splitlines() if (cells := CELLS.split(line))}


def test_once_prints_one_frame_with_only_read_access(top_cluster: TopCluster) -> None:
    done = run_top("--once", "--kubeconfig", str(top_cluster.kubeconfig))

    assert (done.returncode, done.stderr) == (0, "")
    shown = rows(done.stdout)
    pool = top_cluster.pool
    assert shown[top_cluster.node] == [
        pool, "m5.large", "us-east-1a", "on-demand", "$0.0960/h", "Ready", "1",
        "██░░░░ 0.50/1.93", "█░░░░░ 1.00/7.00Gi",
    ]  # fmt: skip
    assert shown[top_cluster.claim] == [
        pool, "c5.large", "-", "spot", "$0.0340/h", "Launching", "0", "-", "-"
    ]  # fmt: skip
    # the pool: one node, one pod; the launching instance is paid for too
    assert shown[pool] == ["1", "1", "$0.1300/h", "██░░░░ 0.50/1.93", "█░░░░░ 1.00/7.00Gi"]


def test_without_read_access_it_fails_in_one_line_naming_the_refusal(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    token = control_plane.service_account_token(namespace, "nobody")
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "nobody", token=token)

    done = run_top("--once", "--kubeconfig", str(kubeconfig))

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("joiner top: ")
    assert "nodes" in done.stderr and "forbidden" in done.stderr.lower()
    assert done.stderr.count("\n") == 1


def test_a_bad_kubeconfig_is_bad_input(tmp_path: Path) -> None:
    done = run_top("--once", "--kubeconfig", str(tmp_path / "missing"))

    assert done.returncode == 2
    assert done.stderr.startswith("joiner top: ") and "missing" in done.stderr


def test_watch_events_redraw_the_frame_at_most_once_per_interval(
    top_cluster: TopCluster,
) -> None:
    kube = HttpKube(ClusterConfig.from_kubeconfig(str(top_cluster.kubeconfig)))
    frames: list[tuple[float, ClusterObjects]] = []
    stop = threading.Event()
    interval = 0.5
    follower = threading.Thread(
        target=follow,
        args=(kube, lambda objects: frames.append((time.monotonic(), objects)), stop, interval),
    )
    follower.start()
    try:
        wait_for(lambda: frames, "the first frame", timeout=20)
        second = f"{top_cluster.pool}b"
        top_cluster.add_node(second, "c5.xlarge", "spot", "3920m")
        for i in range(5):  # a burst of events: debounced, not a frame each
            top_cluster.bind_pod(f"burst-{i}", second, "250m", "256Mi")

        def drawn_with_the_burst() -> bool:
            last = frames[-1][1]
            on_second = [p for p in last.pods if p["spec"].get("nodeName") == second]
            return len(on_second) == 5 and any(n["metadata"]["name"] == second for n in last.nodes)

        wait_for(drawn_with_the_burst, "a frame with the new node and its pods", timeout=20)
    finally:
        stop.set()
        follower.join(timeout=10)
        kube.close()
    assert not follower.is_alive()
    times = [at for at, _ in frames]
    assert all(later - earlier >= interval for earlier, later in itertools.pairwise(times))


def test_without_rich_it_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(top_command, "rich_installed", lambda: False)

    assert main(["top", "--once"]) == 2
    assert capsys.readouterr().err == "joiner top: needs rich: pip install 'joiner[top]'\n"
