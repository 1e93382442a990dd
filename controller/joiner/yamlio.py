"""Reading YAML that users give us (manifests, scenarios, kubeconfigs), safely.

``yaml.safe_load`` refuses arbitrary objects but not hostile sizes: it reads a stream
to its end (``/dev/zero`` never ends), recurses once per nesting level (thousands of
``[`` raise RecursionError), expands aliases without limit (a 2 KB "billion laughs"
document shares one list a billion times, and whoever walks it hangs), lets the last
of two equal keys win silently, and converts integers of any length (5,000 digits
raise ValueError). Here every one of those is a ``YAMLInputError`` that names the
line, and the caps below bound the time and memory any input can cost:

    read_text(path_or_stream) -> str    at most MAX_INPUT_BYTES of UTF-8 text
    load(text) -> Any                   exactly one document (None when empty)
    load_all(text) -> Iterator[Any]     each document, lazily

Loaded data is plain JSON data (dicts, lists, str, int, float, bool, None), as the
API server would see it: timestamps stay the strings they were written as, and the
YAML-only types (``!!binary``, ``!!set``, ``!!omap``, ``!!pairs``) are errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, BinaryIO

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

# Larger than any object the API server stores (etcd takes 1.5 MiB) and than any
# scenario a person writes; parsing this much takes a few seconds.
MAX_INPUT_BYTES = 4 * 2**20
# Kubernetes objects nest about 15 levels deep (a pod template's affinity terms), a
# scenario adds 5; the parser recurses about twice per level, well within Python's 1000.
MAX_DEPTH = 100
# Scalars, lists and mappings of one input, counting each alias as a copy of what it
# refers to: what a consumer walking the data visits. Bounds alias bombs, and memory
# (parsing holds about 600 bytes per node); manifests average 10 bytes per node, so a
# file just under MAX_INPUT_BYTES holds about 400,000.
MAX_NODES = 500_000
# int64 has 19 digits; no Kubernetes or scenario field takes more.
MAX_INT_DIGITS = 64

_MERGE_TAG = "tag:yaml.org,2002:merge"
_UNSUPPORTED_TAGS = ("binary", "set", "omap", "pairs")


class InputTooLarge(ValueError):
    """The input is over MAX_INPUT_BYTES (the message says so; callers add the file)."""


class YAMLInputError(ValueError):
    """YAML that cannot be loaded safely: ``problem`` says why, at 1-based ``line``
    and ``column`` when known."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None):
        super().__init__(problem)
        self.problem, self.line, self.column = problem, line, column

    def __str__(self) -> str:
        if self.line is None:
            return self.problem
        return f"{self.problem} (line {self.line}, column {self.column})"


def read_text(source: str | os.PathLike[str] | BinaryIO) -> str:
    """The UTF-8 text of a file (by path) or an open binary stream, reading at most
    MAX_INPUT_BYTES + 1 bytes. Raises OSError, UnicodeDecodeError or InputTooLarge."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            data = _read_bounded(handle)
    else:
        data = _read_bounded(source)
    if len(data) > MAX_INPUT_BYTES:
        raise InputTooLarge(f"larger than {MAX_INPUT_BYTES // 2**20} MiB, the limit on input size")
    return data.decode("utf-8")


def _read_bounded(stream: BinaryIO) -> bytes:
    """Up to one byte more than the cap, whatever the stream (a raw stream may return
    less than asked for before its end)."""
    chunks, wanted = [], MAX_INPUT_BYTES + 1
    while wanted > 0:
        chunk = stream.read(wanted)
        if not chunk:
            break
        chunks.append(chunk)
        wanted -= len(chunk)
    return b"".join(chunks)


def load(text: str) -> Any:
    """The one document of ``text`` (None for an empty stream)."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as error:
        raise _input_error(error) from None
    finally:
        loader.dispose()


def load_all(text: str) -> Iterator[Any]:
    """Each document of ``text`` in turn; a problem is raised when its document is
    reached, so the documents before it are still yielded."""
    loader = _Loader(text)
    try:
        while loader.check_data():
            yield loader.get_data()
    except yaml.YAMLError as error:
        raise _input_error(error) from None
    finally:
        loader.dispose()


