"""Controller settings from the environment [SPEC 2].

``SETTINGS`` is the declarative table (variable, type, default, description); the
``Settings`` dataclass, ``--help`` text and docs/settings.md follow from it.
``Settings.from_env(os.environ)`` in production; the simulator passes scenario
settings as a mapping (keys in any case).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joiner.api.duration import DurationError, parse_duration

LOG_LEVELS = ("debug", "info", "warn", "error")


class SettingsError(ValueError):
    """A setting is missing or malformed; the message starts with the variable's name."""


@dataclass(frozen=True)
class Setting:
    env: str
    type: str  # a key of _PARSERS
    default: str  # as written in the environment; "" means unset
    description: str
    required: bool = False

    @property
    def field(self) -> str:
        return self.env.lower()


@dataclass(frozen=True)
class FeatureGates:
    spot_to_spot_consolidation: bool = False
    node_repair: bool = False
    static_capacity: bool = False
    node_overlay: bool = False
    pod_deletion_cost_management: bool = False


# Gate name as written in FEATURE_GATES -> FeatureGates field.
FEATURE_GATE_FIELDS = {
    "SpotToSpotConsolidation": "spot_to_spot_consolidation",
    "NodeRepair": "node_repair",
    "StaticCapacity": "static_capacity",
    "NodeOverlay": "node_overlay",
    "PodDeletionCostManagement": "pod_deletion_cost_management",
}

SETTINGS: tuple[Setting, ...] = (
    Setting("CLUSTER_NAME", "string", "", "Name of the EKS cluster the nodes join.", True),
    Setting(
        "CLUSTER_ENDPOINT",
        "string",
        "",
        "API server URL nodes bootstrap against; looked up with eks:DescribeCluster when empty.",
    ),
    Setting("AWS_REGION", "string", "", "AWS region; from the AWS SDK's usual sources when empty."),
    Setting(
        "INTERRUPTION_QUEUE",
        "string",
        "",
        "SQS queue with spot interruption, rebalance and health events; empty disables "
        "interruption handling.",
    ),
    Setting(
        "INTERRUPTION_REPLACE_ON_REBALANCE",
        "bool",
        "false",
        "Drain and replace a spot node on its rebalance recommendation instead of only "
        "recording an event.",
    ),
    Setting(
        "BATCH_IDLE_DURATION",
        "duration",
        "1s",
        "A provisioning batch closes when no new pending pod arrives for this long.",
    ),
    Setting(
        "BATCH_MAX_DURATION",
        "duration",
        "10s",
        "A provisioning batch closes after this long however busy it is.",
    ),
    Setting(
        "VM_MEMORY_OVERHEAD_PERCENT",
        "fraction",
        "0.075",
        "Share of an instance type's memory the hypervisor keeps (0.075 = 7.5%).",
    ),
    Setting("RESERVED_ENIS", "count", "0", "ENIs kept free of pods when computing max pods."),
    Setting(
        "ISOLATED_VPC",
        "bool",
        "false",
        "The VPC has no internet access: do not call the pricing API, use the built-in prices.",
    ),
    Setting(
        "FEATURE_GATES",
        "feature_gates",
        "SpotToSpotConsolidation=false,NodeRepair=false,StaticCapacity=false,NodeOverlay=false,"
        "PodDeletionCostManagement=false",
        "Optional features as Name=true|false pairs separated by commas.",
    ),
    Setting(
        "KUBE_CLIENT_QPS",
        "rate",
        "200",
        "Requests per second the controller sends the API server, on average.",
    ),
    Setting(
        "KUBE_CLIENT_BURST",
        "burst",
        "300",
        "Requests the controller may send at once above KUBE_CLIENT_QPS.",
    ),
    Setting(
        "MIN_VALUES_POLICY",
        "min_values_policy",
        "Strict",
        "Strict: a launch that cannot keep a NodePool's minValues leaves its pods pending "
        "(upstream's BestEffort is not supported).",
    ),
    Setting("LOG_LEVEL", "log_level", "info", "One of debug, info, warn, error."),
    Setting(
        "BIND_ADDRESS",
        "ip_address",
        "0.0.0.0",
        "IP address the /metrics, /healthz and /readyz endpoints listen on (0.0.0.0: every "
        "IPv4 interface; :: every interface).",
    ),
    Setting("METRICS_PORT", "port", "8080", "Port of the Prometheus /metrics endpoint."),
    Setting("HEALTH_PROBE_PORT", "port", "8081", "Port of the /healthz and /readyz endpoints."),
    Setting(
        "DISABLE_LEADER_ELECTION",
        "bool",
        "false",
        "Run without a leader-election lease (only with a single replica).",
    ),
    Setting(
        "LEADER_ELECTION_NAME",
        "string",
        "karpenter-leader-election",
        "Name of the coordination.k8s.io Lease replicas compete for.",
    ),
    Setting(
        "LEADER_ELECTION_NAMESPACE",
        "string",
        "",
        "Namespace of the Lease; the controller's own namespace when empty.",
    ),
)


