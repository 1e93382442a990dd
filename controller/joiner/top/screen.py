"""Where ``joiner top``'s frames go: redrawn in place on a terminal (the alternate
screen, as top(1) does, left on exit), else written one after another as plain text."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

from rich.console import Console
from rich.live import Live

from joiner.top.prices import embedded_price
from joiner.top.render import frame, to_text
from joiner.top.snapshot import ClusterObjects, node_lines


class Screen:
    def __init__(self, title: str, console: Console | None = None) -> None:
        self._title = title
        self._console = console or Console()
        self._live: Live | None = None

    def live(self) -> AbstractContextManager[Live]:
        """Frames drawn inside this context replace each other (on a terminal)."""
        self._live = Live(console=self._console, auto_refresh=False, screen=True)
        return self._live

    def draw(self, objects: ClusterObjects, notice: str = "") -> None:
        lines = node_lines(objects, embedded_price)
        terminal = self._console.is_terminal
        width = self._console.width if terminal else None
        view = frame(lines, objects.pool_names(), self._title, notice, width)
        if not terminal:
            sys.stdout.write(to_text(view) + "\n")  # a blank line between frames
            sys.stdout.flush()
        elif self._live is not None and self._live.is_started:
            self._live.update(view, refresh=True)
        else:
            self._console.print(view)
