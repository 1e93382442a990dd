"""``joiner render crds``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from joiner.api.crds import render_crds
from joiner.cli import main
from joiner.commands.render import RENDERERS
from joiner.testing.envtest import ControlPlane


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


def test_rendered_crds_apply_with_kubectl_and_become_established(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """``joiner render crds | kubectl apply -f -`` on a real kube-apiserver."""
    kubeconfig = str(control_plane.write_kubeconfig(tmp_path / "admin"))
    joiner = str(Path(sys.executable).with_name("joiner"))
    kubectl = str(Path(sys.executable).with_name("kubectl"))
    rendered = subprocess.run([joiner, "render", "crds"], capture_output=True, check=True)
    applied = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-"],
        input=rendered.stdout,
        capture_output=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr.decode()
    names = [crd["metadata"]["name"] for crd in render_crds()]
    waited = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established",
         "--timeout=60s", *(f"crd/{name}" for name in names)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert waited.returncode == 0, waited.stderr
    assert sorted(waited.stdout.splitlines()) == sorted(
        f"customresourcedefinition.apiextensions.k8s.io/{name} condition met" for name in names
    )
