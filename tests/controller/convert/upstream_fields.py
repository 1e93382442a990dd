"""Every field of the old kinds, as upstream's Go types declare them (the CRDs were
generated from these). A list field's items are carried whole unless listed with
``[]``.

- Provisioner (karpenter.sh/v1alpha5): https://github.com/kubernetes-sigs/karpenter/blob/
  release-v0.31.x/pkg/apis/v1alpha5/provisioner.go and kubelet_configuration.go;
  ``spec.provider`` is the AWS provider of https://github.com/aws/karpenter-provider-aws/
  blob/release-v0.31.x/pkg/apis/v1alpha1/provider.go
- AWSNodeTemplate (karpenter.k8s.aws/v1alpha1): the same provider.go plus
  awsnodetemplate.go (userData, amiSelector, detailedMonitoring)
- NodePool / NodeClaim (karpenter.sh/v1beta1): https://github.com/kubernetes-sigs/
  karpenter/blob/release-v0.37.x/pkg/apis/v1beta1/nodepool.go and nodeclaim.go
- EC2NodeClass (karpenter.k8s.aws/v1beta1): https://github.com/aws/karpenter-provider-aws/
  blob/release-v0.37.x/pkg/apis/v1beta1/ec2nodeclass.go
"""

from __future__ import annotations

KUBELET = (
    "clusterDNS",
    "maxPods",
    "podsPerCore",
    "systemReserved",
    "kubeReserved",
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMaxPodGracePeriod",
    "imageGCHighThresholdPercent",
    "imageGCLowThresholdPercent",
    "cpuCFSQuota",
)
AWS_PROVIDER = (
    "amiFamily",
    "context",
    "instanceProfile",
    "subnetSelector",
    "securityGroupSelector",
    "tags",
    "launchTemplate",
    "metadataOptions",
    "blockDeviceMappings[].deviceName",
    "blockDeviceMappings[].virtualName",
    "blockDeviceMappings[].ebs",
)
PROVISIONER = (
    "spec.annotations",
    "spec.labels",
    "spec.taints",
    "spec.startupTaints",
    "spec.requirements",
    *(f"spec.kubeletConfiguration.{name}" for name in (*KUBELET, "containerRuntime")),
    "spec.provider.apiVersion",
    "spec.provider.kind",
    *(f"spec.provider.{name}" for name in AWS_PROVIDER),
    "spec.providerRef",
    "spec.ttlSecondsAfterEmpty",
    "spec.ttlSecondsUntilExpired",
    "spec.limits.resources",
    "spec.weight",
    "spec.consolidation.enabled",
    "status",
)
AWS_NODE_TEMPLATE = (
    *(f"spec.{name}" for name in AWS_PROVIDER),
    "spec.userData",
    "spec.amiSelector",
    "spec.detailedMonitoring",
    "status",
)
NODEPOOL = (
    "spec.template.metadata.labels",
    "spec.template.metadata.annotations",
    "spec.template.spec.taints",
    "spec.template.spec.startupTaints",
    "spec.template.spec.requirements",
    "spec.template.spec.resources",
    *(f"spec.template.spec.kubelet.{name}" for name in KUBELET),
    "spec.template.spec.nodeClassRef",
    "spec.disruption.consolidateAfter",
    "spec.disruption.consolidationPolicy",
    "spec.disruption.expireAfter",
    "spec.disruption.budgets",
    "spec.limits",
    "spec.weight",
    "status",
)
NODECLAIM = (
    "spec.taints",
    "spec.startupTaints",
    "spec.requirements",
    "spec.resources",
    "spec.kubelet",
    "spec.nodeClassRef",
    "status",
)
EC2NODECLASS = (
    *(
        f"spec.{name}"
        for name in (
            "subnetSelectorTerms",
            "securityGroupSelectorTerms",
            "associatePublicIPAddress",
            "amiSelectorTerms",
            "amiFamily",
            "userData",
            "role",
            "instanceProfile",
            "tags",
            "blockDeviceMappings",
            "instanceStorePolicy",
            "detailedMonitoring",
            "metadataOptions",
            "context",
        )
    ),
    "status",
)
