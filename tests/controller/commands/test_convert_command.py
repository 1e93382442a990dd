"""``joiner convert`` (v1 YAML on stdout, the report on stderr, exit 2 with one line for
bad input) and the old kinds in ``joiner validate``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
import yaml
from console_runs import run_joiner
from joiner.cli import main
from joiner.convert import Options, convert_objects

UPSTREAM = Path(__file__).parents[1] / "convert" / "upstream"
PROVISIONER = UPSTREAM / "provisioner.yaml"
TEMPLATE = UPSTREAM / "awsnodetemplate.yaml"
WALKTHROUGH_PROVISIONER = """\
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
  limits: {resources: {cpu: 100}}
  provider:
    subnetSelector: {karpenter.sh/discovery: demo}
    securityGroupSelector: {karpenter.sh/discovery: demo}
  ttlSecondsAfterEmpty: 30
  ttlSecondsUntilExpired: 1800
"""


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


def test_files_convert_to_v1_yaml_with_a_line_per_field(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        ["convert", "--role", "NodeRole", str(PROVISIONER), str(TEMPLATE)], capsys
    )
    assert code == 0
    old = [*yaml.safe_load_all(PROVISIONER.read_text()), *yaml.safe_load_all(TEMPLATE.read_text())]
    expected = convert_objects(old, Options(role="NodeRole"))
    assert list(yaml.safe_load_all(out)) == expected.objects
    assert [o["kind"] for o in expected.objects] == ["NodePool", "EC2NodeClass"]
    assert "  userData: |\n    [settings.kubernetes]\n" in out  # as people write it
    assert err == [*(str(n) for n in expected.notes), "converted 2 old object(s)"]
    assert (
        "Provisioner/default: spec.ttlSecondsAfterEmpty: converted -> NodePool/default "
        "spec.disruption.consolidateAfter: consolidationPolicy WhenEmpty, consolidateAfter the TTL"
    ) in err
    assert (
        "Provisioner/default: spec.kubeletConfiguration.containerRuntime: no equivalent: v1 "
        "nodes always run containerd; remove it"
    ) in err


def test_stdin_is_read_with_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(WALKTHROUGH_PROVISIONER.encode()))
    )
    code, out, err = _run(["convert", "--role", "KarpenterNodeRole-demo", "-"], capsys)
    assert code == 0
    pool, node_class = yaml.safe_load_all(out)
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "30s",
    }
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "30m"
    assert pool["spec"]["limits"] == {"cpu": 100}
    assert node_class["spec"]["role"] == "KarpenterNodeRole-demo"
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "al2@latest"}]
    assert err[-1] == "converted 1 old object(s)"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            WALKTHROUGH_PROVISIONER.replace("ttlSecondsAfterEmpty", "ttlSecondsAfterEmpyt"),
            "Provisioner/default: spec.ttlSecondsAfterEmpyt: unknown field",
        ),
        (
            WALKTHROUGH_PROVISIONER.replace(
                "ttlSecondsUntilExpired: 1800", "ttlSecondsUntilExpired: 30m"
            ),
            "Provisioner/default: spec.ttlSecondsUntilExpired: expected whole seconds >= 0, "
            "got '30m'",
        ),
        ("kind: [\n", "document 1: "),
    ],
    ids=["unknown-field", "bad-value", "bad-yaml"],
)
def test_bad_input_is_one_line_naming_file_and_field_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(text)
    code, out, err = _run(["convert", str(path)], capsys)
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith(f"joiner convert: {path}: {line}")


def test_a_missing_file_and_no_input_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(["convert", str(tmp_path / "none.yaml")], capsys)
    assert (code, out, err) == (
        2,
        "",
        [f"joiner convert: {tmp_path / 'none.yaml'}: cannot read: No such file or directory"],
    )
    code, out, err = _run(["convert"], capsys)
    assert (code, out, err) == (
        2,
        "",
        ["joiner convert: name a FILE, - for stdin, or --from-cluster"],
    )


def test_the_console_script_converts(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(WALKTHROUGH_PROVISIONER)
    done = run_joiner("convert", str(path))
    assert done.returncode == 0, done.stderr
    assert [o["kind"] for o in yaml.safe_load_all(done.stdout)] == ["NodePool", "EC2NodeClass"]


def test_validate_checks_an_old_kind_as_its_v1_objects_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(WALKTHROUGH_PROVISIONER)
    code, out, _ = _run(["validate", str(path)], capsys)
    assert code == 0
    assert out.splitlines() == [
        f"{path}: warning: Provisioner/default: converted to v1 (joiner convert shows how): "
        "spec.requirements, spec.limits.resources, spec.provider, spec.provider.subnetSelector, "
        "spec.provider.securityGroupSelector, spec.ttlSecondsAfterEmpty, "
        "spec.ttlSecondsUntilExpired, spec.provider.amiFamily, spec.provider.instanceProfile "
        "[converted]",
        f"{path}: NodePool/default: OK",
        f"{path}: EC2NodeClass/default: OK",
    ]
    assert _run(["validate", "--strict", str(path)], capsys)[0] == 2


def test_validate_reports_an_old_kind_that_cannot_be_converted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(WALKTHROUGH_PROVISIONER.replace("weight", "x") + "  weight: 0\n")
    code, out, _ = _run(["validate", str(path)], capsys)
    assert code == 2
    assert out.splitlines() == [
        f"{path}: Provisioner/default: converted to NodePool/default, which v1 refuses: "
        "spec.weight: must be >= 1, got 0"
    ]
