"""IdentityCache: values remembered by the identity of the objects they came from."""

from __future__ import annotations

import weakref

from joiner import identity
from joiner.identity import IdentityCache


def counting(calls: list[str], value: str):
    def compute() -> str:
        calls.append(value)
        return value

    return compute


def test_the_same_objects_give_the_remembered_value() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    pods, calls = [{"name": "a"}, {"name": "b"}], []
    assert cache.remember(pods, counting(calls, "first")) == "first"
    assert cache.remember(list(pods), counting(calls, "second")) == "first"
    assert calls == ["first"]


def test_equal_but_new_objects_are_worked_out_again() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    calls: list[str] = []
    cache.remember([{"name": "a"}], counting(calls, "old"))
    assert cache.remember([{"name": "a"}], counting(calls, "new")) == "new"
    assert calls == ["old", "new"]


def test_a_key_tells_values_of_the_same_objects_apart() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    pool, calls = {"name": "default"}, []
    cache.remember([pool], counting(calls, "cpu"), key="cpu")
    assert cache.remember([pool], counting(calls, "memory"), key="memory") == "memory"
    assert cache.remember([pool], counting(calls, "again"), key="cpu") == "cpu"
    assert calls == ["cpu", "memory"]


def test_get_finds_only_what_was_put() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    pods = [{"name": "a"}]
    assert cache.get(pods) is None
    cache.put(pods, "occupancy")
    assert cache.get(list(pods)) == "occupancy"
    assert cache.get(pods, key="other") is None


def test_a_full_cache_starts_over() -> None:
    cache: IdentityCache[int] = IdentityCache(2)
    objects = [{"i": i} for i in range(3)]
    for i, obj in enumerate(objects):
        cache.remember([obj], lambda i=i: i)
    calls: list[str] = []
    assert cache.remember([objects[0]], counting(calls, "recomputed")) == "recomputed"
    assert cache.remember([objects[2]], counting(calls, "kept")) == 2
    assert calls == ["recomputed"]


class Pod:
    """An object a weak reference can follow (a dict cannot)."""


def test_a_value_put_under_a_slot_lets_go_of_the_slots_earlier_objects() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    old, new, other = Pod(), Pod(), Pod()
    cache.remember([old], lambda: "old", slot="node-a")
    cache.remember([other], lambda: "other", slot="node-b")
    assert cache.get([old]) == "old"
    cache.remember([new], lambda: "new", slot="node-a")  # node-a's pod changed
    assert (cache.get([old]), cache.get([new]), cache.get([other])) == (None, "new", "other")
    superseded = weakref.ref(old)
    del old
    assert superseded() is None  # the cache no longer holds it


def test_the_same_objects_under_their_slot_again_keep_their_value() -> None:
    cache: IdentityCache[str] = IdentityCache(8)
    pods, calls = [Pod()], []
    cache.remember(pods, counting(calls, "first"), slot="node-a")
    assert cache.remember(list(pods), counting(calls, "second"), slot="node-a") == "first"
    assert calls == ["first"]


def test_forget_all_empties_every_cache_and_the_registered_ones() -> None:
    first: IdentityCache[str] = IdentityCache(8)
    second: IdentityCache[str] = IdentityCache(8)
    pods, calls = [{"name": "a"}], []
    first.remember(pods, counting(calls, "one"))
    second.remember(pods, counting(calls, "two"), slot="node-a")
    other = {1: "held"}
    identity.also_forget(other.clear)
    identity.forget_all()
    assert first.get(pods) is None and second.get(pods) is None and other == {}
    assert second.remember(pods, counting(calls, "again"), slot="node-a") == "again"
