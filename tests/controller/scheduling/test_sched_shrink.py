"""The long mode's shrinker keeps exactly what a divergence needs."""

from __future__ import annotations

from typing import Any

from sched_shrink import shrink


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "main"}], **spec}}


def test_shrink_removes_every_part_the_predicate_does_not_need() -> None:
    toleration = {"operator": "Exists"}
    document = {
        "instanceTypes": [{"name": "t0"}, {"name": "t1", "labels": {"a": "b"}}],
        "nodePools": [{"metadata": {"name": "np"}, "spec": {"weight": 3}}],
        "pods": [
            _pod("p0", tolerations=[toleration], nodeSelector={"a": "b"}),
            _pod("p1", tolerations=[toleration, {"key": "k"}]),
            _pod("p2"),
        ],
    }

    def needs_p1_tolerating_all(candidate: dict[str, Any]) -> bool:
        pods = {p["metadata"]["name"]: p for p in candidate.get("pods") or ()}
        return "p1" in pods and toleration in (pods["p1"]["spec"].get("tolerations") or ())

    assert shrink(document, needs_p1_tolerating_all) == {
        "instanceTypes": [],
        "nodePools": [],
        "pods": [
            {"metadata": {"name": "p1"}, "spec": {"containers": [], "tolerations": [toleration]}}
        ],
    }


def test_shrink_asks_once_per_candidate_document() -> None:
    asked: list[str] = []

    document = {"pods": [_pod("p0"), _pod("p1")]}

    def only_the_original(candidate: dict[str, Any]) -> bool:
        asked.append(repr(candidate))
        return candidate == document

    assert shrink(document, only_the_original) == document
    assert len(asked) == len(set(asked))
