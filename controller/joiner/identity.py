"""Values worked out from objects, remembered by the objects' identity.

The controller's state and the simulator hand out the same objects (pods, pools,
instance type lists, node classes) until they change, and never edit them in place:
a new version is a new object. So "the same objects as last time" can be told by
identity, which is far cheaper than comparing contents, and what was worked out from
them still holds.

A cache holds the objects its values came from, so a process that is done with a
cluster (a simulation that ended) must empty the caches (``forget_all``): they would
keep its objects alive until each filled up, and a process running thousands of
simulations (the crash property suite) grew to 6 GB that way.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")

_every_cache: weakref.WeakSet[IdentityCache] = weakref.WeakSet()
_other_caches: list[Callable[[], None]] = []  # how to empty the caches of another shape


def forget_all() -> None:
    """Empty every cache of the process (each ``IdentityCache`` and those registered with
    ``also_forget``): nothing they hold is used again."""
    for cache in list(_every_cache):
        cache.clear()
    for clear in _other_caches:
        clear()


def also_forget(clear: Callable[[], None]) -> None:
    """Have ``forget_all`` call ``clear``: a cache by identity that is not an
    ``IdentityCache`` (a hot path's plain dict)."""
    _other_caches.append(clear)


class IdentityCache(Generic[T]):
    """At most ``size`` values, each under the identity of the objects it came from
    (plus an optional plain key). The cache holds those objects, so no id is reused by
    another object while its entry lives; when full, it starts over.

    A value put under a ``slot`` (e.g. a node's name) replaces the one last put under
    it: the objects it came from are superseded (the node's pods changed), and holding
    them until the cache starts over would keep old versions of a whole cluster's pods."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: dict[tuple, tuple[tuple[object, ...], T]] = {}
        self._slots: dict[Hashable, tuple] = {}  # slot -> the key of its latest value
        _every_cache.add(self)

    def clear(self) -> None:
        self._values.clear()
        self._slots.clear()

    def get(self, objects: Sequence[object], key: Hashable = ()) -> T | None:
        """The value remembered for these very objects, or None."""
        found = self._values.get((tuple(map(id, objects)), key))
        return None if found is None else found[1]

    def put(
        self, objects: Sequence[object], value: T, key: Hashable = (), slot: Hashable = None
    ) -> None:
        if len(self._values) >= self._size:
            self.clear()
        entry = (tuple(map(id, objects)), key)
        if slot is not None:
            replaced = self._slots.get(slot)
            if replaced is not None and replaced != entry:
                self._values.pop(replaced, None)
            self._slots[slot] = entry
        self._values[entry] = (tuple(objects), value)

    def remember(
        self,
        objects: Sequence[object],
        compute: Callable[[], T],
        key: Hashable = (),
        slot: Hashable = None,
    ) -> T:
        """The value for these very objects, else ``compute()``, remembered."""
        found = self.get(objects, key)
        if found is None:
            found = compute()
            self.put(objects, found, key, slot)
        return found
