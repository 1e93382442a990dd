"""The safe YAML reader: hostile sizes, nesting, aliases, duplicate keys and long integers
are errors that name the line, and reading never goes past the input cap."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner import yamlio
from joiner.testing.hostile import EndlessZeros, anchor_bomb, nested_lists
from joiner.yamlio import MAX_DEPTH, MAX_INPUT_BYTES, MAX_INT_DIGITS, MAX_NODES


def error_of(text: str) -> str:
    with pytest.raises(yamlio.YAMLInputError) as caught:
        list(yamlio.load_all(text))
    return str(caught.value)


# --- size --------------------------------------------------------------------------


def test_an_endless_stream_is_read_only_up_to_the_cap():
    stream = EndlessZeros()
    with pytest.raises(yamlio.InputTooLarge) as caught:
        yamlio.read_text(stream)
    assert stream.taken == MAX_INPUT_BYTES + 1
    assert str(caught.value) == "larger than 4 MiB, the limit on input size"


def test_dev_zero_is_too_large():
    with pytest.raises(yamlio.InputTooLarge):
        yamlio.read_text("/dev/zero")


def test_a_file_of_exactly_the_cap_is_read(tmp_path: Path):
    path = tmp_path / "full.yaml"
    path.write_bytes(b"#" * MAX_INPUT_BYTES)
    assert len(yamlio.read_text(path)) == MAX_INPUT_BYTES
    path.write_bytes(b"#" * (MAX_INPUT_BYTES + 1))
    with pytest.raises(yamlio.InputTooLarge):
        yamlio.read_text(path)


# --- structure ---------------------------------------------------------------------


def test_nesting_beyond_the_cap_names_where_instead_of_recursing():
    deep = f"a: {nested_lists(5000)}\n"
    assert error_of(deep) == f"nested more than {MAX_DEPTH} levels deep (line 1, column 103)"


def test_nesting_up_to_the_cap_loads():
    # the mapping is one level, its value 99 more
    value = yamlio.load(f"a: {nested_lists(MAX_DEPTH - 1)}\n")
    depth = 0
    while isinstance(value, (dict, list)) and value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        depth += 1
    assert depth == MAX_DEPTH - 1


def test_an_anchor_bomb_is_refused_when_its_expansion_passes_the_budget():
    bomb = f"bomb: {anchor_bomb()}\n"
    assert len(bomb) < 2500
    assert error_of(bomb) == (
        f"more than {MAX_NODES:,} values, counting each alias as a copy of its anchor "
        "(line 1, column 308)"
    )


def test_small_bombs_in_many_documents_share_one_budget():
    # 10**5 strings per document stays under the budget; enough documents do not
    stream = "".join(f"---\nbomb: {anchor_bomb(levels=5)}\n" for _ in range(6))
    assert error_of(stream).startswith(f"more than {MAX_NODES:,} values")


def test_ordinary_aliases_load_as_equal_copies():
    text = "base: &base {cpu: 1, labels: {team: a}}\npools: [*base, *base]\n"
    document = yamlio.load(text)
    assert document["pools"] == [{"cpu": 1, "labels": {"team": "a"}}] * 2


@pytest.mark.parametrize(
    ("text", "column"),
    [("a: &a [1, *a]\n", 11), ("a: &a {b: *a}\n", 11)],
)
def test_an_alias_inside_its_own_anchor_is_refused(text: str, column: int):
    assert error_of(text) == f"alias *a refers to a node that contains it (line 1, column {column})"


def test_an_anchor_of_an_earlier_document_does_not_hide_a_recursive_alias():
    text = "---\na: &a 1\n---\nb: &a [*a]\n"
    assert error_of(text) == "alias *a refers to a node that contains it (line 4, column 8)"


# --- keys and values ---------------------------------------------------------------


def test_a_duplicate_key_names_both_lines():
    text = "spec:\n  weight: 5\n  limits: {}\n  weight: 0\n"
    assert error_of(text) == "duplicate key 'weight', first at line 2 (line 4, column 3)"


def test_duplicates_in_flow_mappings_and_equal_keys_of_other_spellings():
    assert error_of("{a: 1, b: 2, a: 3}\n") == (
        "duplicate key 'a', first at line 1 (line 1, column 14)"
    )
    assert error_of("1: a\n0x1: b\n") == "duplicate key 1, first at line 1 (line 2, column 1)"


def test_a_key_may_override_a_merged_one():
    text = "base: &base {a: 1, b: 2}\nuse:\n  <<: *base\n  b: 3\n"
    assert yamlio.load(text)["use"] == {"a": 1, "b": 3}


def test_integers_of_too_many_digits_name_the_line():
    text = "spec:\n  weight: " + "9" * 5000 + "\n"
    assert error_of(text) == (
        f"an integer of 5000 digits, more than the {MAX_INT_DIGITS} allowed (line 2, column 11)"
    )
    hexadecimal = "x: 0x" + "f" * (MAX_INT_DIGITS + 1) + "\n"
    assert error_of(hexadecimal).startswith(f"an integer of {MAX_INT_DIGITS + 1} digits")


def test_integers_up_to_the_cap_load():
    digits = "9" * MAX_INT_DIGITS
    assert yamlio.load(f"a: {digits}\nb: -1_000\nc: 0x1F\nd: 1:30\n") == {
        "a": int(digits),
        "b": -1000,
        "c": 31,
        "d": 90,
    }


def test_data_is_json_data():
    assert yamlio.load("at: 2024-01-31\n") == {"at": "2024-01-31"}
    assert error_of("tags: !!set {a, b}\n") == (
        "!!set values are not supported (only JSON data) (line 1, column 7)"
    )
    assert error_of("blob: !!binary aGk=\n").startswith("!!binary values are not supported")


# --- documents and syntax ------------------------------------------------------------


def test_documents_before_a_problem_are_yielded():
    documents = yamlio.load_all("a: 1\n---\nb: [\n")
    assert next(documents) == {"a": 1}
    with pytest.raises(yamlio.YAMLInputError) as caught:
        next(documents)
    assert str(caught.value) == (
        "not valid YAML: expected the node content, but found '<stream end>' (line 4, column 1)"
    )


def test_load_wants_one_document():
    assert yamlio.load("") is None
    with pytest.raises(yamlio.YAMLInputError) as caught:
        yamlio.load("a: 1\n---\nb: 2\n")
    assert str(caught.value) == (
        "not valid YAML: expected a single document in the stream, but found another "
        "document (line 2, column 1)"
    )
