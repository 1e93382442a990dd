"""User data that makes an instance join the cluster [SPEC 4.7].

- AL2023: a nodeadm ``NodeConfig`` in a MIME multipart document; the class's userData
  (a shell script, a NodeConfig, or MIME parts) follows it, so nodeadm merges the class's
  NodeConfig over ours.
- Bottlerocket: TOML settings; the class's TOML is the base and the cluster settings,
  labels and taints are written over it.
- AL2: MIME multipart; the class's parts run first, then ``/etc/eks/bootstrap.sh``.
- Custom: the class's userData unchanged.
Every family carries cluster name, endpoint, CA, cluster DNS, max pods, labels, taints
(including ``karpenter.sh/unregistered`` until the node registers) and kubelet settings.
"""

from __future__ import annotations

import email
import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from joiner.api import labels as wk
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.scheduling.taints import same_taint

BOUNDARY = "//JOINER//"
NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="us-ascii"'
# NodeClass kubelet fields copied into the kubelet configuration (same names).
KUBELET_CONFIG_FIELDS = (
    "podsPerCore",
    "kubeReserved",
    "systemReserved",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMaxPodGracePeriod",
    "imageGCHighThresholdPercent",
    "imageGCLowThresholdPercent",
    "cpuCFSQuota",
)


class UserDataError(ValueError):
    """The class's userData cannot be merged (e.g. invalid Bottlerocket TOML)."""


@dataclass(frozen=True)
class NodeBootstrap:
    """Everything a node needs besides its AMI."""

    cluster: ClusterInfo
    max_pods: int
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    kubelet: Mapping[str, Any] = field(default_factory=dict)
    custom: str | None = None  # the class's spec.userData

    @property
    def cluster_dns(self) -> list[str]:
        return list(self.kubelet.get("clusterDNS") or [self.cluster.cluster_dns])

    def all_taints(self) -> list[dict[str, str]]:
        """The taints to register with, one per key/effect pair (the first listed): the
        API server refuses a Node that repeats a pair, which a NodePool may."""
        taints: list[dict[str, str]] = []
        for taint in self.taints:
            if not any(same_taint(taint, kept) for kept in taints):
                taints.append(dict(taint))
        if not any(t.get("key") == wk.UNREGISTERED_TAINT_KEY for t in taints):
            taints.append(dict(wk.UNREGISTERED_TAINT))
        return taints

    def kubelet_config(self) -> dict[str, Any]:
        config = {k: self.kubelet[k] for k in KUBELET_CONFIG_FIELDS if k in self.kubelet}
        config["maxPods"] = self.max_pods
        config["clusterDNS"] = self.cluster_dns
        return config


def render(ami_family: str, bootstrap: NodeBootstrap) -> str:
    """The user data for a family, as text (launch templates take it base64-encoded)."""
    if ami_family == "AL2023":
        return al2023(bootstrap)
    if ami_family == "Bottlerocket":
        return bottlerocket(bootstrap)
    if ami_family == "AL2":
        return al2(bootstrap)
    return bootstrap.custom or ""


# --- MIME ------------------------------------------------------------------------------


def _mime(parts: Sequence[tuple[str, str]]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    lines.append(f"--{BOUNDARY}--")
    return "\n".join(lines) + "\n"


def custom_parts(custom: str | None) -> list[tuple[str, str]]:
    """The class's userData as MIME parts: its own parts when it is MIME, else one part
    typed by content (a NodeConfig, or a shell script)."""
    if not custom or not custom.strip():
        return []
    if custom.lstrip().startswith("MIME-Version"):
        message = email.message_from_string(custom)
        return [
            (part.get("Content-Type", "text/plain"), part.get_payload())
            for part in message.walk()
            if not part.is_multipart()
        ]
    if "kind: NodeConfig" in custom:
        return [(NODECONFIG_CONTENT_TYPE, custom)]
    return [(SHELL_CONTENT_TYPE, custom)]


# --- AL2023 ------------------------------------------------------------------------------


def node_config(bootstrap: NodeBootstrap) -> dict[str, Any]:
    kubelet: dict[str, Any] = {"config": bootstrap.kubelet_config()}
    kubelet["config"]["registerWithTaints"] = bootstrap.all_taints()
    if bootstrap.labels:
        labels = ",".join(f"{k}={v}" for k, v in sorted(bootstrap.labels.items()))
        kubelet["flags"] = [f"--node-labels={labels}"]
    return {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": bootstrap.cluster.name,
                "apiServerEndpoint": bootstrap.cluster.endpoint,
                "certificateAuthority": bootstrap.cluster.certificate_authority,
                "cidr": bootstrap.cluster.service_cidr,
            },
            "kubelet": kubelet,
        },
    }


