"""EKS control planes: who can reach the API server, how secrets are stored."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs

from joiner_policies._cidrs import (
    Network,
    block_size,
    is_public,
    public_addresses,
    uncovered,
)
from joiner_policies._declare import resource_policy, string_list_option
from joiner_policies._values import config_value, is_set, is_true, items, mapping, strings

AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
PULUMI_EKS_CLUSTER = "eks:index:Cluster"
# EKS defaults: the public endpoint is on and open to everyone.
DEFAULT_PUBLIC_ACCESS_CIDRS = ["0.0.0.0/0"]
# The most of the internet the endpoint may be open to without allowedPublicAccessCidrs,
# as the prefix of one block of that size: 65,536 IPv4 addresses, 65,536 IPv6 /64 LANs.
MOST_OPEN_PREFIX = {4: 16, 6: 48}
TOO_MUCH_OF_THE_INTERNET = "more of the internet than a /16 (IPv4) or a /48 (IPv6)"


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


def _too_open(cidrs: list[Network]) -> list[Network]:
    """The public blocks of each IP version whose blocks together cover more public
    addresses than its limit (judged by coverage: two /1 blocks are a /0)."""
    offending = []
    for version, prefix in MOST_OPEN_PREFIX.items():
        if public_addresses(cidrs, version) > block_size(version, prefix):
            offending += [cidr for cidr in cidrs if cidr.version == version and is_public(cidr)]
    return offending


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
    if configured is None:
        open_to, why = _too_open(cidrs), TOO_MUCH_OF_THE_INTERNET
    else:
        open_to, why = uncovered(cidrs, allowed), "outside allowedPublicAccessCidrs"
    if open_to:
        blocks = ", ".join(str(cidr) for cidr in open_to)
        unset = "" if declared else f" ({where}publicAccessCidrs not set)"
        report(
            f"the public API server endpoint is reachable from {blocks}{unset}, {why}: set "
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
    "An EKS cluster's public API endpoint is not open to more of the internet than a /16 "
    "(IPv4) or a /48 (IPv6), counting the public addresses its ranges cover together (or, "
    "when allowedPublicAccessCidrs is configured, only reachable from those ranges).",
    _public_endpoint,
    options={
        "allowedPublicAccessCidrs": string_list_option(
            "Ranges the public endpoint may be open to; every address of publicAccessCidrs "
            "must lie inside them. Unset: at most a /16 (IPv4) or /48 (IPv6) of public "
            "addresses."
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
