"""Upstream's examples of the old kinds (saved under ``upstream/`` with their source),
converted: the exact v1 objects, valid by Joiner's own v1 validation, and the report of
every field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from joiner.api.validation import validate_object
from joiner.convert import ConversionError, Options, Outcome, convert_objects

UPSTREAM = Path(__file__).parent / "upstream"
KUBELET = {
    "clusterDNS": ["10.0.1.100"],
    "systemReserved": {"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi"},
    "kubeReserved": {"cpu": "200m", "memory": "100Mi", "ephemeral-storage": "3Gi"},
    "evictionHard": {
        "memory.available": "5%",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "10%",
    },
    "evictionSoft": {
        "memory.available": "500Mi",
        "nodefs.available": "15%",
        "nodefs.inodesFree": "15%",
    },
    "evictionSoftGracePeriod": {
        "memory.available": "1m",
        "nodefs.available": "1m30s",
        "nodefs.inodesFree": "2m",
    },
    "evictionMaxPodGracePeriod": 60,
    "imageGCHighThresholdPercent": 85,
    "imageGCLowThresholdPercent": 80,
    "cpuCFSQuota": True,
    "podsPerCore": 2,
    "maxPods": 20,
}


def _load(*names: str) -> list[Any]:
    return [
        obj for name in names for obj in yaml.safe_load_all((UPSTREAM / name).read_text()) if obj
    ]


def _requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def test_karpenter_convert_provisioner_and_node_template_become_a_pool_and_a_class() -> None:
    result = convert_objects(
        _load("provisioner.yaml", "awsnodetemplate.yaml"), Options(role="KarpenterNodeRole-demo")
    )
    pool, node_class = result.objects
    assert pool == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {"billing-team": "my-team"},
                    "annotations": {"example.com/owner": "my-team"},
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        _requirement("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"),
                        _requirement("karpenter.k8s.aws/instance-cpu", "In", "4", "8", "16", "32"),
                        _requirement("karpenter.k8s.aws/instance-hypervisor", "In", "nitro"),
                        _requirement("karpenter.k8s.aws/instance-generation", "Gt", "2"),
                        _requirement(
                            "topology.kubernetes.io/zone", "In", "us-west-2a", "us-west-2b"
                        ),
                        _requirement("kubernetes.io/arch", "In", "arm64", "amd64"),
                        _requirement("karpenter.sh/capacity-type", "In", "spot", "on-demand"),
                        # the one v1alpha5 default the Provisioner did not set
                        _requirement("kubernetes.io/os", "In", "linux"),
                    ],
                    "taints": [{"key": "example.com/special-taint", "effect": "NoSchedule"}],
                    "startupTaints": [{"key": "example.com/another-taint", "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
            "limits": {"cpu": "1000", "memory": "1000Gi"},
            "weight": 10,
        },
    }
    assert node_class == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "karpenter-demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "karpenter-demo"}}],
            "amiFamily": "Bottlerocket",
            "amiSelectorTerms": [{"id": "ami-123"}, {"id": "ami-456"}],
            "role": "KarpenterNodeRole-demo",
            "userData": "[settings.kubernetes]\nkube-api-qps = 30\n"
            '[settings.kubernetes.eviction-hard]\n"memory.available" = "10%"\n',
            "tags": {"MyTag": "1234", "MyBackupTag": "yes"},
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvdb",
                    "ebs": {
                        "volumeSize": "100Gi",
                        "volumeType": "gp3",
                        "deleteOnTermination": True,
                    },
                }
            ],
            # the Provisioner's kubeletConfiguration, moved to the class it references
            "kubelet": KUBELET,
        },
    }
    assert validate_object(pool) == [] and validate_object(node_class) == []
    no_equivalent = {(n.source, n.path) for n in result.notes if n.outcome is Outcome.NO_EQUIVALENT}
    assert no_equivalent == {
        ("Provisioner/default", "spec.kubeletConfiguration.containerRuntime"),
        ("AWSNodeTemplate/default", "spec.amiSelector"),  # tags, name, owners beside ids
    }
    reported = {(n.source, n.path) for n in result.notes}
    old = _load("provisioner.yaml")[0]["spec"]
    for key in old:
        if key not in ("kubeletConfiguration", "limits", "consolidation"):
            assert ("Provisioner/default", f"spec.{key}") in reported, key
    for key in KUBELET:
        assert ("Provisioner/default", f"spec.kubeletConfiguration.{key}") in reported


def test_v1beta1_node_ttls_example_becomes_v1_as_upstreams_webhook_converts_it() -> None:
    result = convert_objects(_load("v1beta1-node-ttls.yaml"))
    pool, node_class = result.objects
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "default",
    }
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "168h"
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "60s",
    }
    assert pool["metadata"] == {
        "name": "default",
        "annotations": {
            "kubernetes.io/description": "General purpose NodePool for generic workloads"
        },
    }
    assert node_class["spec"] == {
        "role": "KarpenterNodeRole-${CLUSTER_NAME}",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "${CLUSTER_NAME}"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "${CLUSTER_NAME}"}}],
        "amiSelectorTerms": [{"alias": "al2@latest"}],
    }
    assert validate_object(pool) == [] and validate_object(node_class) == []


def _pool(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"nodeClassRef": {"name": "default"}, "requirements": []}}
    return {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": template, **spec},
    }


def test_when_underutilized_becomes_when_empty_or_underutilized_after_0s() -> None:
    pool = convert_objects(
        [_pool(disruption={"consolidationPolicy": "WhenUnderutilized", "expireAfter": "Never"})]
    ).objects[0]
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"


def test_a_v1beta1_pools_kubelet_moves_to_its_class() -> None:
    pool = _pool()
    pool["spec"]["template"]["spec"]["kubelet"] = {"maxPods": 110}
    node_class = {
        "apiVersion": "karpenter.k8s.aws/v1beta1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiFamily": "AL2023",
            "role": "r",
            "subnetSelectorTerms": [{"tags": {"a": "b"}}],
            "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
        },
    }
    new_pool, new_class = convert_objects([pool, node_class]).objects
    assert "kubelet" not in new_pool["spec"]["template"]["spec"]
    assert new_class["spec"]["kubelet"] == {"maxPods": 110}
    assert new_class["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]


def _provisioner(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "p"},
        "spec": {"providerRef": {"name": "default"}, **spec},
    }


def test_consolidation_enabled_becomes_when_empty_or_underutilized() -> None:
    pool = convert_objects([_provisioner(consolidation={"enabled": True})]).objects[0]
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
    }


def test_a_provisioner_without_ttls_never_expires_and_is_never_consolidated() -> None:
    result = convert_objects([_provisioner()], Options(ignore_defaults=True))
    pool = result.objects[0]
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "Never",
    }
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert pool["spec"]["template"]["spec"]["requirements"] == []
    added = [(n.path, n.outcome) for n in result.notes]
    assert ("spec.ttlSecondsAfterEmpty", Outcome.ADDED) in added
    assert ("spec.ttlSecondsUntilExpired", Outcome.ADDED) in added


def test_old_pod_annotations_and_node_selector_keys_are_renamed() -> None:
    provisioner = _provisioner(annotations={"karpenter.sh/do-not-consolidate": "true"})
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [_requirement("karpenter.sh/provisioner-name", "In", "a")]}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [
                            _requirement("karpenter.sh/provisioner-name", "In", "b")
                        ]
                    },
                }
            ],
        }
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "template": {
                "metadata": {"annotations": {"karpenter.sh/do-not-evict": "true"}},
                "spec": {
                    "nodeSelector": {"karpenter.sh/provisioner-name": "a"},
                    "affinity": affinity,
                },
            }
        },
    }
    untouched = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    result = convert_objects([provisioner, deployment, untouched], Options(ignore_defaults=True))
    pool, new_deployment, config_map = result.objects
    assert pool["spec"]["template"]["metadata"]["annotations"] == {
        "karpenter.sh/do-not-disrupt": "true"
    }
    pod = new_deployment["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert pod["spec"]["nodeSelector"] == {"karpenter.sh/nodepool": "a"}
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "karpenter.sh/nodepool"
    preferred = pod["spec"]["affinity"]["nodeAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ][0]["preference"]
    assert preferred["matchExpressions"] == [_requirement("karpenter.sh/nodepool", "In", "b")]
    assert config_map is untouched
    # the input is not changed
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {
        "karpenter.sh/provisioner-name": "a"
    }
    assert sorted(n.path for n in result.notes if n.source == "Deployment/web") == [
        "spec.template.metadata.annotations.karpenter.sh/do-not-evict",
        "spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        "[0].preference.matchExpressions[0].key",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].key",
        "spec.template.spec.nodeSelector.karpenter.sh/provisioner-name",
    ]


@pytest.mark.parametrize(
    ("obj", "path", "words"),
    [
        (
            _provisioner(ttlSecondsAfterEmpty=30, consolidation={"enabled": True}),
            "spec.ttlSecondsAfterEmpty",
            "not with spec.consolidation.enabled",
        ),
        (_provisioner(ttlSecondsUntilExpird=30), "spec.ttlSecondsUntilExpird", "unknown field"),
        (
            _provisioner(ttlSecondsAfterEmpty="30s"),
            "spec.ttlSecondsAfterEmpty",
            "expected whole seconds",
        ),
        (
            _provisioner(kubeletConfiguration={"maxPod": 3}),
            "spec.kubeletConfiguration.maxPod",
            "unknown field",
        ),
        (
            {
                "apiVersion": "karpenter.k8s.aws/v1alpha1",
                "kind": "AWSNodeTemplate",
                "metadata": {"name": "t"},
                "spec": {"launchTemplate": "mine"},
            },
            "spec.launchTemplate",
            "cannot be converted",
        ),
        (
            {
                "apiVersion": "karpenter.k8s.aws/v1beta1",
                "kind": "EC2NodeClass",
                "metadata": {"name": "u"},
                "spec": {"amiFamily": "Ubuntu", "role": "r"},
            },
            "spec.amiFamily",
            "Ubuntu has no v1 AMI family",
        ),
        (_provisioner(weight=0), "", "which v1 refuses: spec.weight"),
        (
            {**_provisioner(), "metadata": {"name": "p", "annotations": ["a"]}},
            "metadata.annotations",
            "expected a map of strings",
        ),
    ],
    ids=[
        "ttl-and-consolidation",
        "misspelt",
        "ttl-not-seconds",
        "kubelet-typo",
        "launch-template",
        "ubuntu",
        "v1-invalid",
        "annotations-list",
    ],
)
def test_input_that_cannot_be_converted_is_refused_naming_the_field(
    obj: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(ConversionError) as raised:
        convert_objects([obj])
    assert raised.value.path == path
    assert words in raised.value.message


def _node_template() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "default"},
        "spec": {"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}},
    }


def test_two_pools_with_different_kubelets_on_one_class_are_refused() -> None:
    a = _provisioner(kubeletConfiguration={"maxPods": 10})
    b = {**_provisioner(kubeletConfiguration={"maxPods": 20}), "metadata": {"name": "q"}}
    with pytest.raises(ConversionError) as raised:
        convert_objects([a, b, _node_template()])
    assert (raised.value.source, raised.value.path) == (
        "Provisioner/q",
        "spec.kubeletConfiguration",
    )


def test_an_inline_provider_and_a_template_of_the_same_name_are_refused() -> None:
    inline = {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "default"},
        "spec": {"provider": {"subnetSelector": {"a": "b"}, "securityGroupSelector": {"a": "b"}}},
    }
    with pytest.raises(ConversionError) as raised:
        convert_objects([inline, _node_template()])
    assert str(raised.value) == (
        "AWSNodeTemplate/default: metadata.name: converts to EC2NodeClass/default, as "
        "Provisioner/default does; rename one of them"
    )


@pytest.mark.parametrize(
    "obj",
    [None, [], {"apiVersion": {"group": "karpenter.sh"}, "kind": "Provisioner"}, {"kind": ["x"]}],
    ids=["null", "list", "api-version-object", "kind-list"],
)
def test_objects_of_no_old_kind_pass_through(obj: Any) -> None:
    assert convert_objects([obj]).objects == [obj]


def test_metadata_keeps_name_labels_and_the_users_annotations() -> None:
    pool = _pool()
    pool["metadata"] = {
        "name": "p",
        "uid": "1234",
        "resourceVersion": "7",
        "finalizers": ["karpenter.sh/termination"],
        "labels": {"team": "a"},
        "annotations": {
            "owner": "me",
            "karpenter.sh/nodepool-hash": "123",
            "karpenter.sh/nodepool-hash-version": "v2",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
    }
    assert convert_objects([pool]).objects[0]["metadata"] == {
        "name": "p",
        "labels": {"team": "a"},
        "annotations": {"owner": "me"},
    }


V1_EXAMPLES = Path(__file__).parents[1] / "api" / "upstream" / "examples" / "v1"


@pytest.mark.parametrize("name", ["al2-custom-ami.yaml", "custom-family.yaml"])
def test_v1beta1_examples_convert_to_upstreams_own_v1_examples(name: str) -> None:
    """Upstream rewrote its examples for v1; for these the conversion gives exactly that."""
    converted = convert_objects(_load(f"v1beta1-{name}")).objects
    upstream_v1 = [o for o in yaml.safe_load_all((V1_EXAMPLES / name).read_text()) if o]
    assert converted == upstream_v1


def test_v1beta1_general_purpose_converts_to_upstreams_v1_but_for_its_new_family() -> None:
    """Upstream's v1 example also moved from Amazon Linux 2 to 2023; the conversion keeps
    the family the v1beta1 object had."""
    converted = convert_objects(_load("v1beta1-general-purpose.yaml")).objects
    upstream_v1 = [
        o for o in yaml.safe_load_all((V1_EXAMPLES / "general-purpose.yaml").read_text()) if o
    ]
    assert converted[1]["spec"].pop("amiSelectorTerms") == [{"alias": "al2@latest"}]
    assert upstream_v1[1]["spec"].pop("amiSelectorTerms") == [{"alias": "al2023@latest"}]
    assert converted == upstream_v1
