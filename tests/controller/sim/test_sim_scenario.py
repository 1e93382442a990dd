"""Loading scenarios: the typed model of a valid file, and one exact message per kind of
mistake (each names the location and the field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from joiner.api import labels as wk
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.validation import validate_object
from joiner.sim.manifests import ObjectRef
from joiner.sim.scenario import (
    AdvanceStep,
    ApplyStep,
    CapacityKey,
    CapacityStep,
    CountCheck,
    DeleteStep,
    ExpectStep,
    InterruptStep,
    ScaleStep,
    ScenarioError,
    SettleStep,
    UnhealthyStep,
    load_scenario,
)
from joiner.yamlio import MAX_INPUT_BYTES
from sim_builders import to_text


def quantity_error(text: str) -> str:
    """What joiner.api.quantity says about a bad quantity (its wording is its own)."""
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    return str(caught.value)


NOT_A_PRICE = "expected a finite number >= 0 (USD per hour), got"


def load(document: dict[str, Any]):
    return load_scenario(to_text(document))


def error_of(document: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as caught:
        load(document)
    return str(caught.value)


# --- a valid scenario ------------------------------------------------------------


def test_valid_scenario_loads_into_typed_model(scenario_doc):
    scenario = load(scenario_doc)

    assert scenario.name == "base"
    assert scenario.cluster.name == "demo"
    assert scenario.cluster.zones == ("zone-a", "zone-b")
    assert scenario.cloud.provider == "fake"
    assert (scenario.cloud.launch_delay, scenario.cloud.ready_delay) == (30.0, 10.0)
    assert scenario.cloud.prices is None
    assert scenario.settings == {}
    assert scenario.nodes == ()
    assert [o["kind"] for o in scenario.objects] == ["EC2NodeClass", "NodePool", "Deployment"]
    assert scenario.source is None
    assert scenario.steps == (
        ScaleStep(index=0, target=ObjectRef("Deployment", "default", "app"), replicas=5),
        SettleStep(index=1, name="wait", max_seconds=600.0),
        AdvanceStep(index=2, seconds=60.0),
        ExpectStep(index=3, pending_pods=CountCheck("==", 0)),
    )
    assert [s.action for s in scenario.steps] == ["scale", "settle", "advance", "expect"]
    assert scenario.max_virtual_seconds == 660.0


def test_fake_instance_type_becomes_a_provider_instance_type(scenario_doc):
    spec = load(scenario_doc).cloud.instance_types[0]
    instance_type = spec.to_instance_type()

    assert spec.pods == 110
    assert instance_type.name == "small"
    assert instance_type.capacity == {"cpu": 2000, "memory": 4 * 2**30 * 1000, "pods": 110000}
    assert instance_type.allocatable["cpu"] == 1900
    assert [(o.zone, o.capacity_type, o.price) for o in instance_type.offerings] == [
        ("zone-a", "spot", 0.03),
        ("zone-b", "on-demand", 0.08),
    ]
    assert instance_type.requirements.get_requirement(wk.ARCH).any_value() == "amd64"


def test_delays_settings_and_static_nodes(scenario_doc):
    spec = scenario_doc["spec"]
    spec["cloud"].update({"launchDelay": "1m", "readyDelay": "0s"})
    spec["settings"] = {"batch_idle_duration": "2s", "Isolated_VPC": True, "RESERVED_ENIS": 1}
    spec["nodes"] = [
        {
            "name": "system-1",
            "instanceType": "small",
            "zone": "zone-a",
            "labels": {"role": "system"},
            "taints": [{"key": "dedicated", "value": "system", "effect": "NoSchedule"}],
        }
    ]
    scenario = load(scenario_doc)

    assert (scenario.cloud.launch_delay, scenario.cloud.ready_delay) == (60.0, 0.0)
    assert scenario.settings == {
        "BATCH_IDLE_DURATION": "2s",
        "ISOLATED_VPC": "true",
        "RESERVED_ENIS": "1",
    }
    (static,) = scenario.nodes
    assert (static.name, static.instance_type, static.zone) == ("system-1", "small", "zone-a")
    assert static.capacity_type == "on-demand"
    assert static.labels == {"role": "system"}
    assert static.taints == ({"key": "dedicated", "value": "system", "effect": "NoSchedule"},)


def test_every_step_kind(scenario_doc):
    new_deployment = dict(scenario_doc["spec"]["objects"][2], metadata={"name": "other"})
    scenario_doc["spec"]["steps"] = [
        {"apply": [new_deployment]},
        {"scale": {"kind": "Deployment", "name": "other", "namespace": "default", "replicas": 0}},
        {
            "delete": [
                {"kind": "Deployment", "name": "other"},
                {"kind": "NodePool", "name": "default"},
            ]
        },
        {"interrupt": {"node": "system-1", "kind": "rebalance"}},
        {"interrupt": {"nodeSelector": {"pool": "a"}, "count": 2, "kind": "spot-interruption"}},
        {"capacity": {"unavailable": [{"instanceType": "small", "zone": "zone-a"}], "for": "10m"}},
        {"capacity": {"unavailable": [{"instanceType": "small", "capacityType": "spot"}]}},
        {
            "expect": {
                "podsRunning": ">=3",
                "nodes": {"managed": "<2", "ready": 1},
                "nodeclaims": "> 0",
                "nodesByPool": {"default": 1},
                "nodesByZone": {"zone-a": "<=1"},
                "nodesByInstanceType": {"small": 1},
                "nodesByCapacityType": {"spot": 0},
                "costPerHourAtMost": 1,
                "pendingReason": "limits",
            }
        },
        {"expect": {"nodes": 3}},
    ]
    steps = load(scenario_doc).steps

    in_default = dict(new_deployment, metadata={"name": "other", "namespace": "default"})
    assert steps[0] == ApplyStep(index=0, manifests=(in_default,))
    assert steps[1] == ScaleStep(
        index=1, target=ObjectRef("Deployment", "default", "other"), replicas=0
    )
    assert steps[2] == DeleteStep(
        index=2,
        targets=(
            ObjectRef("Deployment", "default", "other"),
            ObjectRef("NodePool", None, "default"),
        ),
    )
    assert steps[3] == InterruptStep(index=3, kind="rebalance", node="system-1")
    assert steps[4] == InterruptStep(
        index=4, kind="spot-interruption", node_selector={"pool": "a"}, count=2
    )
    assert steps[5] == CapacityStep(
        index=5, unavailable=(CapacityKey("small", "zone-a", None),), duration=600.0
    )
    assert steps[6] == CapacityStep(
        index=6, unavailable=(CapacityKey("small", None, "spot"),), duration=None
    )
    assert steps[7] == ExpectStep(
        index=7,
        pods_running=CountCheck(">=", 3),
        nodes={"managed": CountCheck("<", 2), "ready": CountCheck("==", 1)},
        nodeclaims=CountCheck(">", 0),
        nodes_by_pool={"default": CountCheck("==", 1)},
        nodes_by_zone={"zone-a": CountCheck("<=", 1)},
        nodes_by_instance_type={"small": CountCheck("==", 1)},
        nodes_by_capacity_type={"spot": CountCheck("==", 0)},
        cost_per_hour_at_most=1.0,
        pending_reason="limits",
    )
    assert steps[8] == ExpectStep(index=8, nodes={"total": CountCheck("==", 3)})


def test_file_with_price_table_relative_to_the_scenario(tmp_path: Path, scenario_doc):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "prices.json").write_text(
        json.dumps({"prices": {"m5.large": 0.096, "c5.xlarge": 0.17}})
    )
    cloud = scenario_doc["spec"]["cloud"]
    del cloud["instanceTypes"]
    cloud.update({"provider": "aws", "prices": "data/prices.json"})
    path = tmp_path / "scenario.yaml"
    path.write_text(to_text(scenario_doc))

    scenario = load_scenario(path)

    assert scenario.source == path
    assert scenario.cloud.prices_path == tmp_path / "data" / "prices.json"
    assert scenario.cloud.prices == {"m5.large": 0.096, "c5.xlarge": 0.17}
    assert load_scenario(str(path)).cloud.prices == scenario.cloud.prices


# --- errors: the document --------------------------------------------------------


def test_unreadable_file(tmp_path: Path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ScenarioError) as caught:
        load_scenario(missing)
    assert str(caught.value) == "cannot read the scenario: No such file or directory"


def test_invalid_yaml_names_line_and_column():
    with pytest.raises(ScenarioError) as caught:
        load_scenario("apiVersion: joiner.sim/v1\nkind: [Scenario\n")
    assert str(caught.value) == (
        "not valid YAML: expected ',' or ']', but got '<stream end>' (line 3, column 1)"
    )


def test_exit_code_for_bad_input_is_2():
    assert ScenarioError.exit_code == 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "apiVersion",
            "joiner.sim/v2",
            "apiVersion: unsupported 'joiner.sim/v2' (expected joiner.sim/v1)",
        ),
        ("kind", "Simulation", "kind: expected Scenario, got 'Simulation'"),
        ("metadata", {}, "metadata.name: required"),
        (
            "metadata",
            {"name": "x", "namespace": "y"},
            "metadata: unknown field 'namespace' (expected one of name, labels, annotations)",
        ),
        ("spec", [], "spec: expected a mapping, got a list"),
        (
            "status",
            {},
            "scenario: unknown field 'status' (expected one of apiVersion, kind, metadata, spec)",
        ),
    ],
)
def test_top_level_errors(scenario_doc, field, value, message):
    scenario_doc[field] = value
    assert error_of(scenario_doc) == message


def test_empty_document():
    with pytest.raises(ScenarioError) as caught:
        load_scenario("# nothing here\n")
    assert str(caught.value) == "empty (expected a Scenario document)"


def test_objects_may_be_empty(scenario_doc):
    scenario_doc["spec"]["objects"] = None
    scenario_doc["spec"]["steps"] = [{"advance": "1m"}]
    assert load(scenario_doc).objects == ()


def test_not_a_mapping():
    with pytest.raises(ScenarioError) as caught:
        load_scenario("- a\n- b\n")
    assert str(caught.value) == "scenario: expected a mapping, got a list"


# --- errors: cluster, cloud, settings, nodes ---------------------------------------


def test_unknown_spec_field(scenario_doc):
    scenario_doc["spec"]["node"] = []
    assert error_of(scenario_doc) == (
        "spec: unknown field 'node' (expected one of cluster, cloud, settings, nodes, objects, "
        "steps, limits)"
    )


def test_cluster_needs_zones(scenario_doc):
    scenario_doc["spec"]["cluster"]["zones"] = []
    assert error_of(scenario_doc) == "spec.cluster.zones: at least one zone is required"


def test_cluster_needs_a_name(scenario_doc):
    del scenario_doc["spec"]["cluster"]["name"]
    assert error_of(scenario_doc) == "spec.cluster.name: required"


def test_provider_must_be_aws_or_fake(scenario_doc):
    scenario_doc["spec"]["cloud"]["provider"] = "gcp"
    assert error_of(scenario_doc) == "spec.cloud.provider: must be aws or fake"


def test_provider_is_required(scenario_doc):
    del scenario_doc["spec"]["cloud"]["provider"]
    assert error_of(scenario_doc) == "spec.cloud.provider: required (aws or fake)"


def test_fake_needs_instance_types(scenario_doc):
    del scenario_doc["spec"]["cloud"]["instanceTypes"]
    assert error_of(scenario_doc) == "spec.cloud.instanceTypes: required when provider is fake"


def test_aws_rejects_instance_types(scenario_doc):
    scenario_doc["spec"]["cloud"]["provider"] = "aws"
    assert error_of(scenario_doc) == (
        "spec.cloud.instanceTypes: only allowed when provider is fake (aws uses the real catalogue)"
    )


def aws_cloud(scenario_doc: dict[str, Any], **fields: Any) -> None:
    cloud = scenario_doc["spec"]["cloud"]
    del cloud["instanceTypes"]
    cloud.update({"provider": "aws", **fields})


def test_enforce_iam_is_read_for_aws(scenario_doc):
    assert load(scenario_doc).cloud.enforce_iam is False
    aws_cloud(scenario_doc, enforceIAM=True)
    assert load(scenario_doc).cloud.enforce_iam is True


@pytest.mark.parametrize(
    ("provider", "value", "message"),
    [
        ("aws", "yes", "spec.cloud.enforceIAM: must be true or false"),
        ("fake", True, "spec.cloud.enforceIAM: only used with provider aws"),
    ],
)
def test_enforce_iam_errors(scenario_doc, provider, value, message):
    if provider == "aws":
        aws_cloud(scenario_doc)
    scenario_doc["spec"]["cloud"]["enforceIAM"] = value
    assert error_of(scenario_doc) == message


def test_enforce_iam_does_not_take_interruptions(scenario_doc):
    aws_cloud(scenario_doc, enforceIAM=True)
    set_step(scenario_doc, 0, {"interrupt": {"node": "system-1", "kind": "rebalance"}})
    assert error_of(scenario_doc) == (
        "spec.steps[0].interrupt: not with spec.cloud.enforceIAM (the simulated interruption "
        "queue and its events are not principals of the account)"
    )


def test_fake_rejects_a_price_table(scenario_doc):
    scenario_doc["spec"]["cloud"]["prices"] = "prices.json"
    assert error_of(scenario_doc) == (
        "spec.cloud.prices: only used with provider aws (fake offerings carry their own prices)"
    )


def test_price_table_errors(tmp_path: Path, scenario_doc):
    cloud = scenario_doc["spec"]["cloud"]
    del cloud["instanceTypes"]
    cloud.update({"provider": "aws", "prices": "prices.json"})
    path = tmp_path / "scenario.yaml"
    path.write_text(to_text(scenario_doc))
    prices = tmp_path / "prices.json"

    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"spec.cloud.prices: cannot read '{prices}': No such file or directory"
    )

    prices.write_text(json.dumps({"m5.large": 0.096}))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"spec.cloud.prices: '{prices}' has no \"prices\" object {{type: usd_per_hour}}"
    )

    prices.write_text(json.dumps({"prices": {"m5.large": "cheap"}}))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"spec.cloud.prices: '{prices}' prices.m5.large: expected a finite number >= 0 "
        "(USD per hour), got 'cheap'"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"prices": {"m5.large": NaN}}', f"prices.m5.large: {NOT_A_PRICE} nan"),
        ('{"prices": {"m5.large": Infinity}}', f"prices.m5.large: {NOT_A_PRICE} inf"),
        ('{"prices": {"m5.large": 1e400}}', f"prices.m5.large: {NOT_A_PRICE} inf"),
        ('{"prices": {"a": 1, "a": 2}}', "is not valid JSON: duplicate key 'a'"),
        ("[" * 100_000 + "]" * 100_000, "is nested too deeply"),
    ],
    ids=["nan", "infinity", "overflow", "duplicate-key", "deep"],
)
def test_price_table_values_and_shape(tmp_path: Path, scenario_doc, content, problem):
    cloud = scenario_doc["spec"]["cloud"]
    del cloud["instanceTypes"]
    cloud.update({"provider": "aws", "prices": "prices.json"})
    (tmp_path / "prices.json").write_text(content)
    path = tmp_path / "scenario.yaml"
    path.write_text(to_text(scenario_doc))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == f"spec.cloud.prices: '{tmp_path / 'prices.json'}' {problem}"


def test_a_price_table_over_the_size_cap_is_refused(tmp_path: Path, scenario_doc):
    # (that reading stops at the cap, even of /dev/zero, is tests/controller/test_yamlio.py's)
    prices = tmp_path / "prices.json"
    prices.write_text('{"prices": {}}' + " " * MAX_INPUT_BYTES)
    cloud = scenario_doc["spec"]["cloud"]
    del cloud["instanceTypes"]
    cloud.update({"provider": "aws", "prices": str(prices)})
    assert error_of(scenario_doc) == (
        f"spec.cloud.prices: cannot read '{prices}': larger than 4 MiB, the limit on input size"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "launchDelay",
            "soon",
            "spec.cloud.launchDelay: invalid duration 'soon' (expected e.g. 30s, 5m, 1h)",
        ),
        (
            "readyDelay",
            "Never",
            "spec.cloud.readyDelay: invalid duration 'Never' (expected e.g. 30s, 5m, 1h)",
        ),
        (
            "launchDelay",
            30,
            "spec.cloud.launchDelay: invalid duration '30' (expected e.g. 30s, 5m, 1h)",
        ),
    ],
)
def test_delay_errors(scenario_doc, field, value, message):
    scenario_doc["spec"]["cloud"][field] = value
    assert error_of(scenario_doc) == message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cpu": "two"}, f"spec.cloud.instanceTypes[0].cpu: {quantity_error('two')}"),
        ({"memory": None}, "spec.cloud.instanceTypes[0].memory: required"),
        ({"pods": 0}, "spec.cloud.instanceTypes[0].pods: expected an integer >= 1, got 0"),
        ({"arch": "x86"}, "spec.cloud.instanceTypes[0].arch: must be one of amd64, arm64"),
        (
            {"resources": {"nvidia.com/gpu": "1x"}},
            f"spec.cloud.instanceTypes[0].resources.nvidia.com/gpu: {quantity_error('1x')}",
        ),
        (
            {"gpus": 1},
            "spec.cloud.instanceTypes[0]: unknown field 'gpus' (expected one of name, cpu, "
            "memory, pods, arch, os, resources, overhead, labels, offerings)",
        ),
        ({"offerings": []}, "spec.cloud.instanceTypes[0].offerings: list at least one offering"),
    ],
)
def test_instance_type_errors(scenario_doc, change, message):
    scenario_doc["spec"]["cloud"]["instanceTypes"][0].update(change)
    assert error_of(scenario_doc) == message


def test_offering_errors(scenario_doc):
    offerings = scenario_doc["spec"]["cloud"]["instanceTypes"][0]["offerings"]
    offerings[1]["capacityType"] = "reserved"
    assert error_of(scenario_doc) == (
        "spec.cloud.instanceTypes[0].offerings[1].capacityType: must be one of spot, on-demand"
    )
    offerings[1].update(capacityType="spot", zone="zone-a")
    assert error_of(scenario_doc) == (
        "spec.cloud.instanceTypes[0].offerings: duplicate offering 'zone-a/spot'"
    )
    offerings[1].update(zone="zone-b", price=-1)
    assert error_of(scenario_doc) == (
        "spec.cloud.instanceTypes[0].offerings[1].price: expected a finite number >= 0 "
        "(USD per hour), got -1"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cpu": "-4"}, "cpu: must be more than 0, got '-4'"),
        ({"cpu": 0}, "cpu: must be more than 0, got '0'"),
        ({"cpu": "1e9"}, "cpu: must be at most 10000, got '1e9'"),
        ({"memory": "0Gi"}, "memory: must be more than 0, got '0Gi'"),
        ({"memory": "1Ei"}, "memory: must be at most 64Ti, got '1Ei'"),
        ({"pods": 10**9}, "pods: must be at most 10000, got 1000000000"),
        (
            {"resources": {"example.com/x": "-1"}},
            "resources.example.com/x: must be at least 0, got '-1'",
        ),
        (
            {"resources": {"example.com/x": "1E"}},
            "resources.example.com/x: must be at most 64Ti, got '1E'",
        ),
        ({"overhead": {"cpu": "-100m"}}, "overhead.cpu: must be at least 0, got '-100m'"),
        ({"overhead": {"cpu": "3"}}, "overhead.cpu: must be at most 2, got '3'"),
    ],
)
def test_catalogue_amounts_must_be_sane(scenario_doc, change, message):
    # the base type has cpu 2, memory 4Gi
    scenario_doc["spec"]["cloud"]["instanceTypes"][0].update(change)
    assert error_of(scenario_doc) == f"spec.cloud.instanceTypes[0].{message}"


@pytest.mark.parametrize(
    ("price", "shown"),
    [
        (float("inf"), "inf"),
        (float("nan"), "nan"),
        (-0.5, "-0.5"),
        ("0.1", "'0.1'"),
        (True, "True"),
    ],
)
def test_offering_prices_must_be_finite_and_not_negative(scenario_doc, price, shown):
    scenario_doc["spec"]["cloud"]["instanceTypes"][0]["offerings"][0]["price"] = price
    assert error_of(scenario_doc) == (
        f"spec.cloud.instanceTypes[0].offerings[0].price: {NOT_A_PRICE} {shown}"
    )


def test_offering_prices_have_a_ceiling(scenario_doc):
    scenario_doc["spec"]["cloud"]["instanceTypes"][0]["offerings"][0]["price"] = 10**40
    assert error_of(scenario_doc) == (
        "spec.cloud.instanceTypes[0].offerings[0].price: must be at most 10000 (USD per hour), "
        f"got {10**40}"
    )


def test_a_cost_limit_must_be_finite(scenario_doc):
    set_step(scenario_doc, 0, {"expect": {"costPerHourAtMost": float("inf")}})
    assert error_of(scenario_doc) == f"spec.steps[0].expect.costPerHourAtMost: {NOT_A_PRICE} inf"


def test_duplicate_instance_type(scenario_doc):
    types = scenario_doc["spec"]["cloud"]["instanceTypes"]
    types.append(dict(types[0]))
    assert error_of(scenario_doc) == "spec.cloud.instanceTypes: duplicate instance type 'small'"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"batch-idle": "1s"},
            "spec.settings: invalid name 'batch-idle' (settings are environment names such "
            "as BATCH_IDLE_DURATION)",
        ),
        ({"cluster_name": "x"}, "spec.settings.CLUSTER_NAME: comes from spec.cluster.name"),
        (
            {"LOG_LEVEL": "debug", "log_level": "info"},
            "spec.settings.LOG_LEVEL: set twice (names are case-insensitive)",
        ),
        (
            {"FEATURE_GATES": ["a"]},
            "spec.settings.FEATURE_GATES: expected a string, number or boolean",
        ),
    ],
)
def test_settings_errors(scenario_doc, settings, message):
    scenario_doc["spec"]["settings"] = settings
    assert error_of(scenario_doc) == message


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"name": "s", "instanceType": "huge", "zone": "zone-a"},
            "spec.nodes[0].instanceType: 'huge' is not in spec.cloud.instanceTypes",
        ),
        (
            {"name": "s", "instanceType": "small", "zone": "mars-1a"},
            "spec.nodes[0].zone: 'mars-1a' is not a zone of the cluster or catalogue",
        ),
        (
            {
                "name": "s",
                "instanceType": "small",
                "zone": "zone-a",
                "taints": [{"key": "k", "effect": "Never"}],
            },
            "spec.nodes[0].taints[0].effect: must be one of NoSchedule, PreferNoSchedule, "
            "NoExecute",
        ),
        ({"instanceType": "small", "zone": "zone-a"}, "spec.nodes[0].name: required"),
    ],
)
def test_static_node_errors(scenario_doc, entry, message):
    scenario_doc["spec"]["nodes"] = [entry]
    assert error_of(scenario_doc) == message


def test_duplicate_static_node(scenario_doc):
    entry = {"name": "s", "instanceType": "small", "zone": "zone-a"}
    scenario_doc["spec"]["nodes"] = [entry, entry]
    assert error_of(scenario_doc) == "spec.nodes: duplicate node 's'"


# --- errors: manifests -------------------------------------------------------------


def test_nodepool_the_api_rejects(scenario_doc):
    nodepool = scenario_doc["spec"]["objects"][1]
    nodepool["spec"]["limits"] = {"cpu": "lots"}
    (first, *_) = validate_object(nodepool)

    message = error_of(scenario_doc)

    assert message == f"spec.objects[1] (NodePool/default): {first}"
    assert message.startswith("spec.objects[1] (NodePool/default): spec.limits")
    assert "lots" in message


def test_ec2nodeclass_the_api_rejects(scenario_doc):
    del scenario_doc["spec"]["objects"][0]["spec"]["subnetSelectorTerms"]
    (first, *_) = validate_object(scenario_doc["spec"]["objects"][0])
    assert error_of(scenario_doc) == f"spec.objects[0] (EC2NodeClass/default): {first}"


def test_capacity_buffer_and_pod_template_are_checked_as_the_api_server_does(scenario_doc):
    buffer = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "spare"},
        "spec": {
            "podTemplateRef": {"name": "chunk"},
            "scalableRef": {"kind": "Deployment", "name": "app"},
            "replicas": 1,
        },
    }
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "chunk"},
        "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}
        },
    }
    scenario_doc["spec"]["objects"].append(buffer)
    assert error_of(scenario_doc) == (
        "spec.objects[3] (CapacityBuffer/spare): spec: You must define either PodTemplateRef "
        "or ScalableRef, but not both"
    )
    del buffer["spec"]["scalableRef"]
    scenario_doc["spec"]["objects"].append(template)
    assert error_of(scenario_doc) == (
        "spec.objects[4] (PodTemplate/chunk): template.spec.containers[0].resources.requests."
        "cpu: invalid quantity 'lots' (expected a number with an optional suffix "
        "Ki|Mi|Gi|Ti|Pi|Ei, n|u|m|k|M|G|T|P|E or an exponent such as e3)"
    )


def test_unsupported_kind(scenario_doc):
    scenario_doc["spec"]["objects"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    )
    assert error_of(scenario_doc) == (
        "spec.objects[3]: kind: unsupported kind 'ConfigMap' (the simulator emulates NodePool, "
        "EC2NodeClass, NodeClaim, NodeOverlay, CapacityBuffer, Namespace, Pod, PodTemplate, "
        "Deployment, ReplicaSet, DaemonSet, Job, PodDisruptionBudget, PersistentVolumeClaim, "
        "PersistentVolume, StorageClass)"
    )


def test_unserved_api_version(scenario_doc):
    scenario_doc["spec"]["objects"][2]["apiVersion"] = "apps/v1beta1"
    assert error_of(scenario_doc) == (
        "spec.objects[2]: apiVersion: 'apps/v1beta1' is not served for Deployment "
        "(expected apps/v1)"
    )


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({}, "spec.objects[2]: metadata.name: required"),
        (
            {"name": "App_1"},
            "spec.objects[2]: metadata.name: invalid name 'App_1' (lower-case letters, "
            "digits, '-' and '.')",
        ),
    ],
)
def test_manifest_metadata(scenario_doc, metadata, message):
    scenario_doc["spec"]["objects"][2]["metadata"] = metadata
    assert error_of(scenario_doc) == message


def test_cluster_scoped_kind_takes_no_namespace(scenario_doc):
    scenario_doc["spec"]["objects"][1]["metadata"]["namespace"] = "default"
    assert error_of(scenario_doc) == (
        "spec.objects[1]: metadata.namespace: NodePool is cluster-scoped"
    )


def test_selector_must_match_template(scenario_doc):
    scenario_doc["spec"]["objects"][2]["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    assert error_of(scenario_doc) == (
        "spec.objects[2] (Deployment/app): spec.selector: does not match "
        "spec.template.metadata.labels"
    )


def test_container_quantities_are_checked(scenario_doc):
    container = scenario_doc["spec"]["objects"][2]["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = "half"
    assert error_of(scenario_doc) == (
        "spec.objects[2] (Deployment/app): "
        f"spec.template.spec.containers[0].resources.requests.cpu: {quantity_error('half')}"
    )


def test_pod_needs_containers(scenario_doc):
    scenario_doc["spec"]["objects"].append(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    )
    assert error_of(scenario_doc) == (
        "spec.objects[3] (Pod/p): spec.containers: at least one container is required"
    )


def test_manifest_fields_are_decoded_as_the_api_server_decodes_them(scenario_doc):
    template = scenario_doc["spec"]["objects"][2]["spec"]["template"]["spec"]
    template["containers"][0]["imagePullPolicyy"] = "Always"
    assert error_of(scenario_doc) == (
        "spec.objects[2] (Deployment/app): strict decoding error: unknown field "
        '"spec.template.spec.containers[0].imagePullPolicyy"'
    )
    del template["containers"][0]["imagePullPolicyy"]
    template["terminationGracePeriodSeconds"] = "30s"
    assert error_of(scenario_doc) == (
        "spec.objects[2] (Deployment/app): json: cannot unmarshal string into Go struct field "
        "PodSpec.spec.template.spec.terminationGracePeriodSeconds of type int64"
    )


def test_only_the_built_in_priority_classes_exist(scenario_doc):
    template = scenario_doc["spec"]["objects"][2]["spec"]["template"]["spec"]
    template["priorityClassName"] = "high"
    assert error_of(scenario_doc) == (
        "spec.objects[2] (Deployment/app): spec.template.spec.priorityClassName: no "
        "PriorityClass 'high' (the simulated cluster has system-cluster-critical and "
        "system-node-critical)"
    )


def test_negative_replicas(scenario_doc):
    scenario_doc["spec"]["objects"][2]["spec"]["replicas"] = -1
    assert error_of(scenario_doc) == (
        "spec.objects[2] (Deployment/app): spec.replicas: must be a non-negative integer, got -1"
    )


def test_pdb_with_both_budgets(scenario_doc):
    scenario_doc["spec"]["objects"].append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb"},
            "spec": {"minAvailable": 1, "maxUnavailable": "50%", "selector": {}},
        }
    )
    assert error_of(scenario_doc) == (
        "spec.objects[3] (PodDisruptionBudget/pdb): spec: minAvailable and maxUnavailable "
        "cannot both be set"
    )


def test_same_object_twice_in_one_list(scenario_doc):
    scenario_doc["spec"]["objects"].append(scenario_doc["spec"]["objects"][2])
    assert error_of(scenario_doc) == (
        "spec.objects[3] (Deployment/app): Deployment default/app appears twice in this list"
    )


def test_apply_manifests_are_checked(scenario_doc):
    scenario_doc["spec"]["steps"].insert(
        0, {"apply": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}]}
    )
    assert error_of(scenario_doc).startswith(
        "spec.steps[0].apply[0]: kind: unsupported kind 'Service'"
    )


# --- errors: steps -------------------------------------------------------------------


def set_step(document: dict[str, Any], index: int, step: Any) -> None:
    document["spec"]["steps"][index] = step


def test_invalid_duration(scenario_doc):
    scenario_doc["spec"]["steps"].append({"advance": "5x"})
    scenario_doc["spec"]["steps"][3], scenario_doc["spec"]["steps"][4] = (
        scenario_doc["spec"]["steps"][4],
        scenario_doc["spec"]["steps"][3],
    )
    assert error_of(scenario_doc) == (
        "spec.steps[3].advance: invalid duration '5x' (expected e.g. 30s, 5m, 1h)"
    )


def test_unknown_action(scenario_doc):
    set_step(scenario_doc, 2, {"scal": {"kind": "Deployment", "name": "app", "replicas": 1}})
    assert error_of(scenario_doc) == (
        "spec.steps[2]: unknown action 'scal' (expected one of apply, delete, scale, advance, "
        "settle, interrupt, unhealthy, capacity, restart, leader, fault, expect)"
    )


def test_two_actions_in_one_step(scenario_doc):
    set_step(scenario_doc, 1, {"advance": "1m", "settle": "5m"})
    assert error_of(scenario_doc) == (
        "spec.steps[1]: a step has exactly one action, found 2 (advance, settle)"
    )


def test_step_without_action(scenario_doc):
    set_step(scenario_doc, 1, {"name": "nothing"})
    assert error_of(scenario_doc) == "spec.steps[1]: a step has exactly one action, found 0"


def test_steps_are_required(scenario_doc):
    scenario_doc["spec"]["steps"] = []
    assert error_of(scenario_doc) == "spec.steps: list at least one step"


def test_settle_needs_a_positive_bound(scenario_doc):
    set_step(scenario_doc, 1, {"settle": "0s"})
    assert error_of(scenario_doc) == "spec.steps[1].settle: must be longer than 0s"


def test_virtual_time_cap(scenario_doc):
    scenario_doc["spec"]["steps"] += [{"advance": "100h"}, {"settle": "100h"}]
    assert error_of(scenario_doc) == (
        "spec.steps: advance and settle steps add up to 200h11m, more than the 168h (7 days) "
        "cap on virtual time"
    )


def test_scale_of_a_missing_object(scenario_doc):
    set_step(scenario_doc, 0, {"scale": {"kind": "Deployment", "name": "nope", "replicas": 1}})
    assert error_of(scenario_doc) == (
        "spec.steps[0].scale: Deployment default/nope does not exist at this step "
        "(create it in spec.objects or an earlier apply)"
    )


def test_scale_after_delete(scenario_doc):
    scenario_doc["spec"]["steps"].insert(0, {"delete": [{"kind": "Deployment", "name": "app"}]})
    assert error_of(scenario_doc) == (
        "spec.steps[1].scale: Deployment default/app does not exist at this step "
        "(create it in spec.objects or an earlier apply)"
    )


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (
            {"kind": "Job", "name": "app", "replicas": 1},
            "spec.steps[0].scale.kind: must be one of Deployment, ReplicaSet, NodePool",
        ),
        (
            {"kind": "Deployment", "name": "app", "replicas": -2},
            "spec.steps[0].scale.replicas: expected a non-negative integer, got -2",
        ),
        (
            {"kind": "Deployment", "name": "app", "replicas": 1, "size": 2},
            "spec.steps[0].scale: unknown field 'size' (expected one of kind, name, "
            "namespace, replicas)",
        ),
    ],
)
def test_scale_errors(scenario_doc, scale, message):
    set_step(scenario_doc, 0, {"scale": scale})
    assert error_of(scenario_doc) == message


@pytest.mark.parametrize(
    ("interrupt", "message"),
    [
        (
            {"node": "n", "kind": "eviction"},
            "spec.steps[0].interrupt.kind: must be one of spot-interruption, rebalance, "
            "scheduled-change, stopping, stopped, shutting-down, terminated, "
            "capacity-reservation-interruption",
        ),
        (
            {"node": "n", "nodeSelector": {"a": "b"}, "kind": "stopped"},
            "spec.steps[0].interrupt: give either node or nodeSelector",
        ),
        ({"kind": "stopped"}, "spec.steps[0].interrupt: give either node or nodeSelector"),
        (
            {"node": "n", "count": 1, "kind": "stopped"},
            "spec.steps[0].interrupt.count: only with nodeSelector",
        ),
        (
            {"nodeSelector": {"a": "b"}, "count": 0, "kind": "stopped"},
            "spec.steps[0].interrupt.count: expected an integer >= 1, got 0",
        ),
        (
            {"nodeSelector": {}, "kind": "stopped"},
            "spec.steps[0].interrupt.nodeSelector: give at least one label",
        ),
    ],
)
def test_interrupt_errors(scenario_doc, interrupt, message):
    set_step(scenario_doc, 0, {"interrupt": interrupt})
    assert error_of(scenario_doc) == message


def test_unhealthy_steps(scenario_doc):
    """A node condition and status (YAML's unquoted false taken as written), for a while
    or for good, on one node or on the nodes a selector picks."""
    set_step(scenario_doc, 0, {"unhealthy": {"node": "n", "condition": "Ready", "status": False}})
    set_step(
        scenario_doc,
        1,
        {
            "unhealthy": {
                "nodeSelector": {"pool": "a"},
                "count": 2,
                "condition": "KernelReady",
                "status": "Unknown",
                "reason": "KernelBug",
                "for": "20m",
            }
        },
    )
    steps = load(scenario_doc).steps
    assert steps[0] == UnhealthyStep(index=0, node="n", condition="Ready", status="False")
    assert steps[1] == UnhealthyStep(
        index=1,
        node_selector={"pool": "a"},
        count=2,
        condition="KernelReady",
        status="Unknown",
        reason="KernelBug",
        duration=1200.0,
    )


@pytest.mark.parametrize(
    ("unhealthy", "message"),
    [
        ({"node": "n", "status": "False"}, "spec.steps[0].unhealthy.condition: required"),
        (
            {"node": "n", "condition": "Ready", "status": "Broken"},
            "spec.steps[0].unhealthy.status: must be one of True, False, Unknown, got 'Broken'",
        ),
        (
            {"node": "n", "condition": "Ready", "status": "False", "for": "0s"},
            "spec.steps[0].unhealthy.for: must be longer than 0s",
        ),
        (
            {"condition": "Ready", "status": "False"},
            "spec.steps[0].unhealthy: give either node or nodeSelector",
        ),
        (
            {"node": "n", "condition": "Ready", "status": "False", "since": "1h"},
            "spec.steps[0].unhealthy: unknown field 'since' (expected one of node, nodeSelector, "
            "count, condition, status, reason, for)",
        ),
    ],
)
def test_unhealthy_errors(scenario_doc, unhealthy, message):
    set_step(scenario_doc, 0, {"unhealthy": unhealthy})
    assert error_of(scenario_doc) == message


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        ({"unavailable": []}, "spec.steps[0].capacity.unavailable: list at least one offering"),
        (
            {"unavailable": [{"instanceType": "huge"}]},
            "spec.steps[0].capacity.unavailable[0].instanceType: 'huge' is not in "
            "spec.cloud.instanceTypes",
        ),
        (
            {"unavailable": [{"instanceType": "small", "zone": "zone-z"}]},
            "spec.steps[0].capacity.unavailable[0].zone: 'zone-z' is not a zone of the "
            "cluster or catalogue",
        ),
        (
            {"unavailable": [{"instanceType": "small", "capacityType": "cheap"}]},
            "spec.steps[0].capacity.unavailable[0].capacityType: must be one of spot, on-demand",
        ),
        (
            {"unavailable": [{"instanceType": "small"}], "for": "ever"},
            "spec.steps[0].capacity.for: invalid duration 'ever' (expected e.g. 30s, 5m, 1h)",
        ),
    ],
)
def test_capacity_errors(scenario_doc, capacity, message):
    set_step(scenario_doc, 0, {"capacity": capacity})
    assert error_of(scenario_doc) == message


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        (
            {},
            "spec.steps[0].expect: give at least one of pendingPods, podsRunning, nodes, "
            "nodeclaims, nodesByPool, nodesByInstanceType, nodesByZone, nodesByCapacityType, "
            "costPerHourAtMost, pendingReason, unclaimedInstances",
        ),
        (
            {"pending": 0},
            "spec.steps[0].expect: unknown field 'pending' (expected one of pendingPods, "
            "podsRunning, nodes, nodeclaims, nodesByPool, nodesByInstanceType, nodesByZone, "
            "nodesByCapacityType, costPerHourAtMost, pendingReason, unclaimedInstances)",
        ),
        (
            {"pendingPods": "few"},
            "spec.steps[0].expect.pendingPods: invalid count 'few' (expected a number, or a "
            "comparison such as '>=2' or '<5')",
        ),
        (
            {"pendingPods": -1},
            "spec.steps[0].expect.pendingPods: invalid count -1 (expected a number, or a "
            "comparison such as '>=2' or '<5')",
        ),
        (
            {"nodes": {"spot": 1}},
            "spec.steps[0].expect.nodes: unknown field 'spot' (expected one of total, "
            "managed, unmanaged, ready)",
        ),
        (
            {"nodesByPool": {"default": "=>1"}},
            "spec.steps[0].expect.nodesByPool.default: invalid count '=>1' (expected a "
            "number, or a comparison such as '>=2' or '<5')",
        ),
        (
            {"costPerHourAtMost": "1$"},
            "spec.steps[0].expect.costPerHourAtMost: expected a finite number >= 0 "
            "(USD per hour), got '1$'",
        ),
    ],
)
def test_expect_errors(scenario_doc, expect, message):
    set_step(scenario_doc, 0, {"expect": expect})
    assert error_of(scenario_doc) == message


def test_step_name_must_be_a_string(scenario_doc):
    set_step(scenario_doc, 1, {"name": 5, "settle": "1m"})
    assert error_of(scenario_doc) == "spec.steps[1].name: expected a non-empty string, got 5"


RESERVATION = {"instanceType": "m5.large", "zone": "zone-a", "count": 2}


def test_capacity_reservations_are_read_for_aws(scenario_doc):
    aws_cloud(
        scenario_doc,
        capacityReservations=[
            RESERVATION,
            {**RESERVATION, "id": "cr-0123abc", "type": "capacity-block", "tags": {"team": "ml"}},
        ],
    )
    first, second = load(scenario_doc).cloud.capacity_reservations
    assert (first.id, first.instance_type, first.zone, first.count) == (
        None,
        "m5.large",
        "zone-a",
        2,
    )
    assert (first.type, first.match_criteria, dict(first.tags)) == ("default", "open", {})
    assert (second.id, second.type, dict(second.tags)) == (
        "cr-0123abc",
        "capacity-block",
        {"team": "ml"},
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**RESERVATION, "id": "r-1"}, "[0].id: expected cr- and lowercase letters or digits"),
        ({**RESERVATION, "zone": "zone-z"}, "[0].zone: 'zone-z' is not a zone of the cluster"),
        ({**RESERVATION, "count": 0}, "[0].count: expected an integer >= 1, got 0"),
        ({**RESERVATION, "type": "block"}, "[0].type: must be one of default, capacity-block"),
        ({**RESERVATION, "size": 1}, "[0]: unknown field"),
        ({"zone": "zone-a", "count": 1}, "[0].instanceType: "),
        ({**RESERVATION, "endsAfter": "soon"}, "[0].endsAfter: invalid duration 'soon'"),
        (
            {**RESERVATION, "type": "capacity-block", "endsAfter": "40m"},
            "[0].endsAfter: a capacity block must last more than 40m (EC2 warns 40 minutes "
            "before its end), got '40m'",
        ),
    ],
)
def test_capacity_reservation_errors_name_the_field(scenario_doc, entry, message):
    aws_cloud(scenario_doc, capacityReservations=[entry])
    assert error_of(scenario_doc).startswith("spec.cloud.capacityReservations" + message)


def test_a_reservation_ends_after_its_duration(scenario_doc):
    ending = [{**RESERVATION, "endsAfter": "30m"}, {**RESERVATION, "type": "capacity-block"}]
    aws_cloud(scenario_doc, capacityReservations=ending)
    odcr, block = load(scenario_doc).cloud.capacity_reservations
    assert (odcr.ends_after, odcr.ending_block) == (1800.0, False)
    assert (block.ends_after, block.ending_block) == (None, False)


def test_enforce_iam_does_not_take_an_ending_capacity_block(scenario_doc):
    block = {**RESERVATION, "type": "capacity-block", "endsAfter": "2h"}
    aws_cloud(scenario_doc, enforceIAM=True, capacityReservations=[RESERVATION, block])
    assert error_of(scenario_doc) == (
        "spec.cloud.capacityReservations[1].endsAfter: not with spec.cloud.enforceIAM (the "
        "simulated interruption queue and its events are not principals of the account)"
    )


def test_capacity_reservations_are_aws_only(scenario_doc):
    scenario_doc["spec"]["cloud"]["capacityReservations"] = [RESERVATION]
    assert error_of(scenario_doc) == "spec.cloud.capacityReservations: only used with provider aws"


def test_a_reserved_outage_is_aws_only(scenario_doc):
    outage = {"unavailable": [{"instanceType": "small", "capacityType": "reserved"}]}
    set_step(scenario_doc, 0, {"capacity": outage})
    assert error_of(scenario_doc) == (
        "spec.steps[0].capacity.unavailable[0].capacityType: must be one of spot, on-demand"
    )
    aws_cloud(scenario_doc)
    outage["unavailable"][0]["instanceType"] = "m5.large"
    [step, *_] = load(scenario_doc).steps
    assert step.unavailable[0].capacity_type == "reserved"
