"""How far a running simulation has got, and the progress bar ``joiner simulate`` shows
on a terminal (tqdm, from the ``sim`` extra; without it there is no bar)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any

# The engine reports at most this often (wall seconds): a bar needs no more.
REPORT_INTERVAL = 0.2


@dataclass(frozen=True)
class Progress:
    virtual_seconds: float  # reached since the start
    virtual_bound: float  # the scenario's advance and settle steps added up
    steps: int  # watch events delivered plus reconciles run
    pending_pods: int
    wall_seconds: float
    where: str  # the scenario step being run, e.g. spec.steps[3] (scale up)


Reporter = Callable[[Progress], None]


def bar_available() -> bool:
    return importlib.util.find_spec("tqdm") is not None


class ProgressBar:
    """A tqdm bar over virtual time with steps, pending pods and wall time beside it;
    a context manager that closes it (and so clears the line) when the run ends."""

    def __init__(self, stream: IO[str]) -> None:
        from tqdm import tqdm

        self._bar: Any = tqdm(
            total=1,
            file=stream,
            leave=False,
            bar_format="|{bar}|",
        )

    def __call__(self, progress: Progress) -> None:
        bar = self._bar
        bar.total = max(progress.virtual_bound, 1.0)
        bar.n = min(progress.virtual_seconds, bar.total)
        reached = f"t={_clock(progress.virtual_seconds)}/{_clock(progress.virtual_bound)}"
        beside = (
            f"{progress.steps:,} steps, {progress.pending_pods:,} pending, "
            f"{progress.wall_seconds:.0f}s wall, {progress.where}"
        )
        bar.bar_format = f"{_literal(reached)} |{{bar}}| {_literal(beside)}"
        bar.refresh()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._bar.close()


def _clock(seconds: float) -> str:
    """Virtual time as h:mm:ss."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _literal(text: str) -> str:
    """Text that tqdm's bar format shows as it is."""
    return text.replace("{", "{{").replace("}", "}}")
