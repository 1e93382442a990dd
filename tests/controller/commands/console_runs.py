"""Running the ``joiner`` console script as a user does, in a child process whose memory
is capped, so that a test of hostile input proves the bound: a command that tried to
hold the input in memory dies of MemoryError (a traceback, exit 1) instead of passing,
and one that hangs is stopped by the timeout. (A plain module, not conftest, so the
command tests import it by a name no other test directory uses.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

# Address space of the child: the interpreter, numpy and moto take about 300 MB; a
# command that reads a 4 MiB input and refuses it needs little more.
MEMORY_LIMIT = 1024 * 2**20
# Far beyond the second or two a refused input takes; only a guard against hanging.
TIMEOUT = 60.0
_LIMITED_EXEC = (
    "import os, resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def console_script() -> str:
    found = shutil.which("joiner") or str(Path(sys.executable).parent / "joiner")
    assert Path(found).exists()
    return found


def run_joiner(*args: str, stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``joiner ARGS`` with at most MEMORY_LIMIT of memory and TIMEOUT seconds."""
    command = [sys.executable, "-c", _LIMITED_EXEC, str(MEMORY_LIMIT), console_script(), *args]
    with open(stdin or "/dev/null", "rb") as source:
        return subprocess.run(
            command, stdin=source, capture_output=True, text=True, timeout=TIMEOUT
        )