def al2023(bootstrap: NodeBootstrap) -> str:
    ours = yaml.safe_dump(node_config(bootstrap), sort_keys=False)
    return _mime([(NODECONFIG_CONTENT_TYPE, ours), *custom_parts(bootstrap.custom)])


# --- Bottlerocket ------------------------------------------------------------------------


def bottlerocket_settings(bootstrap: NodeBootstrap) -> dict[str, Any]:
    """The class's TOML with the cluster, node and kubelet settings written over it."""
    try:
        base = tomllib.loads(bootstrap.custom or "")
    except tomllib.TOMLDecodeError as error:
        raise UserDataError(f"spec.userData: invalid Bottlerocket TOML: {error}") from error
    kubernetes = base.setdefault("settings", {}).setdefault("kubernetes", {})
    kubernetes.update(
        {
            "cluster-name": bootstrap.cluster.name,
            "api-server": bootstrap.cluster.endpoint,
            "cluster-certificate": bootstrap.cluster.certificate_authority,
            "cluster-dns-ip": bootstrap.cluster_dns[0],
            "max-pods": bootstrap.max_pods,
        }
    )
    kubernetes.setdefault("node-labels", {}).update(bootstrap.labels)
    taints = kubernetes.setdefault("node-taints", {})
    for taint in bootstrap.all_taints():
        taints.setdefault(taint["key"], []).append(f"{taint.get('value', '')}:{taint['effect']}")
    for ours, theirs in (
        ("kubeReserved", "kube-reserved"),
        ("systemReserved", "system-reserved"),
        ("evictionHard", "eviction-hard"),
    ):
        if bootstrap.kubelet.get(ours):
            kubernetes.setdefault(theirs, {}).update(bootstrap.kubelet[ours])
    return base


def bottlerocket(bootstrap: NodeBootstrap) -> str:
    return to_toml(bottlerocket_settings(bootstrap))


def to_toml(document: Mapping[str, Any], prefix: str = "") -> str:
    """TOML for nested tables of strings, numbers, booleans and lists of those."""
    scalars = [(k, v) for k, v in document.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in document.items() if isinstance(v, Mapping)]
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in scalars]
    out = ""
    if prefix and (scalars or not tables):
        out += f"[{prefix}]\n"
    if lines:
        out += "\n".join(lines) + "\n"
    for key, table in tables:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        rendered = to_toml(table, name)
        out += ("\n" if out else "") + rendered
    return out


def _toml_key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum()
    return key if bare else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


# --- AL2 ---------------------------------------------------------------------------------


def al2_script(bootstrap: NodeBootstrap) -> str:
    extra = [f"--max-pods={bootstrap.max_pods}"]
    if bootstrap.labels:
        extra.append(
            "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(bootstrap.labels.items()))
        )
    taints = ",".join(
        f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in bootstrap.all_taints()
    )
    extra.append(f"--register-with-taints={taints}")
    for field_name, flag in (
        ("kubeReserved", "--kube-reserved"),
        ("systemReserved", "--system-reserved"),
    ):
        if bootstrap.kubelet.get(field_name):
            pairs = ",".join(f"{k}={v}" for k, v in sorted(bootstrap.kubelet[field_name].items()))
            extra.append(f"{flag}={pairs}")
    command = [
        "/etc/eks/bootstrap.sh",
        bootstrap.cluster.name,
        "--apiserver-endpoint",
        bootstrap.cluster.endpoint,
        "--b64-cluster-ca",
        bootstrap.cluster.certificate_authority,
        "--dns-cluster-ip",
        bootstrap.cluster_dns[0],
        "--use-max-pods",
        "false",
        "--kubelet-extra-args",
        " ".join(extra),
    ]
    return "\n".join(
        [
            "#!/bin/bash -xe",
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
            " ".join(shlex.quote(part) for part in command),
        ]
    )


def al2(bootstrap: NodeBootstrap) -> str:
    return _mime([*custom_parts(bootstrap.custom), (SHELL_CONTENT_TYPE, al2_script(bootstrap))])
