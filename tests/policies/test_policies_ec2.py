"""Launch templates and EC2NodeClasses: IMDSv2, encrypted volumes, no public IPs."""

import copy

import pytest
from joiner_policies.ec2 import (
    LAUNCH_TEMPLATE,
    ec2_ebs_encrypted,
    ec2_imdsv2_required,
    ec2_no_public_ip,
)
from karpenter_objects import NODE_CLASS, node_class_props
from policy_calls import check

GENERIC_CUSTOM_RESOURCE = "kubernetes:apiextensions.k8s.io/v1:CustomResource"

NODE_CLASS_PROPS = node_class_props(
    subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "demo"}}],
    securityGroupSelectorTerms=[{"tags": {"karpenter.sh/discovery": "demo"}}],
    metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 1.0},
    blockDeviceMappings=[
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "encrypted": True}}
    ],
)
LAUNCH_TEMPLATE_PROPS = {
    "imageId": "ami-0123",
    "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1.0},
    "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}],
    "networkInterfaces": [{"associatePublicIpAddress": "false", "subnetId": "subnet-1"}],
}


def node_class(**spec_changes):
    props = copy.deepcopy(NODE_CLASS_PROPS)
    props["spec"].update(spec_changes)
    return props


def launch_template(**changes):
    return {**copy.deepcopy(LAUNCH_TEMPLATE_PROPS), **changes}


@pytest.mark.parametrize("policy", [ec2_imdsv2_required, ec2_ebs_encrypted, ec2_no_public_ip])
def test_hardened_templates_and_node_classes_pass(policy):
    assert check(policy, LAUNCH_TEMPLATE, LAUNCH_TEMPLATE_PROPS) == []
    assert check(policy, NODE_CLASS, NODE_CLASS_PROPS) == []
    # Whatever Pulumi type the object was declared with, its apiVersion/kind decide.
    assert check(policy, GENERIC_CUSTOM_RESOURCE, NODE_CLASS_PROPS) == []


def test_node_class_defaults_are_imdsv2_and_encrypted():
    props = copy.deepcopy(NODE_CLASS_PROPS)
    del props["spec"]["metadataOptions"], props["spec"]["blockDeviceMappings"]
    assert check(ec2_imdsv2_required, NODE_CLASS, props) == []
    assert check(ec2_ebs_encrypted, NODE_CLASS, props) == []


def test_imdsv1_is_reported():
    optional = {"httpTokens": "optional", "httpPutResponseHopLimit": 1.0}
    assert check(ec2_imdsv2_required, NODE_CLASS, node_class(metadataOptions=optional)) == [
        "spec.metadataOptions.httpTokens is 'optional': require IMDSv2 with httpTokens: required"
    ]
    assert check(
        ec2_imdsv2_required, LAUNCH_TEMPLATE, launch_template(metadataOptions=optional)
    ) == ["metadataOptions.httpTokens is 'optional': require IMDSv2 with httpTokens: required"]


def test_a_launch_template_without_metadata_options_defaults_to_imdsv1():
    props = launch_template()
    del props["metadataOptions"]
    assert check(ec2_imdsv2_required, LAUNCH_TEMPLATE, props) == [
        "metadataOptions.httpTokens is 'optional' (default): require IMDSv2 with httpTokens: "
        "required"
    ]


def test_a_disabled_metadata_service_passes():
    props = launch_template(metadataOptions={"httpEndpoint": "disabled"})
    assert check(ec2_imdsv2_required, LAUNCH_TEMPLATE, props) == []


def test_hop_limit_above_the_configured_maximum_is_reported():
    two_hops = {"httpTokens": "required", "httpPutResponseHopLimit": 2.0}
    message = (
        "spec.metadataOptions.httpPutResponseHopLimit is 2: at most 1 keeps pods from reaching "
        "the node's credentials through the metadata service"
    )
    assert check(ec2_imdsv2_required, NODE_CLASS, node_class(metadataOptions=two_hops)) == [message]
    relaxed = {"maxHopLimit": 2}
    assert (
        check(ec2_imdsv2_required, NODE_CLASS, node_class(metadataOptions=two_hops), relaxed) == []
    )


def test_unencrypted_volumes_are_reported_by_device():
    mappings = [
        {"deviceName": "/dev/xvda", "ebs": {"encrypted": True}},
        {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}},
        {"ebs": {"encrypted": False}},
        {"deviceName": "/dev/sdc", "virtualName": "ephemeral0"},
    ]
    assert check(ec2_ebs_encrypted, NODE_CLASS, node_class(blockDeviceMappings=mappings)) == [
        "spec.blockDeviceMappings[1] (/dev/xvdb): the EBS volume is not encrypted; "
        "set ebs.encrypted: true",
        "spec.blockDeviceMappings[2]: the EBS volume is not encrypted; set ebs.encrypted: true",
    ]
    props = launch_template(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {}}])
    assert check(ec2_ebs_encrypted, LAUNCH_TEMPLATE, props) == [
        "blockDeviceMappings[0] (/dev/xvda): the EBS volume is not encrypted; "
        "set ebs.encrypted: true"
    ]


def test_public_ips_are_reported_unless_allowed():
    props = launch_template(networkInterfaces=[{}, {"associatePublicIpAddress": "true"}])
    message = (
        "networkInterfaces[1].associatePublicIpAddress is true: nodes get public IP addresses; "
        "keep them in private subnets (or set allowPublicIp in this policy's config)"
    )
    assert check(ec2_no_public_ip, LAUNCH_TEMPLATE, props) == [message]
    assert check(ec2_no_public_ip, LAUNCH_TEMPLATE, props, {"allowPublicIp": True}) == []
    public_class = node_class(associatePublicIPAddress=True)
    assert check(ec2_no_public_ip, NODE_CLASS, public_class) == [
        "spec.associatePublicIPAddress is true: nodes get public IP addresses; keep them in "
        "private subnets (or set allowPublicIp in this policy's config)"
    ]
    cluster = {"nodeAssociatePublicIpAddress": True, "name": "demo"}
    assert len(check(ec2_no_public_ip, "eks:index:Cluster", cluster)) == 1
    assert (
        check(ec2_no_public_ip, "eks:index:Cluster", {"nodeAssociatePublicIpAddress": False}) == []
    )


def test_other_kubernetes_objects_are_ignored():
    nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "spec": {}}
    for policy in (ec2_imdsv2_required, ec2_ebs_encrypted, ec2_no_public_ip):
        assert check(policy, "kubernetes:karpenter.sh/v1:NodePool", nodepool) == []
