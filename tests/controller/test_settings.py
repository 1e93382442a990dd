"""Controller settings from the environment [SPEC 2]."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from joiner.settings import SETTINGS, FeatureGates, Settings, SettingsError, settings_help


def test_defaults() -> None:
    settings = Settings.from_env({"CLUSTER_NAME": "prod"})
    assert settings == Settings(
        cluster_name="prod",
        cluster_endpoint="",
        aws_region="",
        interruption_queue="",
        interruption_replace_on_rebalance=False,
        batch_idle_duration=1.0,
        batch_max_duration=10.0,
        vm_memory_overhead_percent=0.075,
        reserved_enis=0,
        isolated_vpc=False,
        feature_gates=FeatureGates(spot_to_spot_consolidation=False, node_repair=False),
        kube_client_qps=200.0,
        kube_client_burst=300,
        min_values_policy="Strict",
        log_level="info",
        bind_address="0.0.0.0",
        metrics_port=8080,
        health_probe_port=8081,
        disable_leader_election=False,
        leader_election_name="karpenter-leader-election",
        leader_election_namespace="",
    )


def test_every_value_parsed() -> None:
    settings = Settings.from_env(
        {
            "CLUSTER_NAME": "prod",
            "CLUSTER_ENDPOINT": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
            "AWS_REGION": "us-east-1",
            "INTERRUPTION_QUEUE": "prod-interruptions",
            "BATCH_IDLE_DURATION": "500ms",
            "BATCH_MAX_DURATION": "1m30s",
            "VM_MEMORY_OVERHEAD_PERCENT": "0.1",
            "RESERVED_ENIS": "1",
            "ISOLATED_VPC": "TRUE",
            "FEATURE_GATES": "SpotToSpotConsolidation=true, NodeRepair=false",
            "KUBE_CLIENT_QPS": "12.5",
            "KUBE_CLIENT_BURST": "40",
            "LOG_LEVEL": "DEBUG",
            "BIND_ADDRESS": " 127.0.0.1 ",
            "METRICS_PORT": "9000",
            "HEALTH_PROBE_PORT": "9001",
            "DISABLE_LEADER_ELECTION": "true",
            "LEADER_ELECTION_NAME": "joiner",
            "LEADER_ELECTION_NAMESPACE": "kube-system",
        }
    )
    assert (settings.batch_idle_duration, settings.batch_max_duration) == (0.5, 90.0)
    assert settings.feature_gates == FeatureGates(spot_to_spot_consolidation=True)
    assert (settings.isolated_vpc, settings.log_level, settings.reserved_enis) == (
        True,
        "debug",
        1,
    )
    assert (settings.metrics_port, settings.health_probe_port) == (9000, 9001)
    assert settings.bind_address == "127.0.0.1"
    assert settings.cluster_endpoint == "https://ABC.gr7.us-east-1.eks.amazonaws.com"
    assert settings.disable_leader_election is True
    assert (settings.kube_client_qps, settings.kube_client_burst) == (12.5, 40)


def test_keys_are_matched_in_any_case_and_empty_means_default() -> None:
    settings = Settings.from_env(
        {"cluster_name": "sim", "Batch_Idle_Duration": "2s", "LOG_LEVEL": ""}
    )
    assert (settings.cluster_name, settings.batch_idle_duration, settings.log_level) == (
        "sim",
        2.0,
        "info",
    )


def test_cluster_name_is_required_unless_waived() -> None:
    with pytest.raises(SettingsError, match=r"^CLUSTER_NAME is required$"):
        Settings.from_env({})
    with pytest.raises(SettingsError, match=r"^CLUSTER_NAME is required$"):
        Settings.from_env({"CLUSTER_NAME": "  "})
    assert Settings.from_env({}, require_cluster_name=False).cluster_name == ""


@pytest.mark.parametrize(
    "name, value, message",
    [
        (
            "BATCH_IDLE_DURATION",
            "x",
            "BATCH_IDLE_DURATION: invalid duration 'x' (expected a positive duration like 1s, "
            "500ms or 1m30s)",
        ),
        (
            "BATCH_MAX_DURATION",
            "Never",
            "BATCH_MAX_DURATION: invalid duration 'Never' (expected a positive duration like 1s, "
            "500ms or 1m30s)",
        ),
        (
            "BATCH_MAX_DURATION",
            "0s",
            "BATCH_MAX_DURATION: invalid duration '0s' (expected a positive duration like 1s, "
            "500ms or 1m30s)",
        ),
        (
            "VM_MEMORY_OVERHEAD_PERCENT",
            "7.5%",
            "VM_MEMORY_OVERHEAD_PERCENT: invalid number '7.5%' (expected e.g. 0.075)",
        ),
        (
            "VM_MEMORY_OVERHEAD_PERCENT",
            "1.5",
            "VM_MEMORY_OVERHEAD_PERCENT: '1.5' is out of range (expected 0 <= value < 1)",
        ),
        (
            "VM_MEMORY_OVERHEAD_PERCENT",
            "nan",
            "VM_MEMORY_OVERHEAD_PERCENT: 'nan' is out of range (expected 0 <= value < 1)",
        ),
        ("RESERVED_ENIS", "-1", "RESERVED_ENIS: -1 is out of range (expected 0..2147483647)"),
        ("RESERVED_ENIS", "two", "RESERVED_ENIS: invalid integer 'two'"),
        ("METRICS_PORT", "70000", "METRICS_PORT: 70000 is out of range (expected 1..65535)"),
        ("KUBE_CLIENT_QPS", "fast", "KUBE_CLIENT_QPS: invalid number 'fast' (expected e.g. 200)"),
        ("KUBE_CLIENT_QPS", "0", "KUBE_CLIENT_QPS: '0' is out of range (expected a number > 0)"),
        (
            "KUBE_CLIENT_QPS",
            "inf",
            "KUBE_CLIENT_QPS: 'inf' is out of range (expected a number > 0)",
        ),
        (
            "KUBE_CLIENT_BURST",
            "0",
            "KUBE_CLIENT_BURST: 0 is out of range (expected 1..2147483647)",
        ),
        (
            "BIND_ADDRESS",
            "localhost",
            "BIND_ADDRESS: invalid IP address 'localhost' (expected e.g. 0.0.0.0, 127.0.0.1 or ::)",
        ),
        (
            "BIND_ADDRESS",
            "127.0.0.1:8080",
            "BIND_ADDRESS: invalid IP address '127.0.0.1:8080' (expected e.g. 0.0.0.0, 127.0.0.1 "
            "or ::)",
        ),
        ("HEALTH_PROBE_PORT", "0", "HEALTH_PROBE_PORT: 0 is out of range (expected 1..65535)"),
        ("ISOLATED_VPC", "maybe", "ISOLATED_VPC: invalid boolean 'maybe' (expected true or false)"),
        (
            "LOG_LEVEL",
            "verbose",
            "LOG_LEVEL: unknown log level 'verbose' (expected debug, info, warn, error)",
        ),
        (
            "FEATURE_GATES",
            "Drift=true",
            "FEATURE_GATES: unknown feature gate 'Drift' (known: NodeOverlay, NodeRepair, "
            "PodDeletionCostManagement, SpotToSpotConsolidation, StaticCapacity)",
        ),
        (
            "FEATURE_GATES",
            "NodeRepair",
            "FEATURE_GATES: expected Name=true|false, got 'NodeRepair'",
        ),
        (
            "FEATURE_GATES",
            "NodeRepair=on",
            "FEATURE_GATES: NodeRepair: invalid boolean 'on' (expected true or false)",
        ),
    ],
)
def test_errors_name_the_variable_and_the_problem(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"CLUSTER_NAME": "c", name: value})
    assert str(error.value) == message


def test_batch_idle_may_not_exceed_batch_max() -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"CLUSTER_NAME": "c", "BATCH_IDLE_DURATION": "20s"})
    assert str(error.value) == "BATCH_IDLE_DURATION (20s) must not exceed BATCH_MAX_DURATION (10s)"


def test_strict_rejects_unknown_names_and_default_ignores_them() -> None:
    assert Settings.from_env({"CLUSTER_NAME": "c", "HOME": "/root"}).cluster_name == "c"
    with pytest.raises(SettingsError, match=r"^BATCH_IDEL_DURATION: unknown setting \(known: "):
        Settings.from_env({"CLUSTER_NAME": "c", "batch_idel_duration": "1s"}, strict=True)


@pytest.mark.parametrize(
    "written, address", [("::", "::"), ("0:0:0:0:0:0:0:1", "::1"), ("10.1.2.3", "10.1.2.3")]
)
def test_bind_address_takes_ipv4_and_ipv6_in_canonical_form(written: str, address: str) -> None:
    assert Settings.from_env({"CLUSTER_NAME": "c", "BIND_ADDRESS": written}).bind_address == (
        address
    )


def test_feature_gates_merge_over_defaults() -> None:
    gates = Settings.from_env({"CLUSTER_NAME": "c", "FEATURE_GATES": "NodeRepair=true"})
    assert gates.feature_gates == FeatureGates(spot_to_spot_consolidation=False, node_repair=True)


def test_node_overlay_and_pod_deletion_cost_gates_are_upstreams_and_off_by_default() -> None:
    assert Settings.from_env({"CLUSTER_NAME": "c"}).feature_gates == FeatureGates()
    gates = Settings.from_env(
        {"CLUSTER_NAME": "c", "FEATURE_GATES": "NodeOverlay=true,PodDeletionCostManagement=true"}
    ).feature_gates
    assert gates == FeatureGates(node_overlay=True, pod_deletion_cost_management=True)


def test_min_values_policy_is_strict_by_default_and_only_strict() -> None:
    assert Settings.from_env({"CLUSTER_NAME": "c"}).min_values_policy == "Strict"
    given = Settings.from_env({"CLUSTER_NAME": "c", "MIN_VALUES_POLICY": "Strict"}, strict=True)
    assert given.min_values_policy == "Strict"
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"CLUSTER_NAME": "c", "MIN_VALUES_POLICY": "strict"})
    assert str(error.value) == "MIN_VALUES_POLICY: unknown policy 'strict' (expected Strict)"


def test_settings_are_frozen() -> None:
    settings = Settings.from_env({"CLUSTER_NAME": "c"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.cluster_name = "other"  # type: ignore[misc]


def test_table_and_dataclass_name_the_same_settings() -> None:
    assert [s.field for s in SETTINGS] == [f.name for f in dataclasses.fields(Settings)]


def test_table_defaults_parse() -> None:
    # every documented default is itself a valid value
    defaults = {s.env: s.default for s in SETTINGS if s.default}
    assert Settings.from_env({**defaults, "CLUSTER_NAME": "c"}) == Settings.from_env(
        {"CLUSTER_NAME": "c"}
    )


def test_help_lists_every_setting_with_its_default() -> None:
    lines = settings_help().splitlines()
    assert len(lines) == len(SETTINGS)
    assert lines[0].split()[0] == "CLUSTER_NAME" and lines[0].endswith("(required)")
    assert any(
        line.split()[0] == "BATCH_MAX_DURATION" and line.endswith("[default: 10s]")
        for line in lines
    )


def test_docs_list_every_setting_with_its_default() -> None:
    page = (Path(__file__).parents[2] / "docs" / "settings.md").read_text()
    rows = {
        line.split("|")[1].strip(" `"): line for line in page.splitlines() if line.startswith("| `")
    }
    assert list(rows) == [s.env for s in SETTINGS]
    for setting in SETTINGS:
        default = (
            "required"
            if setting.required
            else f"`{setting.default}`"
            if setting.default
            else "empty"
        )
        assert rows[setting.env].split("|")[2].strip() == default
