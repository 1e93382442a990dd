"""``joiner top`` against the real kube-apiserver, as its read-only ServiceAccount."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from joiner.api.crds import render_crds
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
        args=(kube, lambda objects, _: frames.append((time.monotonic(), objects)), stop, interval),
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


def test_a_watch_that_fails_after_the_first_frame_is_named_on_the_next(
    control_plane_assets: Path, tmp_path: Path
) -> None:
    plane = ControlPlane(control_plane_assets, tmp_path / "plane").start()
    plane.install_crds(render_crds())
    kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
    top = subprocess.Popen(  # frames as plain text, one after another: stdout is no terminal
        [JOINER, "top", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(top.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(line.startswith("(cluster)") for line in out), "a frame", 30)
        plane.stop()  # the API server goes away under the open watches

        def every_kind_refused() -> bool:  # each has tried again since the break
            frame = out[max(i for i, line in enumerate(out) if line.startswith("joiner top")) :]
            return sum("Connection refused" in line for line in frame) == 4

        wait_for(every_kind_refused, "a frame naming the failing watches", timeout=30)
    finally:
        top.send_signal(signal.SIGINT)
        _, err = top.communicate(timeout=15)
        plane.stop()
    reader.join(timeout=5)
    last_notice = max(i for i, line in enumerate(out) if line.startswith("watches failing"))
    assert out[last_notice : last_notice + 5] == [
        "watches failing, retrying; the cluster as last seen:\n",
        *(f"  {kind}: list {path}: ConnectError: [Errno 111] Connection refused\n"
          for kind, path in (
              ("Node", "/api/v1/nodes"),
              ("NodeClaim", "/apis/karpenter.sh/v1/nodeclaims"),
              ("NodePool", "/apis/karpenter.sh/v1/nodepools"),
              ("Pod", "/api/v1/pods"),
          )),
    ]  # fmt: skip
    assert (top.returncode, err) == (0, "")  # no log lines: the frame says it
