"""Upstream Karpenter's scheduler as a command: run it on workload documents and read
what it decided.

The oracle binary (``joiner.testing.assets.find_oracle``) is a Go test binary: it reads
the document named by ``ORACLE_IN`` and writes its result to ``ORACLE_OUT`` when run
as ``$BIN -test.run '^TestOracle$' -test.count=1``. Upstream is not deterministic on
ties (Go map order), so callers run it several times: ``run_many`` starts the
processes together (each costs about 0.1 s, mostly process start) and ``Outcome``
reads one result.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joiner.api import labels as wk

TIMEOUT_SECONDS = 600.0


class OracleError(RuntimeError):
    """The oracle rejected the document or failed; the message carries its output."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One upstream scheduling result: where each placed pod went (``homes``: pod ->
    the labels its node is known to have: ``kubernetes.io/hostname``, a NodeClaim's
    placeholder or the existing node's name, plus every label a NodeClaim's requirements
    pin to one value), pods it could not place with its error, the cost of its
    NodeClaims (each at its cheapest compatible offering) and their count."""

    homes: Mapping[str, Mapping[str, str]]
    claims: tuple[Mapping[str, Any], ...]  # the result's NodeClaims, as it gives them
    on_nodes: frozenset[str]
    errors: Mapping[str, str]
    cost: float
    nodeclaims: int

    @property
    def placed(self) -> frozenset[str]:
        return frozenset(self.homes)

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> Outcome:
        claims = result.get("nodeClaims") or []
        homes: dict[str, Mapping[str, str]] = {}
        for index, claim in enumerate(claims):
            labels = {wk.HOSTNAME: f"nodeclaim-{index}", **pinned_labels(claim["requirements"])}
            homes.update(dict.fromkeys(claim.get("pods") or (), labels))
        nodes = result.get("existingNodes") or ()
        for node in nodes:
            homes.update({pod: {wk.HOSTNAME: node["name"]} for pod in node.get("pods") or ()})
        return cls(
            homes=homes,
            claims=tuple(claims),
            on_nodes=frozenset(p for n in nodes for p in n.get("pods") or ()),
            errors=dict(result.get("podErrors") or {}),
            cost=sum(float(c["cheapest"]["price"]) for c in claims),
            nodeclaims=len(claims),
        )


def pinned_labels(requirements: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The labels requirements (in Kubernetes form) fix to one value."""
    return {
        r["key"]: r["values"][0]
        for r in requirements
        if r["operator"] == "In" and len(r.get("values") or ()) == 1
    }


def run(binary: Path, document: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's result for one document."""
    return run_many(binary, [document])[0]


def run_many(
    binary: Path, documents: Sequence[Mapping[str, Any]], timeout: float = TIMEOUT_SECONDS
) -> list[dict[str, Any]]:
    """Upstream's results for several documents, one process each, all started at once;
    ``OracleError`` when one fails or takes longer than ``timeout`` seconds."""
    with tempfile.TemporaryDirectory(prefix="karpenter-oracle-") as scratch:
        started = [_start(binary, Path(scratch), i, doc) for i, doc in enumerate(documents)]
        try:
            return [_finish(*process, timeout) for process in started]
        finally:
            # A timeout or a failed run leaves the others running: stop them rather than
            # leave solves of minutes behind with no parent.
            for process, _ in started:
                if process.poll() is None:
                    process.kill()
                    process.wait()


def _start(
    binary: Path, scratch: Path, index: int, document: Mapping[str, Any]
) -> tuple[subprocess.Popen[bytes], Path]:
    source, target = scratch / f"in-{index}.json", scratch / f"out-{index}.json"
    source.write_text(json.dumps(document))
    env = {**os.environ, "ORACLE_IN": str(source), "ORACLE_OUT": str(target)}
    process = subprocess.Popen(
        [str(binary), "-test.run", "^TestOracle$", "-test.count=1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    return process, target


def _finish(process: subprocess.Popen[bytes], target: Path, timeout: float) -> dict[str, Any]:
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise OracleError(f"karpenter oracle took longer than {timeout:g} s") from None
    if process.returncode != 0 or not target.is_file():
        text = output.decode(errors="replace").strip()
        raise OracleError(f"karpenter oracle exited {process.returncode}: {text[-2000:]}")
    return json.loads(target.read_text())
