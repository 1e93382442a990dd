"""The one table of how every field of the old kinds maps to v1: for each old kind, each
field's path, where its value goes (``Kind field``), or ``None`` when v1 has no
equivalent, and the message the report gives. The converters do the moving; the report
walks an old object against this table, so a field missing here is refused as unknown
rather than dropped. Facts from upstream's v1beta1 and v1 migration guides, its
karpenter-convert tool and its v1 conversion webhooks.

Paths are dotted; ``[]`` stands for every item of a list. An entry covers the field and
everything under it, unless deeper entries name its parts."""

from __future__ import annotations

from dataclasses import dataclass

from joiner.api.definitions.kubelet import kubelet

PROVISIONER = ("karpenter.sh/v1alpha5", "Provisioner")
AWS_NODE_TEMPLATE = ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate")
NODEPOOL_V1BETA1 = ("karpenter.sh/v1beta1", "NodePool")
NODECLAIM_V1BETA1 = ("karpenter.sh/v1beta1", "NodeClaim")
EC2NODECLASS_V1BETA1 = ("karpenter.k8s.aws/v1beta1", "EC2NodeClass")

# The v1 kinds the converters write.
NODEPOOL = ("karpenter.sh/v1", "NodePool")
NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
EC2NODECLASS = ("karpenter.k8s.aws/v1", "EC2NodeClass")


@dataclass(frozen=True)
class Field:
    path: str
    target: str | None  # "NodePool spec.weight"; None: no v1 equivalent
    message: str = ""
    blocking: bool = False  # cannot be converted at all: the input is refused


KUBELET_FIELDS = tuple(kubelet().properties)  # the v1 EC2NodeClass kubelet fields
KUBELET_MESSAGE = "v1 sets the kubelet on the EC2NodeClass the pool uses"


def _kubelet(prefix: str) -> tuple[Field, ...]:
    return tuple(
        Field(f"{prefix}.{name}", f"EC2NodeClass spec.kubelet.{name}", KUBELET_MESSAGE)
        for name in KUBELET_FIELDS
    )


# AWSNodeTemplate spec and the Provisioner's inline spec.provider share these fields.
_AWS_PROVIDER = (
    Field(
        "subnetSelector",
        "EC2NodeClass spec.subnetSelectorTerms",
        "one term of its tags; with aws-ids / aws::ids, one term per id (other keys reported)",
    ),
    Field(
        "securityGroupSelector",
        "EC2NodeClass spec.securityGroupSelectorTerms",
        "one term of its tags; with aws-ids / aws::ids, one term per id (other keys reported)",
    ),
    Field(
        "amiFamily",
        "EC2NodeClass spec.amiSelectorTerms",
        "an alias (al2@latest for AL2) when there is no amiSelector, else spec.amiFamily "
        "(unset: AL2, as the old default)",
    ),
    Field("instanceProfile", "EC2NodeClass spec.instanceProfile", "the same profile"),
    Field("tags", "EC2NodeClass spec.tags"),
    Field("context", "EC2NodeClass spec.context"),
    Field("metadataOptions", "EC2NodeClass spec.metadataOptions"),
    Field("blockDeviceMappings[].deviceName", "EC2NodeClass spec.blockDeviceMappings[].deviceName"),
    Field("blockDeviceMappings[].ebs", "EC2NodeClass spec.blockDeviceMappings[].ebs"),
    Field(
        "blockDeviceMappings[].virtualName",
        None,
        "v1 maps no instance-store volumes by name; use spec.instanceStorePolicy: RAID0 "
        "to use the instance store",
    ),
    Field(
        "launchTemplate",
        None,
        "v1 does not use a launch template of your own: put its AMI, user data, block "
        "devices, metadata options and security groups in the EC2NodeClass, then "
        "convert again",
        blocking=True,
    ),
)

_PROVIDER_TYPE_META = (
    Field("apiVersion", None, "the provider's type information; not needed in v1"),
    Field("kind", None, "the provider's type information; not needed in v1"),
)

PROVISIONER_FIELDS = (
    Field("spec.labels", "NodePool spec.template.metadata.labels"),
    Field(
        "spec.annotations",
        "NodePool spec.template.metadata.annotations",
        "karpenter.sh/do-not-evict and do-not-consolidate become karpenter.sh/do-not-disrupt",
    ),
    Field("spec.taints", "NodePool spec.template.spec.taints"),
    Field("spec.startupTaints", "NodePool spec.template.spec.startupTaints"),
    Field("spec.requirements", "NodePool spec.template.spec.requirements"),
    *_kubelet("spec.kubeletConfiguration"),
    Field(
        "spec.kubeletConfiguration.containerRuntime",
        None,
        "v1 nodes always run containerd; remove it",
    ),
    Field(
        "spec.provider",
        "EC2NodeClass spec",
        "an EC2NodeClass named after the Provisioner, as an AWSNodeTemplate would convert",
    ),
    *(Field(f"spec.provider.{f.path}", f.target, f.message, f.blocking) for f in _AWS_PROVIDER),
    *(Field(f"spec.provider.{f.path}", f.target, f.message) for f in _PROVIDER_TYPE_META),
    Field(
        "spec.providerRef",
        "NodePool spec.template.spec.nodeClassRef",
        "AWSNodeTemplate becomes EC2NodeClass of group karpenter.k8s.aws, same name",
    ),
    Field("spec.limits.resources", "NodePool spec.limits"),
    Field(
        "spec.ttlSecondsAfterEmpty",
        "NodePool spec.disruption.consolidateAfter",
        "consolidationPolicy WhenEmpty, consolidateAfter the TTL",
    ),
    Field("spec.ttlSecondsUntilExpired", "NodePool spec.template.spec.expireAfter"),
    Field(
        "spec.consolidation.enabled",
        "NodePool spec.disruption.consolidationPolicy",
        "true: WhenEmptyOrUnderutilized with consolidateAfter 0s",
    ),
    Field("spec.weight", "NodePool spec.weight"),
    Field("status", None, "written by the controller; v1 status is rebuilt"),
)

