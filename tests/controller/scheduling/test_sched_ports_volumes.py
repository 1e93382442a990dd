"""Host ports, volume topology, CSI volume limits and minValues [SCHED-4, 5, 8]."""

from __future__ import annotations

from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.scheduling.model import (
    HOST_PORTS,
    MIN_VALUES,
    NO_NODEPOOL,
    RESOURCES,
    TAINTS,
    VOLUME_LIMITS,
    VOLUME_ZONES,
    ClusterSnapshot,
    ExistingNode,
    VolumeCatalog,
)
from joiner.scheduling.solver import solve
from sched_builders import layout, nodepool, pod, reasons, run

GI = 2**30 * 1000
ALLOCATABLE = {"cpu": 4000, "memory": 8 * GI, "pods": 10000}
DRIVER = "ebs.csi.aws.com"


def _port(port: int = 8080) -> list[dict]:
    return [{"containerPort": 80, "hostPort": port}]


def _claim_volume(claim: str) -> list[dict]:
    return [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]


def _catalog() -> VolumeCatalog:
    pv_affinity = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": wk.ZONE, "operator": "In", "values": ["test-zone-2"]}
                    ]
                }
            ]
        }
    }
    return VolumeCatalog(
        claims={
            "default/bound": {"spec": {"volumeName": "pv-1"}},
            "default/unbound": {"spec": {"storageClassName": "zonal"}},
            "default/other": {"spec": {"volumeName": "pv-2"}},
        },
        volumes={
            "pv-1": {"spec": {"nodeAffinity": pv_affinity, "csi": {"driver": DRIVER}}},
            "pv-2": {"spec": {"csi": {"driver": DRIVER}}},
        },
        storage_classes={
            "zonal": {
                "provisioner": DRIVER,
                "allowedTopologies": [
                    {"matchLabelExpressions": [{"key": wk.ZONE, "values": ["test-zone-3"]}]}
                ],
            }
        },
    )


def test_two_pods_with_the_same_host_port_need_two_nodes():
    plan = run([pod("a", ports=_port()), pod("b", ports=_port())])
    assert layout(plan) == [("small", ["a"]), ("small", ["b"])]
    plan = run([pod("a", ports=_port(8080)), pod("b", ports=_port(9090))])
    assert layout(plan) == [("small", ["a", "b"])]


def test_host_port_in_use_on_an_existing_node():
    node = ExistingNode("n1", {}, ALLOCATABLE, pods=[pod("old", ports=_port())])
    plan = run([pod("a", ports=_port())], snapshot=ClusterSnapshot(nodes=[node]))
    assert plan.existing == {}
    assert len(plan.nodeclaims) == 1
    plan = solve([pod("a", ports=_port())], [], {}, ClusterSnapshot(nodes=[node]))
    assert reasons(plan) == {"a": HOST_PORTS}
    assert plan.unplaceable["default/a"].message == "0/1 nodes are available: 1 host ports"


def test_bound_volume_pins_the_zone():
    snapshot = ClusterSnapshot(volumes=_catalog())
    plan = run([pod("db", volumes=_claim_volume("bound"))], snapshot=snapshot)
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-2"


def test_unbound_volume_follows_the_storage_class_topology():
    snapshot = ClusterSnapshot(volumes=_catalog())
    plan = run([pod("db", volumes=_claim_volume("unbound"))], snapshot=snapshot)
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-3"


def test_volume_zone_conflicting_with_node_affinity():
    snapshot = ClusterSnapshot(volumes=_catalog())
    plan = run(
        [pod("db", volumes=_claim_volume("bound"), nodeSelector={wk.ZONE: "test-zone-1"})],
        snapshot=snapshot,
    )
    assert reasons(plan) == {"db": VOLUME_ZONES}


def test_missing_claim_is_reported():
    plan = run([pod("db", volumes=_claim_volume("ghost"))])
    assert reasons(plan) == {"db": VOLUME_ZONES}
    assert "default/ghost" in plan.unplaceable["default/db"].message


def test_csi_volume_limit_of_an_existing_node():
    catalog = _catalog()
    holder = pod("holder", volumes=_claim_volume("other"))
    zone = {wk.ZONE: "test-zone-3"}
    full = ExistingNode("n1", zone, ALLOCATABLE, pods=[holder], volume_limits={DRIVER: 1})
    roomy = ExistingNode("n2", zone, ALLOCATABLE, volume_limits={DRIVER: 1})
    snapshot = ClusterSnapshot(nodes=[full, roomy], volumes=catalog)
    plan = run([pod("db", volumes=_claim_volume("unbound"))], snapshot=snapshot)
    assert plan.existing == {"default/db": "n2"}
    snapshot = ClusterSnapshot(nodes=[full], volumes=catalog)
    plan = solve([pod("db", volumes=_claim_volume("unbound"))], [], {}, snapshot)
    assert reasons(plan) == {"db": VOLUME_LIMITS}


