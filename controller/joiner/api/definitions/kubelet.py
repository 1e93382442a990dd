"""The kubelet settings Joiner reads from an EC2NodeClass. Upstream's CRD keeps ``kubelet``
free-form (the API server accepts any object), so this schema is only Joiner's: what does
not fit it is ignored and warned about (``joiner.api.compatibility``)."""

from __future__ import annotations

from typing import Any

from joiner.api.schema import (
    QUANTITY_HINT,
    QUANTITY_PATTERN,
    Advice,
    Schema,
    array,
    boolean,
    integer,
    map_of,
    obj,
    string,
)

KUBELET = "kubelet"
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_THRESHOLD = (
    r"^(([0-9]{1,2}(\.[0-9]{1,2})?|100(\.0{1,2})?)%|"
    + QUANTITY_PATTERN.removeprefix("^").removesuffix("$")
    + ")$"
)


def _kubelet_advice(message: str, holds: Any, field_path: str) -> Advice:
    return Advice(KUBELET, message, holds, field_path=field_path)


def _signal_map(description: str, values: Schema, name: str) -> Schema:
    return map_of(
        values,
        description,
        advice=(
            Advice(
                KUBELET,
                f"valid keys for {name} are {list(EVICTION_SIGNALS)}",
                lambda m: all(k in EVICTION_SIGNALS for k in m),
            ),
        ),
    )


def _reserved_map(name: str) -> Schema:
    return map_of(
        string(pattern=QUANTITY_PATTERN, hint=QUANTITY_HINT),
        f"Resources reserved for {name.removesuffix('Reserved')} daemons.",
        advice=(
            Advice(
                KUBELET,
                f"valid keys for {name} are {list(RESERVED_RESOURCES)}",
                lambda m: all(k in RESERVED_RESOURCES for k in m),
            ),
            Advice(
                KUBELET,
                f"{name} values cannot be negative quantities",
                lambda m: not any(str(v).startswith("-") for v in m.values()),
            ),
        ),
    )


def _kubelet_rules() -> tuple[Advice, ...]:
    def keys(spec: dict[str, Any], name: str) -> set[str]:
        return set(spec.get(name) or {})

    return (
        _kubelet_advice(
            "every evictionSoft signal needs a matching evictionSoftGracePeriod",
            lambda k: keys(k, "evictionSoft") <= keys(k, "evictionSoftGracePeriod"),
            ".evictionSoft",
        ),
        _kubelet_advice(
            "every evictionSoftGracePeriod signal needs a matching evictionSoft",
            lambda k: keys(k, "evictionSoftGracePeriod") <= keys(k, "evictionSoft"),
            ".evictionSoftGracePeriod",
        ),
        _kubelet_advice(
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            lambda k: (
                "imageGCHighThresholdPercent" not in k
                or "imageGCLowThresholdPercent" not in k
                or k["imageGCHighThresholdPercent"] > k["imageGCLowThresholdPercent"]
            ),
            ".imageGCHighThresholdPercent",
        ),
    )


def kubelet() -> Schema:
    """The kubelet settings Joiner reads (upstream's CRD keeps ``kubelet`` free-form)."""
    threshold = string(pattern=EVICTION_THRESHOLD, hint="expected a percentage or a quantity")
    grace = string(pattern=r"^([0-9]+(\.[0-9]+)?(s|m|h))+$", hint="expected a duration like 1m30s")
    return obj(
        "Kubelet configuration of the nodes.",
        {
            "clusterDNS": array(string(), "DNS server addresses for pods."),
            "maxPods": integer("Most pods a node may run.", minimum=0),
            "podsPerCore": integer("Most pods per CPU core.", minimum=0),
            "systemReserved": _reserved_map("systemReserved"),
            "kubeReserved": _reserved_map("kubeReserved"),
            "evictionHard": _signal_map("Hard eviction thresholds.", threshold, "evictionHard"),
            "evictionSoft": _signal_map("Soft eviction thresholds.", threshold, "evictionSoft"),
            "evictionSoftGracePeriod": _signal_map(
                "How long a soft threshold must hold before eviction.",
                grace,
                "evictionSoftGracePeriod",
            ),
            "evictionMaxPodGracePeriod": integer(
                "Longest pod grace period (seconds) for soft evictions."
            ),
            "imageGCHighThresholdPercent": integer(minimum=0, maximum=100),
            "imageGCLowThresholdPercent": integer(minimum=0, maximum=100),
            "cpuCFSQuota": boolean("Enforce CPU limits with CFS quota."),
        },
        advice=_kubelet_rules(),
    )
