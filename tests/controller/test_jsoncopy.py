"""deep_copy: what copy.deepcopy gives, for JSON data and for what marshal cannot carry."""

from __future__ import annotations

import copy
import datetime
from collections import OrderedDict

from joiner.jsoncopy import deep_copy


def test_json_data_is_copied_deeply_and_equal() -> None:
    original = {"a": [1, 2.5, {"b": None, "c": True}], "d": "text", "e": {"f": []}}
    copied = deep_copy(original)
    assert copied == original
    copied["a"][2]["b"] = "changed"
    copied["e"]["f"].append(1)
    assert original == {"a": [1, 2.5, {"b": None, "c": True}], "d": "text", "e": {"f": []}}


def test_values_marshal_cannot_carry_are_deep_copied() -> None:
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    original = {"at": when, "ordered": OrderedDict(x=[1])}
    copied = deep_copy(original)
    assert copied == copy.deepcopy(original)
    assert type(copied["ordered"]) is OrderedDict
    copied["ordered"]["x"].append(2)
    assert original["ordered"]["x"] == [1]
