"""The in-memory cloud: catalogue shapes and exact launch decisions."""

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.api.nodeclaim import NodeClaim
from joiner.api.nodepool import NodePool
from joiner.api.requirements import IN, Requirement
from joiner.clock import FakeClock, to_rfc3339
from joiner.cloudprovider.fake import (
    DEFAULT_ZONES,
    FakeCloudProvider,
    benchmark_instance_types,
    new_instance_type,
)
from joiner.cloudprovider.types import (
    CloudProvider,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    Offering,
)

GI = 2**30 * 1000  # one GiB in milli-bytes
SPOT, OD = wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND


def catalogue() -> list:
    return [
        new_instance_type(
            "small",
            cpu="2",
            memory="4Gi",
            offerings=[Offering("zone-a", SPOT, 0.02), Offering("zone-a", OD, 0.05)],
        ),
        new_instance_type(
            "medium",
            cpu="4",
            memory="8Gi",
            offerings=[
                Offering("zone-a", SPOT, 0.06),
                Offering("zone-b", SPOT, 0.04),
                Offering("zone-a", OD, 0.10),
                Offering("zone-b", OD, 0.11),
            ],
        ),
        new_instance_type(
            "large-arm",
            cpu="8",
            memory="16Gi",
            arch="arm64",
            offerings=[Offering("zone-a", SPOT, 0.03), Offering("zone-b", OD, 0.20)],
        ),
    ]


def nodeclaim(
    requests: dict | None = None, requirements: list | None = None, name: str = "default-x1"
) -> NodeClaim:
    return NodeClaim.from_dict(
        {
            "metadata": {"name": name, "labels": {wk.NODEPOOL: "default"}},
            "spec": {
                "nodeClassRef": {"name": "default"},
                "requirements": requirements or [],
                "resources": {"requests": requests or {"cpu": "1"}},
            },
        }
    )


def types_in(*names: str) -> dict:
    return {"key": wk.INSTANCE_TYPE, "operator": IN, "values": list(names)}


def launched_where(claim: NodeClaim) -> tuple[str, str, str]:
    return (claim.labels[wk.INSTANCE_TYPE], claim.labels[wk.ZONE], claim.labels[wk.CAPACITY_TYPE])


# --- catalogue -------------------------------------------------------------------


def test_new_instance_type_defaults() -> None:
    it = new_instance_type("m-test", overhead={"cpu": "100m", "memory": "256Mi"})
    assert it.capacity == {"cpu": 4000, "memory": 4 * GI, "pods": 5000}
    assert it.allocatable == {"cpu": 3900, "memory": 4 * GI - 256 * 2**20 * 1000, "pods": 5000}
    assert [(o.zone, o.capacity_type, o.price) for o in it.offerings] == [
        (zone, ct, price)
        for zone in DEFAULT_ZONES
        for ct, price in ((SPOT, 0.104), (OD, 0.208))  # 4 x 0.025 + 4 GiB x 0.001
    ]
    assert it.requirements.to_dicts() == [
        {"key": wk.INSTANCE_CPU, "operator": IN, "values": ["4"]},
        {"key": wk.INSTANCE_MEMORY, "operator": IN, "values": ["4096"]},
        {"key": wk.CAPACITY_TYPE, "operator": IN, "values": [OD, SPOT]},
        {"key": wk.ARCH, "operator": IN, "values": ["amd64"]},
        {"key": wk.OS, "operator": IN, "values": ["linux"]},
        {"key": wk.INSTANCE_TYPE, "operator": IN, "values": ["m-test"]},
        {"key": wk.ZONE, "operator": IN, "values": list(DEFAULT_ZONES)},
    ]


def test_new_instance_type_extra_resources_and_labels() -> None:
    it = new_instance_type(
        "gpu", resources={"nvidia.com/gpu": "2"}, labels={wk.INSTANCE_GPU_COUNT: "2"}
    )
    assert it.capacity["nvidia.com/gpu"] == 2000
    assert it.requirements[wk.INSTANCE_GPU_COUNT] == Requirement.new(
        wk.INSTANCE_GPU_COUNT, IN, ["2"]
    )


def test_benchmark_instance_types_shapes() -> None:
    types = benchmark_instance_types(400)
    assert len(types) == 400
    assert [t.name for t in types[:3]] == ["fake-it-0", "fake-it-1", "fake-it-2"]
    assert types[0].capacity == {"cpu": 1000, "memory": 2 * GI, "pods": 10_000}
    assert types[399].capacity == {"cpu": 400_000, "memory": 800 * GI, "pods": 4_000_000}
    assert types[0].cheapest_price() == 0.027  # 1 x 0.025 + 2 GiB x 0.001
    assert len(types[5].offerings) == 6
    assert len(benchmark_instance_types(3)) == 3


# --- create ----------------------------------------------------------------------


def test_fake_is_a_cloud_provider() -> None:
    assert isinstance(FakeCloudProvider(catalogue()), CloudProvider)


