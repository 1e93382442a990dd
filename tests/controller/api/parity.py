"""The verdict-parity corpus (``parity/*.yaml``): manifests with the verdict upstream
Karpenter's CRDs give them on a real API server, and the warnings Joiner adds.

A corpus file names a ``base`` manifest (``parity/bases.yaml``) and its cases; a case has
an ``id``, changes to the base (``set``: path -> value, ``unset``: paths) or a whole
``object``, the server's field paths when the server refuses it (``reject``; absent when
it accepts), and Joiner's warnings (``warn``: path -> code). ``upstream-examples.yaml``
lists the exceptions among upstream's example manifests, which are all accepted otherwise;
``transitions.yaml`` holds updates (``old_set`` changes the old object).

How verdicts compare: the server accepts (2xx) or refuses. A refusal before validation
(400: unknown fields, undecodable metadata) names at most the unknown fields; a 422 names
every field in its causes (the cause without a field, "some validation rules were not
checked", is left out). Joiner's errors are read the same way.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from joiner.api.compatibility import validation_warnings
from joiner.api.validation import FieldError

PARITY = Path(__file__).parent / "parity"
# Upstream Karpenter's CRDs and examples, as test data (upstream/README.md says whence).
UPSTREAM = Path(__file__).parent / "upstream"
UPSTREAM_CRDS = tuple(
    UPSTREAM / "crds" / name
    for name in (
        "karpenter.sh_nodepools.yaml",
        "karpenter.sh_nodeclaims.yaml",
        "karpenter.k8s.aws_ec2nodeclasses.yaml",
        "karpenter.sh_nodeoverlays.yaml",
        "autoscaling.x-k8s.io_capacitybuffers.yaml",
    )
)
UPSTREAM_EXAMPLES = UPSTREAM / "examples" / "v1"
BASES = "bases.yaml"
EXAMPLES = "upstream-examples.yaml"
TRANSITIONS = "transitions.yaml"
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_UNKNOWN = re.compile(r'unknown field "([^"]+)"')


@dataclass(frozen=True)
class Verdict:
    """Accepted, or refused naming these field paths."""

    accepted: bool
    paths: frozenset[str] = frozenset()

    def __str__(self) -> str:
        return "accepted" if self.accepted else f"refused at {sorted(self.paths)}"


Warnings = frozenset[tuple[str, str]]  # (path, code)


@dataclass(frozen=True)
class Case:
    source: str
    id: str
    obj: Any
    expected: Verdict
    warnings: Warnings = field(default_factory=frozenset)

    @property
    def name(self) -> str:
        return f"{self.source}: {self.id}"


# -- the corpus -------------------------------------------------------------------------------


def corpus_files() -> list[str]:
    special = (BASES, EXAMPLES, TRANSITIONS)
    return sorted(p.name for p in PARITY.glob("*.yaml") if p.name not in special)


def corpus(name: str) -> list[Case]:
    bases = yaml.safe_load((PARITY / BASES).read_text())
    document = yaml.safe_load((PARITY / name).read_text())
    return [
        _case(name, raw, _build(raw, bases[raw.get("base", document.get("base"))]))
        for raw in document["cases"]
    ]


@dataclass(frozen=True)
class Update:
    case: Case  # the new object and the verdict on the update
    old: Any


def transitions() -> list[Update]:
    bases = yaml.safe_load((PARITY / BASES).read_text())
    document = yaml.safe_load((PARITY / TRANSITIONS).read_text())
    return [
        Update(
            _case(TRANSITIONS, raw, _build(raw, bases[raw["base"]])),
            _build({"set": raw.get("old_set")}, bases[raw["base"]]),
        )
        for raw in document["cases"]
    ]


def upstream_examples(directory: Path = UPSTREAM_EXAMPLES) -> list[Case]:
    """Every object of upstream's example manifests, with the verdicts ``EXAMPLES`` gives."""
    document = yaml.safe_load((PARITY / EXAMPLES).read_text())
    listed = {raw["id"]: raw for raw in document["cases"]}
    cases = [
        _case(EXAMPLES, listed.get(case_id, {"id": case_id}), obj)
        for case_id, obj in _example_objects(directory)
    ]
    unknown = set(listed) - {case.id for case in cases}
    assert not unknown, f"{EXAMPLES} lists objects the examples do not have: {sorted(unknown)}"
    return cases


def example_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


def _example_objects(directory: Path) -> Iterator[tuple[str, Any]]:
    for path in example_files(directory):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj:
                yield f"{path.name} {obj['kind']}/{obj['metadata']['name']}", obj


def _case(source: str, raw: Mapping[str, Any], obj: Any) -> Case:
    reject = raw.get("reject")
    expected = Verdict(True) if reject is None else Verdict(False, frozenset(reject))
    warnings = frozenset(
        (path, code)
        for path, codes in (raw.get("warn") or {}).items()
        for code in ([codes] if isinstance(codes, str) else codes)
    )
    return Case(source, raw["id"], obj, expected, warnings)


def _build(raw: Mapping[str, Any], base: Any) -> Any:
    obj = copy.deepcopy(raw.get("object", base))
    for path, value in (raw.get("set") or {}).items():
        parent, last = _parent(obj, path)
        if isinstance(parent, list) and last == len(parent):
            parent.append(copy.deepcopy(value))
        else:
            parent[last] = copy.deepcopy(value)
    for path in raw.get("unset") or []:
        parent, last = _parent(obj, path)
        del parent[last]
    return obj


def _parent(obj: Any, path: str) -> tuple[Any, Any]:
    *steps, last = [int(index) if index else key for key, index in _TOKEN.findall(path)]
    for step in steps:
        obj = obj[step] if isinstance(obj, list) or step in obj else obj.setdefault(step, {})
    return obj, last


# -- verdicts ---------------------------------------------------------------------------------


def joiner_verdict(errors: list[FieldError]) -> Verdict:
    if not errors:
        return Verdict(True)
    if any(error.decoding for error in errors):
        return Verdict(False, frozenset(e.path for e in errors if e.message == "unknown field"))
    return Verdict(False, frozenset(error.path for error in errors if error.path))


def server_verdict(code: int, status: Mapping[str, Any]) -> Verdict:
    """From the HTTP status and the body of a dry-run create."""
    if code < 300:
        return Verdict(True)
    if code == 400:
        return Verdict(False, frozenset(_UNKNOWN.findall(status.get("message", ""))))
    causes = (status.get("details") or {}).get("causes") or []
    return Verdict(
        False, frozenset(c["field"] for c in causes if c.get("field", "<nil>") != "<nil>")
    )


def joiner_warnings(obj: Any) -> Warnings:
    return frozenset((warning.path, warning.code) for warning in validation_warnings(obj))
