"""Deep copies of JSON-shaped data at C speed.

Kubernetes objects are plain dicts, lists, strings, numbers, booleans and None; a
``marshal`` round trip copies them about ten times faster than ``copy.deepcopy`` (a
sixth of the simulator's status writes went to ``deepcopy``). Anything marshal cannot
carry (a datetime from YAML, a dict subclass) is copied by ``copy.deepcopy``, so the
result is always what ``deepcopy`` gives.
"""

from __future__ import annotations

import copy
import marshal
from typing import TypeVar

T = TypeVar("T")


def deep_copy(value: T) -> T:
    """A deep copy of ``value`` (see the module docstring)."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return copy.deepcopy(value)