def test_create_picks_the_cheapest_compatible_offering() -> None:
    cloud = FakeCloudProvider(catalogue())
    assert launched_where(cloud.create(nodeclaim())) == ("small", "zone-a", SPOT)


def test_create_skips_types_that_do_not_fit() -> None:
    cloud = FakeCloudProvider(catalogue())
    assert launched_where(cloud.create(nodeclaim({"cpu": "3"}))) == ("large-arm", "zone-a", SPOT)
    assert launched_where(cloud.create(nodeclaim({"cpu": "3", "memory": "10Gi"}))) == (
        "large-arm",
        "zone-a",
        SPOT,
    )


def test_create_respects_label_requirements() -> None:
    cloud = FakeCloudProvider(catalogue())
    amd = {"key": wk.ARCH, "operator": IN, "values": ["amd64"]}
    assert launched_where(cloud.create(nodeclaim({"cpu": "3"}, [amd]))) == (
        "medium",
        "zone-b",
        SPOT,
    )


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        ([{"key": wk.CAPACITY_TYPE, "operator": IN, "values": [OD]}], ("small", "zone-a", OD)),
        ([{"key": wk.ZONE, "operator": IN, "values": ["zone-b"]}], ("medium", "zone-b", SPOT)),
        (
            [
                {"key": wk.ZONE, "operator": IN, "values": ["zone-b"]},
                {"key": wk.CAPACITY_TYPE, "operator": "NotIn", "values": [SPOT]},
            ],
            ("medium", "zone-b", OD),
        ),
        ([types_in("medium", "small")], ("small", "zone-a", SPOT)),
        ([types_in("medium")], ("medium", "zone-b", SPOT)),
        ([types_in("unknown", "medium")], ("medium", "zone-b", SPOT)),
    ],
)
def test_create_respects_zone_capacity_type_and_candidates(
    requirements: list, expected: tuple
) -> None:
    cloud = FakeCloudProvider(catalogue())
    assert launched_where(cloud.create(nodeclaim(requirements=requirements))) == expected


def test_equal_prices_go_to_the_earlier_candidate() -> None:
    twins = [
        new_instance_type("a", offerings=[Offering("z", SPOT, 0.5)]),
        new_instance_type("b", offerings=[Offering("z", SPOT, 0.5)]),
    ]
    cloud = FakeCloudProvider(twins)
    assert launched_where(cloud.create(nodeclaim(requirements=[types_in("b", "a")])))[0] == "b"
    assert launched_where(cloud.create(nodeclaim(requirements=[types_in("a", "b")])))[0] == "a"


def test_unavailable_offerings_are_skipped() -> None:
    types = catalogue()
    types[0] = new_instance_type(
        "small",
        cpu="2",
        memory="4Gi",
        offerings=[Offering("zone-a", SPOT, 0.02, available=False), Offering("zone-a", OD, 0.05)],
    )
    cloud = FakeCloudProvider(types)
    assert launched_where(cloud.create(nodeclaim())) == ("large-arm", "zone-a", SPOT)
    cloud.unavailable.add(("large-arm", "zone-a", SPOT))
    assert launched_where(cloud.create(nodeclaim())) == ("medium", "zone-b", SPOT)
    offered = cloud.get_instance_types(NodePool.from_dict({"metadata": {"name": "default"}}))
    assert [o.available for o in offered[2].offerings] == [False, True]


def test_insufficient_capacity_falls_through_and_is_cached_for_three_minutes() -> None:
    clock = FakeClock()
    cloud = FakeCloudProvider(catalogue(), clock)
    cloud.no_capacity.update({("small", "zone-a", SPOT), ("large-arm", "zone-a", SPOT)})
    assert launched_where(cloud.create(nodeclaim())) == ("medium", "zone-b", SPOT)
    assert cloud.insufficient_capacity == {
        ("small", "zone-a", SPOT): clock.now(),
        ("large-arm", "zone-a", SPOT): clock.now(),
    }
    pool = NodePool.from_dict({"metadata": {"name": "default"}})
    small = cloud.get_instance_types(pool)[0]
    assert [(o.capacity_type, o.available) for o in small.offerings] == [(SPOT, False), (OD, True)]
    clock.advance(179)
    assert cloud.get_instance_types(pool)[0].offerings[0].available is False
    clock.advance(1)
    assert cloud.get_instance_types(pool)[0].offerings[0].available is True


def test_no_capacity_anywhere_raises() -> None:
    cloud = FakeCloudProvider(catalogue())
    cloud.no_capacity.update({("small", "zone-a", SPOT), ("small", "zone-a", OD)})
    claim = nodeclaim(requirements=[types_in("small")], name="default-ice")
    with pytest.raises(
        InsufficientCapacityError, match="no capacity for default-ice: 2 compatible offerings"
    ):
        cloud.create(claim)
    assert set(cloud.insufficient_capacity) == {("small", "zone-a", SPOT), ("small", "zone-a", OD)}
    # Now they are known to be out, nothing is even tried.
    with pytest.raises(InsufficientCapacityError, match="0 compatible offerings tried"):
        cloud.create(claim)
    assert len(cloud.create_calls) == 2
    assert cloud.instances == {}