AWS_NODE_TEMPLATE_FIELDS = (
    *(Field(f"spec.{f.path}", f.target, f.message, f.blocking) for f in _AWS_PROVIDER),
    Field(
        "spec.amiSelector",
        "EC2NodeClass spec.amiSelectorTerms",
        "tags in every term; aws::ids, aws::name and aws::owners become one term per combination",
    ),
    Field("spec.userData", "EC2NodeClass spec.userData"),
    Field("spec.detailedMonitoring", "EC2NodeClass spec.detailedMonitoring"),
    Field("status", None, "written by the controller; v1 status is rebuilt"),
)

_V1BETA1_CLAIM_SPEC = (
    Field("taints", "spec.taints"),
    Field("startupTaints", "spec.startupTaints"),
    Field("requirements", "spec.requirements", "minValues included"),
    Field("nodeClassRef", "spec.nodeClassRef", "apiVersion becomes group"),
    Field("kubelet", None, f"{KUBELET_MESSAGE}; set it there"),
)

NODEPOOL_V1BETA1_FIELDS = (
    Field("spec.template.metadata.labels", "NodePool spec.template.metadata.labels"),
    Field("spec.template.metadata.annotations", "NodePool spec.template.metadata.annotations"),
    *(
        Field(f"spec.template.spec.{f.path}", f"NodePool spec.template.{f.target}", f.message)
        for f in _V1BETA1_CLAIM_SPEC
        if f.path != "kubelet"
    ),
    *_kubelet("spec.template.spec.kubelet"),
    Field(
        "spec.template.spec.resources",
        None,
        "v1 has no resources in a NodePool's template (the requests were never used to "
        "pick instances); remove it",
    ),
    Field(
        "spec.disruption.consolidationPolicy",
        "NodePool spec.disruption.consolidationPolicy",
        "WhenUnderutilized becomes WhenEmptyOrUnderutilized with consolidateAfter 0s",
    ),
    Field("spec.disruption.consolidateAfter", "NodePool spec.disruption.consolidateAfter"),
    Field("spec.disruption.expireAfter", "NodePool spec.template.spec.expireAfter"),
    Field("spec.disruption.budgets", "NodePool spec.disruption.budgets"),
    Field("spec.limits", "NodePool spec.limits"),
    Field("spec.weight", "NodePool spec.weight"),
    Field("status", None, "written by the controller; v1 status is rebuilt"),
)

NODECLAIM_V1BETA1_FIELDS = (
    *(
        Field(f"spec.{f.path}", f"NodeClaim {f.target}" if f.target else None, f.message)
        for f in _V1BETA1_CLAIM_SPEC
    ),
    Field("spec.resources", "NodeClaim spec.resources"),
    Field("status", None, "written by the controller; v1 status is rebuilt"),
)

EC2NODECLASS_V1BETA1_FIELDS = (
    *(
        Field(f"spec.{name}", f"EC2NodeClass spec.{name}")
        for name in (
            "subnetSelectorTerms",
            "securityGroupSelectorTerms",
            "amiSelectorTerms",
            "userData",
            "role",
            "instanceProfile",
            "tags",
            "blockDeviceMappings",
            "instanceStorePolicy",
            "detailedMonitoring",
            "associatePublicIPAddress",
            "metadataOptions",
            "context",
        )
    ),
    Field(
        "spec.amiFamily",
        "EC2NodeClass spec.amiSelectorTerms",
        "an alias (al2@latest for AL2) when there are no amiSelectorTerms, else spec.amiFamily; "
        "Ubuntu becomes AL2 (same user data) and needs amiSelectorTerms",
    ),
    Field("status", None, "written by the controller; v1 status is rebuilt"),
)

TABLES: dict[tuple[str, str], tuple[Field, ...]] = {
    PROVISIONER: PROVISIONER_FIELDS,
    AWS_NODE_TEMPLATE: AWS_NODE_TEMPLATE_FIELDS,
    NODEPOOL_V1BETA1: NODEPOOL_V1BETA1_FIELDS,
    NODECLAIM_V1BETA1: NODECLAIM_V1BETA1_FIELDS,
    EC2NODECLASS_V1BETA1: EC2NODECLASS_V1BETA1_FIELDS,
}


def is_old_kind(obj: object) -> bool:
    """An object of one of the old kinds this package converts."""
    if not isinstance(obj, dict):
        return False
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return isinstance(api_version, str) and isinstance(kind, str) and (api_version, kind) in TABLES
