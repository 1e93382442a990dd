"""Hostile input for the tests and benchmarks of the bounds on user input
(``joiner.yamlio``): small YAML texts that cost a naive reader, or whoever walks what
it loaded, unbounded time or memory (each a YAML value to put after a key), and a
stream that never ends."""

from __future__ import annotations

import io


def anchor_bomb(levels: int = 9) -> str:
    """A flow list whose level i is ten aliases of level i - 1: about 10**levels strings
    once expanded, written in about 50 bytes per level ("billion laughs")."""
    parts = [f"&l0 [{', '.join(['lol'] * 10)}]"]
    parts += [f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "[" + ", ".join(parts) + "]"


def nested_lists(depth: int) -> str:
    """``depth`` lists, each the only item of the one around it."""
    return "[" * depth + "]" * depth


class EndlessZeros(io.RawIOBase):
    """A stream that never ends, like /dev/zero, and counts the bytes taken from it.
    Reads are short (at most 64 KiB), as a pipe's are."""

    def __init__(self) -> None:
        self.taken = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        size = min(len(buffer), 64 * 1024)
        buffer[:size] = bytes(size)
        self.taken += size
        return size