def test_without_pools_or_nodes_the_reason_is_no_nodepool():
    plan = solve([pod("a")], [], {}, ClusterSnapshot())
    assert reasons(plan) == {"a": NO_NODEPOOL}


def test_node_refusals_are_counted_by_constraint_without_pools():
    taint = {"key": "x", "effect": "NoSchedule"}
    nodes = [
        ExistingNode("small", {}, {"cpu": 100, "memory": GI, "pods": 1000}),
        ExistingNode("t1", {}, ALLOCATABLE, taints=[taint]),
        ExistingNode("t2", {}, ALLOCATABLE, taints=[taint]),
    ]
    plan = solve([pod("a", cpu="1")], [], {}, ClusterSnapshot(nodes=nodes))
    assert reasons(plan) == {"a": TAINTS}
    assert plan.unplaceable["default/a"].message == (
        "0/3 nodes are available: 2 taints, 1 resources"
    )
    assert RESOURCES in plan.unplaceable["default/a"].message


def _min_values_pool(count: int):
    return nodepool(
        requirements=[
            {
                "key": wk.INSTANCE_TYPE,
                "operator": "In",
                "values": ["small", "medium", "large"],
                "minValues": count,
            }
        ]
    )


def test_min_values_keeps_enough_types_on_every_claim():
    plan = run([pod("a", cpu="1")], pools=[_min_values_pool(2)])
    assert plan.nodeclaims[0].instance_types == ["small", "medium", "large"]
    entry = [r for r in plan.nodeclaims[0].requirements if r["key"] == wk.INSTANCE_TYPE]
    assert entry == [
        {
            "key": wk.INSTANCE_TYPE,
            "operator": "In",
            "values": ["small", "medium", "large"],
            "minValues": 2,
        }
    ]


def test_min_values_stops_a_claim_from_narrowing_too_far():
    pods = [pod("a", cpu="3"), pod("b", cpu="3", memory="99Mi")]
    plan = run(pods, pools=[_min_values_pool(2)])
    assert layout(plan) == [("medium", ["a"]), ("medium", ["b"])]
    plan = run(pods, pools=[_min_values_pool(1)])
    assert layout(plan) == [("large", ["a", "b"])]


def test_min_values_that_no_claim_can_meet():
    plan = run([pod("a", cpu="5")], pools=[_min_values_pool(2)])
    assert reasons(plan) == {"a": MIN_VALUES}


def test_min_values_on_family_counts_distinct_families():
    types = [
        new_instance_type(
            n, cpu=c, memory="8Gi", pods=10, labels={wk.INSTANCE_FAMILY: n.split(".")[0]}
        )
        for n, c in (("c5.large", "2"), ("c5.xlarge", "4"), ("m5.xlarge", "4"))
    ]
    pool = nodepool(
        requirements=[{"key": wk.INSTANCE_FAMILY, "operator": "Exists", "minValues": 2}]
    )
    plan = run([pod("a", cpu="3")], pools=[pool], types=types)
    assert sorted(plan.nodeclaims[0].instance_types) == ["c5.xlarge", "m5.xlarge"]
    assert reasons(run([pod("a", cpu="3")], pools=[pool], types=types[:2])) == {"a": MIN_VALUES}


def test_identical_pods_go_to_the_claim_with_fewest_pods():
    types = [new_instance_type("two", cpu="2", memory="4Gi", pods=10)]
    pods = [
        pod("big1", cpu="1500m", memory="101Mi"),
        pod("big2", cpu="1500m"),
        pod("s1", cpu="250m"),
        pod("s2", cpu="250m"),
        pod("s3", cpu="250m"),
    ]
    plan = run(pods, types=types)
    assert layout(plan) == [("two", ["big1", "s1", "s3"]), ("two", ["big2", "s2"])]


def test_generic_ephemeral_volume_follows_its_template_storage_class():
    volume = {
        "name": "scratch",
        "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "zonal"}}},
    }
    plan = run([pod("job", volumes=[volume])], snapshot=ClusterSnapshot(volumes=_catalog()))
    assert plan.nodeclaims[0].labels[wk.ZONE] == "test-zone-3"
