"""The project runs from its own files: nothing refers to the workplace's ``shared``
directory beside the checkout except ``joiner.testing.assets``, which finds the envtest
binaries and the Karpenter oracle there (and says in one line what to set when they are
missing). A clone on a user's machine has the project and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSETS = Path("controller/joiner/testing/assets.py")
ALLOWED = {ASSETS, Path(__file__).resolve().relative_to(ROOT)}  # this check's own examples
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "build", "reports", ".ruff_cache", ".hypothesis"}
# Documentation may say where the workplace archives are; it reads nothing.
PROSE_SUFFIXES = {".md"}
# A path into the shared directory: ../shared, /work/shared, shared/<its entries>, or a
# pathlib/os.path join with "shared" as a component.
SHARED_REFERENCE = re.compile(
    r"""\.\./shared\b|/work/shared\b"""
    r"""|\bshared/(data|envtest|karpenter-oracle|karpenter-upstream|seeds|hooks)\b"""
    r"""|\bshared/(SPEC|DESIGN|SCENARIO|MISSION)\.md"""
    r"""|/\s*["']shared["']|["']shared["']\s*/|join\([^)]*["']shared["']"""
)


def project_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT)
        skipped = SKIPPED_DIRS & set(relative.parts) or any(
            part.endswith(".egg-info") for part in relative.parts
        )
        if path.is_file() and not skipped and path.suffix not in PROSE_SUFFIXES:
            files.append(relative)
    return sorted(files)


def references(text: str) -> list[str]:
    return [
        f"{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if SHARED_REFERENCE.search(line)
    ]


def test_no_file_but_the_assets_finder_refers_to_the_shared_directory() -> None:
    found = {}
    for relative in project_files():
        if relative in ALLOWED:
            continue
        try:
            text = (ROOT / relative).read_text()
        except UnicodeDecodeError:
            continue  # binary
        if hits := references(text):
            found[str(relative)] = hits
    assert found == {}


def test_the_assets_finder_is_the_one_allowed_reference() -> None:
    assert references((ROOT / ASSETS).read_text())


@pytest.mark.parametrize(
    "line",
    [
        'PRICES = Path(__file__).resolve().parents[2] / "shared" / "data" / "x.json"',
        "os.path.join(root, 'shared', 'data')",
        "reads ../shared/data/ec2-on-demand-us-east-1.json",
        "see /work/shared/SPEC.md",
        "from `shared/data/ec2-on-demand-us-east-1.json`",
        "the rules in shared/SPEC.md",
    ],
)
def test_the_check_sees_the_usual_ways_of_pointing_there(line: str) -> None:
    assert references(line)


@pytest.mark.parametrize(
    "line",
    [
        '@pytest.mark.parametrize("shared", [False, True])',
        "store = MemoryKube(FakeClock(), share_watched_objects=shared)",
        "the informer's shared watch objects",
    ],
)
def test_the_check_ignores_the_word_in_other_senses(line: str) -> None:
    assert not references(line)