# -- parsers: (variable name, raw text) -> value, raising SettingsError ----------------------


def _parse_string(name: str, raw: str) -> str:
    return raw.strip()


def _parse_duration(name: str, raw: str) -> float:
    try:
        seconds = parse_duration(raw.strip())
    except DurationError:
        seconds = None
    if seconds is None or seconds <= 0:
        raise SettingsError(
            f"{name}: invalid duration {raw!r} (expected a positive duration like 1s, 500ms "
            "or 1m30s)"
        )
    return seconds


def _parse_fraction(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}: invalid number {raw!r} (expected e.g. 0.075)") from None
    if not math.isfinite(value) or not 0 <= value < 1:
        raise SettingsError(f"{name}: {raw!r} is out of range (expected 0 <= value < 1)")
    return value


def _parse_int(name: str, raw: str, least: int, most: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(f"{name}: invalid integer {raw!r}") from None
    if not least <= value <= most:
        raise SettingsError(f"{name}: {value} is out of range (expected {least}..{most})")
    return value


def _parse_count(name: str, raw: str) -> int:
    return _parse_int(name, raw, 0, 2**31 - 1)


def _parse_rate(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}: invalid number {raw!r} (expected e.g. 200)") from None
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{name}: {raw!r} is out of range (expected a number > 0)")
    return value


def _parse_burst(name: str, raw: str) -> int:
    return _parse_int(name, raw, 1, 2**31 - 1)


def _parse_port(name: str, raw: str) -> int:
    return _parse_int(name, raw, 1, 65535)


def _parse_ip_address(name: str, raw: str) -> str:
    try:
        return str(ipaddress.ip_address(raw.strip()))
    except ValueError:
        raise SettingsError(
            f"{name}: invalid IP address {raw!r} (expected e.g. 0.0.0.0, 127.0.0.1 or ::)"
        ) from None


_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _parse_bool(name: str, raw: str) -> bool:
    value = _BOOLEANS.get(raw.strip().lower())
    if value is None:
        raise SettingsError(f"{name}: invalid boolean {raw!r} (expected true or false)")
    return value


def _parse_log_level(name: str, raw: str) -> str:
    level = raw.strip().lower()
    if level not in LOG_LEVELS:
        raise SettingsError(f"{name}: unknown log level {raw!r} (expected {', '.join(LOG_LEVELS)})")
    return level


def _parse_min_values_policy(name: str, raw: str) -> str:
    """Only upstream's default: the scheduler keeps minValues strictly [SCHED-5]. BestEffort
    is refused at start-up rather than accepted and silently run as Strict."""
    policy = raw.strip()
    if policy == "BestEffort":
        raise SettingsError(
            f"{name}: BestEffort is not supported by Joiner; minValues is always kept strictly "
            "(remove the variable or set Strict)"
        )
    if policy != "Strict":
        raise SettingsError(f"{name}: unknown policy {raw!r} (expected Strict)")
    return policy


def _parse_feature_gates(name: str, raw: str) -> FeatureGates:
    """``A=true,B=false`` over the defaults; unknown gates are errors, not typos ignored."""
    values: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        gate, sep, text = (s.strip() for s in item.partition("="))
        if not sep:
            raise SettingsError(f"{name}: expected Name=true|false, got {item!r}")
        if gate not in FEATURE_GATE_FIELDS:
            known = ", ".join(sorted(FEATURE_GATE_FIELDS))
            raise SettingsError(f"{name}: unknown feature gate {gate!r} (known: {known})")
        values[FEATURE_GATE_FIELDS[gate]] = _parse_bool(f"{name}: {gate}", text)
    return FeatureGates(**values)


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "string": _parse_string,
    "duration": _parse_duration,
    "fraction": _parse_fraction,
    "count": _parse_count,
    "rate": _parse_rate,
    "burst": _parse_burst,
    "port": _parse_port,
    "ip_address": _parse_ip_address,
    "bool": _parse_bool,
    "log_level": _parse_log_level,
    "min_values_policy": _parse_min_values_policy,
    "feature_gates": _parse_feature_gates,
}


