"""``joiner render crds``."""

from __future__ import annotations

import json

import pytest
import yaml
from joiner.api.crds import render_crds
from joiner.cli import main
from joiner.commands.render import RENDERERS


def test_render_crds_prints_multi_document_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "crds"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("---\napiVersion: apiextensions.k8s.io/v1\n")
    assert list(yaml.safe_load_all(out)) == render_crds()


def test_render_crds_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "crds", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == render_crds()


def test_render_needs_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["render"])
    assert exit_info.value.code == 2
    assert "WHAT" in capsys.readouterr().err


def test_renderers_are_listed_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for name, renderer in RENDERERS.items():
        assert f"{name} {renderer.help}" in help_text
