"""``joiner controller``: settings from the environment with one-line startup errors,
--help documenting every setting, where the leader-election Lease lives [SPEC 2]."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.cli import main
from joiner.commands.controller import controller_client, leader_election
from joiner.kube.http import ClusterConfig
from joiner.settings import SETTINGS, Settings

VALID_KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: test
contexts: [{name: test, context: {cluster: test, user: test}}]
clusters: [{name: test, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: test, user: {token: abc}}]
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    for name in ("AWS_DEFAULT_REGION", "KUBERNETES_SERVICE_HOST", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["controller", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_cluster_name_exits_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys) == (2, "", "joiner controller: CLUSTER_NAME is required\n")


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("METRICS_PORT", "80800", "METRICS_PORT: 80800 is out of range (expected 1..65535)"),
        (
            "BIND_ADDRESS",
            "0.0.0.0:8080",
            "BIND_ADDRESS: invalid IP address '0.0.0.0:8080' (expected e.g. 0.0.0.0, 127.0.0.1 "
            "or ::)",
        ),
        (
            "MIN_VALUES_POLICY",
            "BestEffort",
            "MIN_VALUES_POLICY: BestEffort is not supported by Joiner; minValues is always kept "
            "strictly (remove the variable or set Strict)",
        ),
    ],
)
def test_malformed_setting_names_the_variable(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
    message: str,
) -> None:
    monkeypatch.setenv("CLUSTER_NAME", "demo")
    monkeypatch.setenv(name, value)
    assert _run(capsys) == (2, "", f"joiner controller: {message}\n")


def test_unreadable_kubeconfig_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLUSTER_NAME", "demo")
    code, out, err = _run(capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"joiner controller: cannot read kubeconfig {tmp_path}/no-kubeconfig")
    assert err.count("\n") == 1


def test_missing_region_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(VALID_KUBECONFIG)
    monkeypatch.setenv("CLUSTER_NAME", "demo")
    assert _run(capsys, "--kubeconfig", str(kubeconfig)) == (
        2,
        "",
        "joiner controller: AWS_REGION is not set and the AWS SDK found no region\n",
    )


def test_help_documents_every_setting(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["controller", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for setting in SETTINGS:
        line = next(line for line in help_text.splitlines() if line.strip().startswith(setting.env))
        assert setting.description.split()[0] in line
        expected = "(required)" if setting.required else f"[default: {setting.default or 'empty'}]"
        assert line.endswith(expected)
    assert "docs/operations.md" in help_text


def test_controller_is_listed_by_joiner_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "controller" in capsys.readouterr().out


def _settings(**env: str) -> Settings:
    return Settings.from_env({"CLUSTER_NAME": "demo", **env})


def test_lease_namespace_comes_from_the_setting_then_the_pod(tmp_path: Path) -> None:
    (tmp_path / "namespace").write_text("karpenter\n")
    env = {"HOSTNAME": "joiner-abc"}
    explicit = leader_election(_settings(LEADER_ELECTION_NAMESPACE="ops"), env, tmp_path)
    assert explicit is not None and explicit.namespace == "ops"
    from_pod = leader_election(_settings(), env, tmp_path)
    assert from_pod is not None
    assert (from_pod.namespace, from_pod.name) == ("karpenter", "karpenter-leader-election")
    assert from_pod.identity.startswith("joiner-abc_")
    from_env = leader_election(_settings(), {"SYSTEM_NAMESPACE": "sys"}, tmp_path)
    assert from_env is not None and from_env.namespace == "sys"
    outside = leader_election(_settings(), {}, tmp_path / "missing")
    assert outside is not None and outside.namespace == "kube-system"


def test_two_replicas_get_distinct_identities(tmp_path: Path) -> None:
    env = {"HOSTNAME": "same-host"}
    first = leader_election(_settings(), env, tmp_path)
    second = leader_election(_settings(), env, tmp_path)
    assert first is not None and second is not None
    assert first.identity != second.identity


def test_disabled_leader_election(tmp_path: Path) -> None:
    assert leader_election(_settings(DISABLE_LEADER_ELECTION="true"), {}, tmp_path) is None


def test_the_client_is_paced_by_kube_client_qps_and_burst() -> None:
    config = ClusterConfig(server="https://127.0.0.1:1")
    paced = controller_client(config, _settings(KUBE_CLIENT_QPS="12.5", KUBE_CLIENT_BURST="40"))
    default = controller_client(config, _settings())
    try:
        assert (paced.limiter.qps, paced.limiter.burst) == (12.5, 40)
        assert (default.limiter.qps, default.limiter.burst) == (200.0, 300)  # Karpenter's
    finally:
        paced.close()
        default.close()