@dataclass(frozen=True)
class Settings:
    """The controller's settings; durations are in seconds."""

    cluster_name: str
    cluster_endpoint: str
    aws_region: str
    interruption_queue: str
    interruption_replace_on_rebalance: bool
    batch_idle_duration: float
    batch_max_duration: float
    vm_memory_overhead_percent: float
    reserved_enis: int
    isolated_vpc: bool
    feature_gates: FeatureGates
    kube_client_qps: float
    kube_client_burst: int
    min_values_policy: str
    log_level: str
    bind_address: str
    metrics_port: int
    health_probe_port: int
    disable_leader_election: bool
    leader_election_name: str
    leader_election_namespace: str

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str],
        require_cluster_name: bool = True,
        strict: bool = False,
    ) -> Settings:
        """Settings from environment variables (names in any case). Empty values count as
        unset. ``strict`` rejects names that are not settings (for scenario files, where a
        typo should not pass silently)."""
        given = {key.upper(): str(value) for key, value in env.items()}
        if strict:
            _reject_unknown(given)
        values = {s.field: _value(s, given.get(s.env, ""), require_cluster_name) for s in SETTINGS}
        settings = cls(**values)
        settings._check_batch_window()
        return settings

    def _check_batch_window(self) -> None:
        if self.batch_idle_duration > self.batch_max_duration:
            raise SettingsError(
                f"BATCH_IDLE_DURATION ({self.batch_idle_duration:g}s) must not exceed "
                f"BATCH_MAX_DURATION ({self.batch_max_duration:g}s)"
            )


def _value(setting: Setting, raw: str, require_cluster_name: bool) -> Any:
    if not raw.strip():
        if setting.required and require_cluster_name:
            raise SettingsError(f"{setting.env} is required")
        raw = setting.default
    return _PARSERS[setting.type](setting.env, raw)


def _reject_unknown(given: Mapping[str, str]) -> None:
    known = {s.env for s in SETTINGS}
    unknown = sorted(set(given) - known)
    if unknown:
        raise SettingsError(f"{unknown[0]}: unknown setting (known: {', '.join(sorted(known))})")


def settings_help() -> str:
    """One line per setting, for ``joiner controller --help``."""
    width = max(len(s.env) for s in SETTINGS)
    lines = []
    for setting in SETTINGS:
        default = "(required)" if setting.required else f"[default: {setting.default or 'empty'}]"
        lines.append(f"  {setting.env:<{width}}  {setting.description} {default}")
    return "\n".join(lines)