class _Refused(yaml.MarkedYAMLError):
    """Well-formed YAML this reader refuses; the problem is the whole message."""

    def __init__(self, problem: str, node_or_mark: Node | yaml.Mark | None) -> None:
        mark = node_or_mark.start_mark if isinstance(node_or_mark, Node) else node_or_mark
        super().__init__(problem=problem, problem_mark=mark)


def _input_error(error: yaml.YAMLError) -> YAMLInputError:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).replace("\n", " ")
    context = getattr(error, "context", None)
    if context and problem.startswith("but "):  # "expected a single document ..., but found"
        problem = f"{context}, {problem}"
    if not isinstance(error, _Refused):
        problem = f"not valid YAML: {problem}"
    if mark is None:
        return YAMLInputError(problem)
    return YAMLInputError(problem, mark.line + 1, mark.column + 1)


class _Loader(yaml.SafeLoader):
    """SafeLoader with the caps of this module. The composer counts nodes (an alias
    counts as the size of what it refers to, recorded when its anchor was complete)
    and depth; the constructor rejects duplicate keys, long integers and non-JSON types."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0
        self._nodes = 0  # over the whole stream: many small bombs are one big one
        self._anchor_sizes: dict[str, int] = {}

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            node = super().compose_node(parent, index)  # raises for an undefined alias
            size = self._anchor_sizes.get(event.anchor)
            if size is None:
                raise _Refused(
                    f"alias *{event.anchor} refers to a node that contains it", event.start_mark
                )
            self._count(size, event.start_mark)
            return node
        if event.anchor is not None:
            self._anchor_sizes.pop(event.anchor, None)  # an anchor of an earlier document
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
        before = self._nodes
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._anchor_sizes[event.anchor] = self._nodes - before
        return node

    def _count(self, nodes: int, mark: yaml.Mark) -> None:
        self._nodes += nodes
        if self._nodes > MAX_NODES:
            raise _Refused(
                f"more than {MAX_NODES:,} values, counting each alias as a copy of its anchor",
                mark,
            )

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        self._reject_duplicate_keys(node)
        return super().construct_mapping(node, deep=deep)

    def _reject_duplicate_keys(self, node: MappingNode) -> None:
        # Before merge keys (<<) are flattened in: a key may override a merged one.
        first_lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            if not isinstance(key, (str, int, float, bool, type(None))):
                continue  # an unhashable key: the base constructor says so
            if key in first_lines:
                raise _Refused(f"duplicate key {key!r}, first at line {first_lines[key]}", key_node)
            first_lines[key] = key_node.start_mark.line + 1

    def construct_yaml_int(self, node: ScalarNode) -> int:
        # Python refuses to convert more than 4300 decimal digits, and converts
        # hexadecimal ones of any length into numbers nothing can print.
        digits = _int_digits(node.value)
        if digits > MAX_INT_DIGITS:
            raise _Refused(
                f"an integer of {digits} digits, more than the {MAX_INT_DIGITS} allowed", node
            )
        return super().construct_yaml_int(node)

    def construct_yaml_timestamp(self, node: ScalarNode) -> str:  # type: ignore[override]
        # As kubectl sends it: the JSON the API server receives has the string.
        return str(self.construct_scalar(node))

    def construct_unsupported(self, node: Node) -> Any:
        tag = node.tag.removeprefix("tag:yaml.org,2002:")
        raise _Refused(f"!!{tag} values are not supported (only JSON data)", node)


def _int_digits(literal: str) -> int:
    """Digits of a YAML 1.1 integer: 1_000, -0x1F, 0b101, 017 (octal) or 1:30:00 (base 60)."""
    text = literal.replace("_", "").lstrip("+-")
    if text[:2] in ("0x", "0b"):
        text = text[2:]
    return len(text) - text.count(":")


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
for _tag in _UNSUPPORTED_TAGS:
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _Loader.construct_unsupported)
