"""NodePool under mocks: the defaults, field-by-field overrides, API validation at preview."""

import pulumi
import pytest
from joiner.api.validation import validate_object
from pulumi_harness import as_json, component_outputs
from pulumi_joiner import NodePool
from pulumi_joiner.nodepool import merge

REQUIREMENTS = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
]


def pool(args, name="general"):
    given = {"cluster_name": "demo", "node_role_name": "demo-node", **args}
    return component_outputs(lambda: NodePool(name, given))


def objects(program):
    (node_pool,) = [r for r in program.resources if r.type == "kubernetes:karpenter.sh/v1:NodePool"]
    (node_class,) = [
        r for r in program.resources if r.type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
    ]
    return node_pool, node_class


def test_defaults(run):
    program = run(pool({}))
    node_pool, node_class = objects(program)
    spec = node_pool.inputs["spec"]
    assert node_pool.inputs["metadata"] == {
        "name": "general",
        "annotations": {"pulumi.com/deletionPropagationPolicy": "foreground"},
    }
    assert spec["template"]["spec"]["requirements"] == REQUIREMENTS
    assert spec["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "general",
    }
    assert spec["limits"] == {"cpu": "1000"}
    assert spec["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    class_spec = node_class.inputs["spec"]
    assert class_spec["role"] == "demo-node"
    assert class_spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert class_spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo"}}]
    assert class_spec["securityGroupSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "demo"}}
    ]
    assert class_spec["metadataOptions"]["httpTokens"] == "required"
    assert class_spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {"volumeSize": "20Gi", "volumeType": "gp3", "encrypted": True},
        }
    ]
    assert program.depends_on(node_pool, node_class)
    assert program.outputs == {"node_pool_name": "general", "node_class_name": "general"}
    for resource in (node_pool, node_class):
        manifest = {k: v for k, v in resource.inputs.items() if k != "metadata"}
        assert validate_object(as_json({**manifest, "metadata": {"name": "general"}})) == []


def test_overrides_merge_field_by_field(run):
    overrides = {
        "node_pool_name": "batch",
        "node_class_name": "batch-class",
        "node_pool": {
            "limits": {"cpu": "64", "memory": "256Gi"},
            "disruption": {"consolidateAfter": "5m"},
            "weight": 10,
        },
        "node_class": {
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "metadataOptions": {"httpPutResponseHopLimit": 2},
            "tags": {"team": "data"},
        },
    }
    node_pool, node_class = objects(run(pool(overrides)))
    spec = node_pool.inputs["spec"]
    assert node_pool.inputs["metadata"]["name"] == "batch"
    assert spec["limits"] == {"cpu": "64", "memory": "256Gi"}
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "5m",
    }
    assert spec["weight"] == 10
    assert spec["template"]["spec"]["requirements"] == REQUIREMENTS
    assert spec["template"]["spec"]["nodeClassRef"]["name"] == "batch-class"
    class_spec = node_class.inputs["spec"]
    assert node_class.inputs["metadata"]["name"] == "batch-class"
    assert class_spec["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert class_spec["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }
    assert class_spec["tags"] == {"team": "data"}


def test_merge_rules():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge(base, {"a": {"c": [3]}, "d": None, "e": {"f": 1}}) == {
        "a": {"b": 1, "c": [3]},
        "e": {"f": 1},
    }
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"node_pool": {"weight": 500}},
            "NodePool 'general': argument 'node_pool' is invalid: spec.weight: must be <= 100",
        ),
        (
            {
                "node_pool": {
                    "template": {
                        "spec": {
                            "requirements": [
                                {
                                    "key": "karpenter.k8s.aws/instance-generation",
                                    "operator": "Gt",
                                    "values": ["two"],
                                }
                            ]
                        }
                    }
                }
            },
            r"argument 'node_pool' is invalid: spec.template.spec.requirements: requirements "
            r"with operator 'Gt'",
        ),
        (
            {"node_class": {"amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]}},
            "argument 'node_class' is invalid: spec.amiSelectorTerms: 'alias' must be the only",
        ),
        ({"node_role_name": None}, "NodePool 'general': argument 'node_role_name' is required"),
    ],
)
def test_rejected_overrides_fail_at_preview_naming_the_argument(run, overrides, message):
    def program():
        args = {"cluster_name": "demo", "node_role_name": "demo-node", **overrides}
        NodePool("general", {k: v for k, v in args.items() if v is not None})

    with pytest.raises(pulumi.RunError, match=message):
        run(program, preview=True)
