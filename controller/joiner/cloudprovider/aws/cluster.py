"""What nodes need to know about the cluster they join."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

DEFAULT_SERVICE_CIDR = "10.100.0.0/16"


@dataclass(frozen=True)
class ClusterInfo:
    name: str
    endpoint: str
    certificate_authority: str  # base64 PEM bundle, as EKS DescribeCluster returns it
    kubernetes_version: str | None = None  # "1.31": picks the AMIs behind an alias
    service_cidr: str = DEFAULT_SERVICE_CIDR

    @property
    def cluster_dns(self) -> str:
        """The kube-dns service address: the tenth address of the service range."""
        network = ipaddress.ip_network(self.service_cidr, strict=False)
        return str(network.network_address + 10)

    @classmethod
    def from_eks(cls, eks: Any, name: str) -> ClusterInfo:
        """Read endpoint, CA, version and service range with eks:DescribeCluster."""
        cluster = eks.describe_cluster(name=name)["cluster"]
        network = cluster.get("kubernetesNetworkConfig") or {}
        return cls(
            name=name,
            endpoint=cluster["endpoint"],
            certificate_authority=cluster["certificateAuthority"]["data"],
            kubernetes_version=cluster.get("version"),
            service_cidr=network.get("serviceIpv4Cidr") or DEFAULT_SERVICE_CIDR,
        )
