"""docs/convert.md gives the field table of ``joiner.convert.fields`` row by row."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.convert import fields

PAGE = (Path(__file__).resolve().parents[3] / "docs" / "convert.md").read_text()


def _row(entry: fields.Field) -> str:
    if entry.target:
        target = f"`{entry.target}`"
    else:
        target = "**no equivalent**" + (" (refused)" if entry.blocking else "")
    return f"| `{entry.path}` | {target} | {entry.message} |"


@pytest.mark.parametrize("kind", list(fields.TABLES), ids=lambda k: k[1])
def test_the_page_has_every_row_of_the_table(kind: tuple[str, str]) -> None:
    heading = f"### {kind[1]} ({kind[0]})\n"
    assert heading in PAGE
    section = PAGE.split(heading, 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows == [_row(entry) for entry in fields.TABLES[kind]]
