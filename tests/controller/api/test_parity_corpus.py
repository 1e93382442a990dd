"""``joiner validate`` on the verdict-parity corpus, without a server: the verdict and field
paths upstream Karpenter's CRDs give each case (recorded in the corpus, checked against
the real server by test_crds_on_server), and exactly the warnings the case lists."""

from __future__ import annotations

import pytest
from joiner.api.validation import validate_object
from parity import Case, corpus, corpus_files, joiner_verdict, joiner_warnings, upstream_examples


def _disagreements(cases: list[Case]) -> list[str]:
    wrong = []
    for case in cases:
        verdict = joiner_verdict(validate_object(case.obj))
        if verdict != case.expected:
            wrong.append(f"{case.name}: upstream {case.expected}, joiner validate {verdict}")
        warnings = joiner_warnings(case.obj)
        if warnings != case.warnings:
            wrong.append(f"{case.name}: warnings {sorted(case.warnings)}, got {sorted(warnings)}")
    return wrong


@pytest.mark.parametrize("name", corpus_files())
def test_joiner_validate_gives_the_verdicts_of_upstreams_crds(name: str) -> None:
    cases = corpus(name)
    wrong = _disagreements(cases)
    assert not wrong, f"{len(wrong)} of {len(cases)} cases disagree:\n" + "\n".join(wrong)


def test_joiner_validate_gives_the_verdicts_of_upstreams_crds_on_upstreams_examples() -> None:
    cases = upstream_examples()
    assert len(cases) > 22  # some files hold a NodePool and its EC2NodeClass
    wrong = _disagreements(cases)
    assert not wrong, f"{len(wrong)} of {len(cases)} cases disagree:\n" + "\n".join(wrong)


def test_the_corpus_covers_every_rule_family() -> None:
    assert corpus_files() == [
        "capacitybuffer.yaml",
        "disruption.yaml",
        "ec2nodeclass.yaml",
        "labels.yaml",
        "metadata.yaml",
        "nodeoverlay.yaml",
        "pool.yaml",
        "requirements.yaml",
        "selectors.yaml",
        "taints.yaml",
    ]
    cases = [case for name in corpus_files() for case in corpus(name)]
    assert len({case.name for case in cases}) == len(cases)  # ids are unique per file
    accepted = [case for case in cases if case.expected.accepted]
    assert len(cases) > 300 and 0.3 < len(accepted) / len(cases) < 0.7
