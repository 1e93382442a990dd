"""joiner.testing: the builders give objects the API accepts, overrides land where their
docstrings say, and the OperatorRig provisions a pending pod end to end."""

from __future__ import annotations

import pytest
import yaml
from joiner import testing
from joiner.api import labels as wk
from joiner.api.validation import validate_object
from joiner.cloudprovider.fake import new_instance_type
from joiner.sim.scenario import load_scenario


@pytest.mark.parametrize(
    "manifest",
    [
        testing.ec2nodeclass(),
        testing.nodepool(),
        testing.nodepool(
            "gpu",
            requirements=[testing.requirement(wk.INSTANCE_GPU_COUNT, "Exists")],
            disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
            limits={"cpu": "100"},
            labels={"team": "ml"},
            expire_after="720h",
            weight=10,
            taints=[{"key": "gpu", "effect": "NoSchedule"}],
        ),
        testing.nodeclaim("default-abc"),
    ],
    ids=["ec2nodeclass", "nodepool", "nodepool-everything", "nodeclaim"],
)
def test_karpenter_objects_pass_validation(manifest: dict) -> None:
    assert validate_object(manifest) == []


def test_nodepool_overrides_land_in_the_template_and_spec() -> None:
    pool = testing.nodepool(
        "batch", labels={"team": "a"}, expire_after="Never", weight=5, limits={"cpu": "8"}
    )
    assert pool["metadata"] == {"name": "batch"}
    assert pool["spec"]["template"]["metadata"] == {"labels": {"team": "a"}}
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert (pool["spec"]["weight"], pool["spec"]["limits"]) == (5, {"cpu": "8"})
    assert "disruption" not in pool["spec"]  # left to the API's defaults


def test_defaults_allow_spot_and_on_demand_and_discover_by_cluster_tag() -> None:
    assert testing.nodepool()["spec"]["template"]["spec"]["requirements"] == [
        {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]}
    ]
    spec = testing.ec2nodeclass(cluster="prod", role="Nodes")["spec"]
    assert spec["role"] == "Nodes"
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "prod"}}]
    assert spec["securityGroupSelectorTerms"] == spec["subnetSelectorTerms"]
    assert spec["securityGroupSelectorTerms"] is not spec["subnetSelectorTerms"]


def test_exists_requirement_has_no_values() -> None:
    assert testing.requirement("k", "Exists", ["ignored"]) == {"key": "k", "operator": "Exists"}
    assert testing.capacity_types("spot") == {
        "key": wk.CAPACITY_TYPE,
        "operator": "In",
        "values": ["spot"],
    }


def test_pod_requests_only_what_is_given() -> None:
    pod = testing.pod("p", cpu="250m", nodeSelector={wk.ZONE: "a"})
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "250m"}}
    assert pod["spec"]["nodeSelector"] == {wk.ZONE: "a"}
    assert "labels" not in pod["metadata"]


def test_a_scenario_of_builders_loads() -> None:
    document = testing.scenario(
        "built",
        [testing.scenario_instance_type("small", "2", "4Gi", {"zone-a/spot": 0.03}, pods=10)],
        [
            testing.ec2nodeclass(),
            testing.nodepool(),
            testing.deployment("app", replicas=3, cpu="500m", memory="256Mi"),
        ],
        [{"settle": "1m"}],
    )
    loaded = load_scenario(yaml.safe_dump(document))
    assert [t.name for t in loaded.cloud.instance_types] == ["small"]
    assert [o["kind"] for o in loaded.objects] == ["EC2NodeClass", "NodePool", "Deployment"]


def test_the_rig_provisions_and_a_kubelet_node_carries_the_claim() -> None:
    rig = testing.OperatorRig([new_instance_type("small", cpu="2", memory="4Gi")])
    for manifest in (testing.ec2nodeclass(), testing.nodepool()):
        rig.kube.create(manifest)
    pending = testing.create_unschedulable(rig.kube, testing.pod("p0", cpu="1"))
    assert pending["status"]["conditions"][0]["reason"] == "Unschedulable"
    rig.advance(15)
    [claim] = rig.kube.list("NodeClaim").items
    node = testing.kubelet_node(claim, "node-a")
    assert node["spec"]["providerID"] == claim["status"]["providerID"]
    assert node["metadata"]["labels"][wk.NODEPOOL] == "default"
    assert node["metadata"]["labels"][wk.HOSTNAME] == "node-a"
    assert node["spec"]["taints"] == [wk.UNREGISTERED_TAINT]
