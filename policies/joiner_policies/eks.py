"""EKS control planes: who can reach the API server, how secrets are stored."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs

from joiner_policies._declare import resource_policy, string_list_option
from joiner_policies._values import config_value, is_set, is_true, items, mapping, strings

AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
PULUMI_EKS_CLUSTER = "eks:index:Cluster"
# EKS defaults: the public endpoint is on and open to everyone.
DEFAULT_PUBLIC_ACCESS_CIDRS = ["0.0.0.0/0"]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _endpoint_settings(args: ResourceValidationArgs) -> tuple[str, Any, Any] | None:
    """(where, endpointPublicAccess, publicAccessCidrs) of a cluster resource."""
    if args.resource_type == AWS_EKS_CLUSTER:
        vpc = mapping(args.props.get("vpcConfig"))
        return "vpcConfig.", vpc.get("endpointPublicAccess"), vpc.get("publicAccessCidrs")
    if args.resource_type == PULUMI_EKS_CLUSTER:
        props = args.props
        return "", props.get("endpointPublicAccess"), props.get("publicAccessCidrs")
    return None


def _networks(values: list[str], where: str) -> tuple[list[Network], list[str]]:
    """Parsed CIDRs and an error message for each value that is not one."""
    networks, errors = [], []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            errors.append(f"{where}: {value!r} is not a CIDR block")
    return networks, errors


def _too_open(cidrs: list[Network], allowed: list[Network] | None) -> list[Network]:
    """CIDRs outside the allowed ranges; without configured ranges, the world-open ones."""
    if allowed is None:
        return [cidr for cidr in cidrs if cidr.prefixlen == 0]
    return [
        cidr
        for cidr in cidrs
        if not any(cidr.version == ok.version and cidr.subnet_of(ok) for ok in allowed)
    ]


def _public_endpoint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    settings = _endpoint_settings(args)
    if settings is None:
        return
    where, public, declared = settings
    if public is not None and not is_true(public):
        return
    configured = config_value(args.get_config(), "allowedPublicAccessCidrs", None)
    allowed, config_errors = _networks(strings(configured), "config allowedPublicAccessCidrs")
    cidrs, cidr_errors = _networks(
        strings(declared) or DEFAULT_PUBLIC_ACCESS_CIDRS, f"{where}publicAccessCidrs"
    )
    for error in config_errors + cidr_errors:
        report(error, None)
    open_to = _too_open(cidrs, None if configured is None else allowed)
    if open_to:
        blocks = ", ".join(str(cidr) for cidr in open_to)
        report(
            f"the public API server endpoint is reachable from {blocks}"
            f"{'' if declared else f' ({where}publicAccessCidrs not set)'}: set "
            f"{where}publicAccessCidrs to your own ranges, turn {where}endpointPublicAccess "
            "off, or list the ranges in allowedPublicAccessCidrs",
            None,
        )


def _secrets_encrypted(args: ResourceValidationArgs) -> bool | None:
    if args.resource_type == AWS_EKS_CLUSTER:
        # pulumi-aws 6+ takes one object; older versions a list of them.
        raw = args.props.get("encryptionConfig")
        configs = [raw] if isinstance(raw, Mapping) else items(raw)
        return any(
            "secrets" in strings(mapping(config).get("resources"))
            and is_set(mapping(config).get("provider"), "keyArn")
            for config in configs
        )
    if args.resource_type == PULUMI_EKS_CLUSTER:
        return is_set(args.props, "encryptionConfigKeyArn")
    return None


def _secrets_encryption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if _secrets_encrypted(args) is False:
        report(
            "Kubernetes secrets are not envelope-encrypted with a KMS key you control: set "
            "encryptionConfig (resources: [secrets], provider.keyArn) or encryptionConfigKeyArn",
            None,
        )


eks_public_endpoint_restricted = resource_policy(
    "eks-public-endpoint-restricted",
    "An EKS cluster's public API endpoint is not open to 0.0.0.0/0 (or, when "
    "allowedPublicAccessCidrs is configured, only reachable from those ranges).",
    _public_endpoint,
    options={
        "allowedPublicAccessCidrs": string_list_option(
            "Ranges the public endpoint may be open to; every publicAccessCidrs entry must "
            "lie inside one. Unset: anything but /0."
        )
    },
)

eks_secrets_encryption = resource_policy(
    "eks-secrets-encryption",
    "EKS clusters envelope-encrypt Kubernetes secrets with a KMS key.",
    _secrets_encryption,
    level=EnforcementLevel.ADVISORY,
)

POLICIES = [eks_public_endpoint_restricted, eks_secrets_encryption]
