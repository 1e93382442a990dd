"""``joiner top`` in a real terminal: tmux runs it at 120x40 against the real
kube-apiserver; the screen is read back with ``capture-pane`` as a person sees it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from joiner.testing.polling import wait_for
from test_top_command import JOINER, rows
from top_cluster import TopCluster

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")


class Terminal:
    """A tmux server of its own (its own socket: other tests' and people's are untouched)."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        command = [str(TMUX), "-S", str(self.socket), *args]
        # The terminal's size is tmux's: a COLUMNS or LINES inherited from the test run
        # (some library sets them) would override it, in rich as in curses.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        return subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def showing(self, text: str) -> str:
        """The screen if ``text`` is on it, else ""."""
        shown = self.screen()
        return shown if text in shown else ""


def test_top_shows_the_cluster_in_a_terminal_and_follows_it(
    top_cluster: TopCluster, tmp_path: Path
) -> None:
    terminal = Terminal(tmp_path / "tmux.sock")
    exit_status = tmp_path / "status"
    command = f"{JOINER} top --kubeconfig {top_cluster.kubeconfig}; echo $? > {exit_status}"
    terminal.tmux("new-session", "-d", "-x", "120", "-y", "40", command)
    try:
        screen = wait_for(lambda: terminal.showing(top_cluster.node), "the first frame", 30)
        assert rows(screen)[top_cluster.node][:7] == [
            top_cluster.pool, "m5.large", "us-east-1a", "on-demand", "$0.0960/h", "Ready", "1"
        ]  # fmt: skip
        second = f"{top_cluster.pool}b"
        top_cluster.add_node(second, "c5.xlarge", "spot", "3920m")

        def redrawn() -> str:  # the node is created, then its status set: two frames may come
            shown = terminal.screen()
            table = rows(shown)
            both = table.get(top_cluster.pool, [None])[0] == "2"
            ready = table.get(second, [])[5:6] == ["Ready"]
            return shown if both and ready else ""

        screen = wait_for(redrawn, "the frame with the second node", timeout=30)
        assert rows(screen)[second][:7] == [
            top_cluster.pool, "c5.xlarge", "us-east-1a", "spot", "$0.0680/h", "Ready", "0"
        ]  # fmt: skip
        assert max(len(line) for line in screen.splitlines()) <= 120
        # redrawn to fit: zone, capacity type, instance type and bars go; the names stay
        terminal.tmux("resize-window", "-x", "80")

        def narrow() -> str:
            shown = terminal.screen()
            return shown if "ZONE" not in shown and "TYPE" not in shown else ""

        screen = wait_for(narrow, "the frame redrawn at 80 columns", 30)
        assert max(len(line) for line in screen.splitlines()) <= 80
        assert rows(screen)[second] == [
            top_cluster.pool, "$0.0680/h", "Ready", "0", "0.00/3.92", "0.00/7.00Gi"
        ]  # fmt: skip
        terminal.tmux("send-keys", "C-c")
        wait_for(exit_status.exists, "joiner top to exit on Ctrl-C", timeout=15)
        assert exit_status.read_text() == "0\n"
    finally:
        subprocess.run([str(TMUX), "-S", str(terminal.socket), "kill-server"], check=False)
