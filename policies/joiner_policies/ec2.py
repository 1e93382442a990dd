"""Instances the stack launches: launch templates and Karpenter EC2NodeClasses [LAUNCH]."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joiner.api.ec2nodeclass import DEFAULT_METADATA_OPTIONS
from pulumi_policy import ReportViolation, ResourceValidationArgs

from joiner_policies._declare import allow_option, resource_policy
from joiner_policies._kubernetes import EC2NODECLASS, is_kind
from joiner_policies._values import config_value, dig, is_true, items, mapping, number

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PULUMI_EKS_CLUSTER = "eks:index:Cluster"
# EC2 defaults a launch template without metadata options to IMDSv1 (httpTokens
# optional) unless the AMI says otherwise; Karpenter defaults a node class to IMDSv2.
LAUNCH_TEMPLATE_DEFAULT_TOKENS = "optional"


def _metadata_options(args: ResourceValidationArgs) -> tuple[str, Mapping[str, Any], str] | None:
    """(where, metadata options, default httpTokens) of a launch template or node class."""
    if args.resource_type == LAUNCH_TEMPLATE:
        options = mapping(args.props.get("metadataOptions"))
        return "metadataOptions", options, LAUNCH_TEMPLATE_DEFAULT_TOKENS
    if is_kind(args.resource_type, args.props, EC2NODECLASS):
        options = mapping(dig(args.props, "spec", "metadataOptions"))
        return "spec.metadataOptions", options, DEFAULT_METADATA_OPTIONS["httpTokens"]
    return None


def _imdsv2_required(args: ResourceValidationArgs, report: ReportViolation) -> None:
    found = _metadata_options(args)
    if found is None:
        return
    where, options, default_tokens = found
    if str(options.get("httpEndpoint", "enabled")).lower() == "disabled":
        return  # no instance metadata service at all
    tokens = options.get("httpTokens") or default_tokens
    if tokens != "required":
        report(
            f"{where}.httpTokens is {tokens!r}{'' if 'httpTokens' in options else ' (default)'}: "
            "require IMDSv2 with httpTokens: required",
            None,
        )
    max_hops = number(config_value(args.get_config(), "maxHopLimit", 1)) or 1
    hops = number(options.get("httpPutResponseHopLimit"))
    if hops is not None and hops > max_hops:
        report(
            f"{where}.httpPutResponseHopLimit is {hops:g}: at most {max_hops:g} keeps pods "
            "from reaching the node's credentials through the metadata service",
            None,
        )


def _block_device_mappings(args: ResourceValidationArgs) -> tuple[str, list[Any]] | None:
    if args.resource_type == LAUNCH_TEMPLATE:
        return "blockDeviceMappings", items(args.props.get("blockDeviceMappings"))
    if is_kind(args.resource_type, args.props, EC2NODECLASS):
        return "spec.blockDeviceMappings", items(dig(args.props, "spec", "blockDeviceMappings"))
    return None


def _ebs_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    found = _block_device_mappings(args)
    if found is None:
        return
    where, mappings = found
    for index, device in enumerate(mappings):
        ebs = mapping(device).get("ebs")
        if ebs is not None and not is_true(mapping(ebs).get("encrypted")):
            device_name = mapping(device).get("deviceName")
            label = f"{where}[{index}]" + (f" ({device_name})" if device_name else "")
            report(f"{label}: the EBS volume is not encrypted; set ebs.encrypted: true", None)


def _public_ip_settings(args: ResourceValidationArgs) -> list[tuple[str, Any]]:
    """(where, value) of every setting that can give an instance a public IP."""
    if args.resource_type == LAUNCH_TEMPLATE:
        return [
            (
                f"networkInterfaces[{i}].associatePublicIpAddress",
                mapping(nic).get("associatePublicIpAddress"),
            )
            for i, nic in enumerate(items(args.props.get("networkInterfaces")))
        ]
    if args.resource_type == PULUMI_EKS_CLUSTER:
        return [("nodeAssociatePublicIpAddress", args.props.get("nodeAssociatePublicIpAddress"))]
    if is_kind(args.resource_type, args.props, EC2NODECLASS):
        return [
            ("spec.associatePublicIPAddress", dig(args.props, "spec", "associatePublicIPAddress"))
        ]
    return []


def _no_public_ip(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if is_true(config_value(args.get_config(), "allowPublicIp", False)):
        return
    for where, value in _public_ip_settings(args):
        if is_true(value):
            report(
                f"{where} is true: nodes get public IP addresses; keep them in private "
                "subnets (or set allowPublicIp in this policy's config)",
                None,
            )


ec2_imdsv2_required = resource_policy(
    "ec2-imdsv2-required",
    "Launch templates and EC2NodeClasses require IMDSv2 (httpTokens: required) with a "
    "hop limit of at most maxHopLimit (1).",
    _imdsv2_required,
    options={
        "maxHopLimit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 64,
            "default": 1,
            "description": "Highest httpPutResponseHopLimit allowed (1: pods cannot "
            "reach the node's instance metadata).",
        }
    },
)

ec2_ebs_encrypted = resource_policy(
    "ec2-ebs-encrypted",
    "EBS volumes declared by launch templates and EC2NodeClasses are encrypted.",
    _ebs_encrypted,
)

ec2_no_public_ip = resource_policy(
    "ec2-no-public-ip",
    "Launch templates, EC2NodeClasses and pulumi-eks clusters do not give nodes public IP "
    "addresses unless allowPublicIp is set.",
    _no_public_ip,
    options={"allowPublicIp": allow_option("Allow nodes with public IP addresses.")},
)

POLICIES = [ec2_imdsv2_required, ec2_ebs_encrypted, ec2_no_public_ip]
