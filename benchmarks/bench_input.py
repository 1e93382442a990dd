"""Bounds on user input [issue #18]: what the safe YAML reader (``joiner.yamlio``) costs on
ordinary files, how fast it refuses hostile ones, and that validation time grows
linearly with the number of errors.

- load: the documented manifests repeated to about 1 MB, read by ``yamlio.load_all``
  and by ``yaml.safe_load_all``; the reader's guards may cost at most 25% more.
- refuse: a 2.4 KB anchor bomb, 5,000 levels of nesting, an endless stream (the cap
  is read and no more) and the worst case under the caps, a 4 MiB flow list of
  zeros (the values cap ends it), each with its time; the last also with how much
  it raised the process's peak memory.

Times are CPU seconds of this process.
- errors: ``validate_object`` on NodePools with 10,000 and 40,000 broken requirements
  (two errors each); linear time makes the second about 4 times the first, the old
  quadratic lookup 16 times: the ratio must stay under 8.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from joiner import testing, yamlio
from joiner.api.validation import validate_object
from joiner.testing.hostile import EndlessZeros, anchor_bomb, nested_lists

from benchmarks import quick_mode

MANIFESTS = Path(__file__).resolve().parents[1] / "tests" / "controller" / "api" / "manifests"
LOAD_OVERHEAD_TARGET = 1.25
ERROR_RATIO_TARGET = 8.0


def _stream(size: int) -> str:
    documents = "".join(f"---\n{path.read_text()}" for path in sorted(MANIFESTS.glob("*.yaml")))
    return documents * max(1, size // len(documents))


def _seconds(action: Callable[[], object]) -> float:
    """CPU seconds: the machine is shared, and waiting for it is not the code's cost."""
    start = time.process_time()
    action()
    return time.process_time() - start


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(quick: bool) -> bool:
    text = _stream(50_000 if quick else 1_000_000)
    if list(yamlio.load_all(text)) != list(yaml.safe_load_all(text)):
        print("FAIL load: yamlio and yaml.safe_load_all disagree on the manifests")
        return False
    ours, theirs = float("inf"), float("inf")
    for _ in range(3):  # alternating, best of each
        ours = min(ours, _seconds(lambda: list(yamlio.load_all(text))))
        theirs = min(theirs, _seconds(lambda: list(yaml.safe_load_all(text))))
    ratio = ours / theirs
    verdict = "" if quick else ("ok" if ratio <= LOAD_OVERHEAD_TARGET else "ABOVE TARGET")
    print(
        f"load {len(text) / 1e6:.2f} MB of manifests: yamlio {len(text) / ours / 1e6:.2f} MB/s, "
        f"yaml.safe_load_all {len(text) / theirs / 1e6:.2f} MB/s, ratio {ratio:.2f} "
        f"(target <= {LOAD_OVERHEAD_TARGET}) {verdict}"
    )
    return quick or ratio <= LOAD_OVERHEAD_TARGET


def _refused(name: str, text: str) -> bool:
    start = time.process_time()
    try:
        list(yamlio.load_all(text))
    except yamlio.YAMLInputError as error:
        seconds = time.process_time() - start
        print(f"refuse {name:<26} {seconds:7.3f} s  ({error.problem})")
        return True
    print(f"FAIL refuse {name}: loaded")
    return False


def refuse(quick: bool) -> bool:
    ok = _refused("anchor bomb (2.4 KB)", f"bomb: {anchor_bomb()}\n")
    ok &= _refused("5,000 levels of nesting", f"a: {nested_lists(5000)}\n")
    if not quick:
        zeros = "[" + "0," * (yamlio.MAX_INPUT_BYTES // 2 - 1) + "0]"
        before = _peak_mib()
        ok &= _refused("4 MiB flow list of zeros", zeros)
        print(f"  peak memory of the process rose by {_peak_mib() - before:.0f} MiB")
    endless = EndlessZeros()
    try:
        yamlio.read_text(endless)
    except yamlio.InputTooLarge:
        print(
            f"refuse endless stream after {endless.taken:,} bytes (cap {yamlio.MAX_INPUT_BYTES:,})"
        )
        return ok and endless.taken == yamlio.MAX_INPUT_BYTES + 1
    print("FAIL refuse endless stream: read to its end")
    return False


def errors(quick: bool) -> bool:
    small, large = (1_000, 4_000) if quick else (10_000, 40_000)
    timings = []
    for count in (small, large):
        broken = [{"key": "a", "operator": "Bogus", "values": [1]} for _ in range(count)]
        pool = testing.nodepool(requirements=broken)
        timings.append(_seconds(lambda pool=pool: validate_object(pool)))
        print(f"errors {2 * count + 1:>7,} found in {timings[-1]:6.2f} s")
    ratio = timings[1] / timings[0]
    verdict = "" if quick else ("ok" if ratio < ERROR_RATIO_TARGET else "ABOVE TARGET")
    print(f"errors x4 -> time x{ratio:.1f} (linear 4, quadratic 16; target < 8) {verdict}")
    return quick or ratio < ERROR_RATIO_TARGET


def main() -> int:
    quick = quick_mode()
    results = [load(quick), refuse(quick), errors(quick)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
