"""Hostile YAML for the tests and benchmarks of the bounds on user input
(``joiner.yamlio``): small texts that cost a naive reader, or whoever walks what it
loaded, unbounded time or memory. Each is a YAML value to put after a key."""

from __future__ import annotations


def anchor_bomb(levels: int = 9) -> str:
    """A flow list whose level i is ten aliases of level i - 1: about 10**levels strings
    once expanded, written in about 50 bytes per level ("billion laughs")."""
    parts = [f"&l0 [{', '.join(['lol'] * 10)}]"]
    parts += [f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "[" + ", ".join(parts) + "]"


def nested_lists(depth: int) -> str:
    """``depth`` lists, each the only item of the one around it."""
    return "[" * depth + "]" * depth