def test_nothing_fits() -> None:
    cloud = FakeCloudProvider(catalogue())
    with pytest.raises(InsufficientCapacityError):
        cloud.create(nodeclaim({"cpu": "64"}))


def test_launched_nodeclaim_carries_the_instance() -> None:
    clock = FakeClock()
    cloud = FakeCloudProvider(catalogue(), clock)
    claim = nodeclaim()
    launched = cloud.create(claim)
    assert launched.status.provider_id == "fake:///zone-a/i-00000000000000001"
    assert launched.status.capacity == {"cpu": "2", "memory": "4Gi", "pods": "5"}
    assert launched.status.allocatable == {"cpu": "2", "memory": "4Gi", "pods": "5"}
    assert launched.labels == {
        wk.NODEPOOL: "default",
        wk.INSTANCE_TYPE: "small",
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.INSTANCE_CPU: "2",
        wk.INSTANCE_MEMORY: "4096",
        wk.ZONE: "zone-a",
        wk.CAPACITY_TYPE: SPOT,
    }
    assert claim.status.provider_id is None  # the input is not modified
    assert cloud.create_calls == [claim]
    instance = cloud.instances[launched.status.provider_id]
    assert (instance.instance_type, instance.zone, instance.capacity_type) == (
        "small",
        "zone-a",
        SPOT,
    )
    assert (instance.price, instance.launched_at) == (0.02, clock.now())
    second = cloud.create(nodeclaim(name="default-x2"))
    assert second.status.provider_id == "fake:///zone-a/i-00000000000000002"


# --- get, list, delete, drift -------------------------------------------------------


def test_get_list_and_delete() -> None:
    cloud = FakeCloudProvider(catalogue())
    first = cloud.create(nodeclaim(name="a"))
    second = cloud.create(nodeclaim(name="b"))
    assert cloud.get(first.status.provider_id).name == "a"
    assert [c.name for c in cloud.list()] == ["a", "b"]
    cloud.delete(first)
    assert [c.name for c in cloud.list()] == ["b"]
    with pytest.raises(NodeClaimNotFoundError, match=first.status.provider_id):
        cloud.get(first.status.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        cloud.delete(first)
    with pytest.raises(NodeClaimNotFoundError):
        cloud.delete(nodeclaim(name="never-launched"))
    assert cloud.get(second.status.provider_id).status.provider_id == second.status.provider_id


def test_a_listing_describes_each_instance_as_aws_lists_it() -> None:
    """Name, labels, node class, provider ID, capacity and allocatable: what garbage
    collection and an AWS listing have, not the whole launched NodeClaim."""
    cloud = FakeCloudProvider(catalogue())
    launched = cloud.create(nodeclaim(name="a"))
    [listed] = cloud.list()
    assert listed.name == "a"
    assert listed.labels == launched.labels
    assert listed.node_class_ref == launched.node_class_ref
    assert listed.status.provider_id == launched.status.provider_id
    assert (listed.status.capacity, listed.status.allocatable) == (
        launched.status.capacity,
        launched.status.allocatable,
    )
    assert listed.requirements == []
    cloud.delete(listed)
    assert cloud.list() == []


def test_returned_nodeclaims_are_copies() -> None:
    cloud = FakeCloudProvider(catalogue())
    launched = cloud.create(nodeclaim())
    launched.labels["mutated"] = "yes"
    cloud.get(launched.status.provider_id).labels["mutated-too"] = "yes"
    assert "mutated" not in cloud.get(launched.status.provider_id).labels
    assert "mutated-too" not in cloud.list()[0].labels


def test_drift_is_what_the_test_says() -> None:
    cloud = FakeCloudProvider(catalogue())
    launched = cloud.create(nodeclaim())
    assert cloud.is_drifted(launched) is None
    cloud.drifted[launched.status.provider_id] = "AMIDrift"
    assert cloud.is_drifted(launched) == "AMIDrift"
    assert cloud.is_drifted(nodeclaim(name="unlaunched")) is None


def test_resolving_a_ready_node_class_again_keeps_its_transition_times() -> None:
    clock = FakeClock()
    cloud = FakeCloudProvider(catalogue(), clock)
    nodeclass = EC2NodeClass.from_dict(testing.ec2nodeclass())
    first = cloud.resolve_nodeclass(nodeclass)
    clock.advance(300)
    nodeclass.status = first
    assert cloud.resolve_nodeclass(nodeclass) == first
    assert {c["lastTransitionTime"] for c in first["conditions"]} == {to_rfc3339(clock.now() - 300)}
