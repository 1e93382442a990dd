"""The ``interrupt`` step of the simulator, one scenario per message kind: the event
goes through the embedded EventBridge rule and SQS queue to the real controller."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.exceptions import ClientError
from joiner import testing
from joiner.sim.engine import Simulation
from joiner.sim.interruption import InterruptionBus
from joiner.sim.result import SimulationResult
from joiner.sim.scenario import ScenarioError, load_scenario

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"

BASE: dict[str, Any] = testing.scenario(
    "interrupt",
    cluster="t",
    instance_types=[
        testing.scenario_instance_type(
            "c-4x8", "4", "8Gi", {"zone-a/spot": 0.06, "zone-b/spot": 0.07}, pods=20
        )
    ],
    objects=[
        testing.ec2nodeclass(cluster="t"),
        testing.nodepool(
            requirements=[testing.capacity_types("spot")],
            disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        ),
        testing.deployment("app", replicas=2, cpu="3", memory="1Gi"),
    ],
)


def run(kind: str, extra_objects: tuple[dict[str, Any], ...] = ()) -> SimulationResult:
    doc = copy.deepcopy(BASE)
    doc["spec"]["objects"].extend(extra_objects)
    return run_doc(doc, kind)


def run_doc(doc: dict[str, Any], kind: str) -> SimulationResult:
    """Settle, interrupt the first spot node with ``kind``, settle again."""
    doc["spec"]["steps"] = [
        {"settle": "5m"},
        {
            "interrupt": {
                "nodeSelector": {"karpenter.sh/capacity-type": "spot"},
                "count": 1,
                "kind": kind,
            }
        },
        {"settle": "10m"},
    ]
    return Simulation(load_scenario(yaml.safe_dump(doc))).run()


def interrupted_at(result: SimulationResult) -> float:
    return next(s.time for s in result.steps if s.action == "interrupt")


def reasons(result: SimulationResult) -> list[str]:
    return [e.reason for e in result.events]


DRAINING = [
    ("spot-interruption", "SpotInterrupted"),
    ("scheduled-change", "InstanceUnhealthy"),
    ("stopping", "InstanceStopping"),
    ("stopped", "InstanceStopping"),
    ("shutting-down", "InstanceTerminating"),
    ("terminated", "InstanceTerminating"),
    ("capacity-reservation-interruption", "CapacityReservationInterrupted"),
]


@pytest.mark.parametrize(("kind", "reason"), DRAINING)
def test_a_draining_kind_replaces_the_first_node(kind: str, reason: str) -> None:
    result = run(kind)
    at = interrupted_at(result)
    first = sorted((c for c in result.nodeclaims if c.created_at < at), key=lambda c: c.name)[0]
    assert first.disruption_reason == "Interrupted"
    assert first.deleted_at is not None and first.deleted_at - at < 5
    assert reason in reasons(result)
    live = [c for c in result.nodeclaims if c.deleted_at is None]
    assert len(live) == 2
    assert result.final.pending_pods == []
    assert sum(len(n.pods) for n in result.final.nodes) == 2


def test_a_spot_interruption_moves_the_replacement_to_another_offering() -> None:
    result = run("spot-interruption")
    at = interrupted_at(result)
    (replacement,) = [c for c in result.nodeclaims if c.created_at >= at]
    assert (replacement.zone, replacement.capacity_type) == ("zone-b", "spot")
    assert replacement.created_at - at < 5  # at once: its pods went pending right away


def test_a_rebalance_recommendation_changes_nothing_but_an_event() -> None:
    result = run("rebalance")
    assert all(c.deleted_at is None for c in result.nodeclaims)
    assert len(result.nodeclaims) == 2
    assert reasons(result).count("SpotRebalanceRecommendation") == 1


def test_ec2_reclaims_a_spot_instance_two_minutes_after_its_warning() -> None:
    """A PDB keeps the pod on the node; EC2 does not wait: after 2 minutes the instance
    is gone, the node goes NotReady and the NodeClaim is finalized without the drain."""
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "app"}}},
    }
    result = run("spot-interruption", (pdb,))
    at = interrupted_at(result)
    first = sorted((c for c in result.nodeclaims if c.created_at < at), key=lambda c: c.name)[0]
    assert first.disruption_reason == "Interrupted"
    assert first.deleted_at is not None and 120 <= first.deleted_at - at < 150


def test_an_unknown_node_is_a_scenario_error() -> None:
    doc = copy.deepcopy(BASE)
    doc["spec"]["steps"] = [{"interrupt": {"node": "nope", "kind": "spot-interruption"}}]
    with pytest.raises(ScenarioError, match=r"spec\.steps\[0\]\.interrupt\.node: no managed node"):
        Simulation(load_scenario(yaml.safe_dump(doc))).run()


def test_the_spot_interruption_example() -> None:
    result = Simulation(load_scenario(EXAMPLES / "spot-interruption.yaml")).run()
    assert [f for s in result.steps for f in s.failures] == []
    interrupted = [c for c in result.nodeclaims if c.disruption_reason == "Interrupted"]
    assert len(interrupted) == 100
    assert reasons(result).count("SpotInterrupted") == 100


AWS_SCENARIO = """
apiVersion: joiner.sim/v1
kind: Scenario
metadata: {name: aws-interrupt}
spec:
  cluster: {name: demo, region: us-east-1, zones: [us-east-1a, us-east-1b]}
  cloud: {provider: aws}
  objects:
    - apiVersion: karpenter.k8s.aws/v1
      kind: EC2NodeClass
      metadata: {name: default}
      spec:
        role: KarpenterNodeRole-demo
        amiSelectorTerms: [{alias: al2023@latest}]
        subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
        securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
    - apiVersion: karpenter.sh/v1
      kind: NodePool
      metadata: {name: default}
      spec:
        template:
          spec:
            nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
            requirements:
              - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
              - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge]}
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: app, namespace: default}
      spec:
        replicas: 1
        selector: {matchLabels: {app: app}}
        template:
          metadata: {labels: {app: app}}
          spec:
            containers: [{name: a, image: a, resources: {requests: {cpu: "3"}}}]
  steps:
    - settle: 5m
    - interrupt: {nodeSelector: {karpenter.sh/capacity-type: spot}, kind: spot-interruption}
    - settle: 10m
"""


def test_with_the_aws_provider_the_replacement_avoids_the_interrupted_offering() -> None:
    """The real AWS provider code on the embedded AWS: the warning marks the offering in
    its unavailable-offerings cache, so the replacement goes to the other zone."""
    result = Simulation(load_scenario(AWS_SCENARIO)).run()
    at = interrupted_at(result)
    (first,) = [c for c in result.nodeclaims if c.created_at < at]
    (replacement,) = [c for c in result.nodeclaims if c.created_at >= at]
    assert (first.zone, first.disruption_reason) == ("us-east-1a", "Interrupted")
    assert (replacement.instance_type, replacement.zone, replacement.capacity_type) == (
        "c5.xlarge",
        "us-east-1b",
        "spot",
    )
    assert result.final.pending_pods == []


def test_without_moto_an_interrupt_step_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "moto" else find_spec(name, *args),
    )
    doc = copy.deepcopy(BASE)
    doc["spec"]["steps"] = [
        {"settle": "1m"},
        {"interrupt": {"node": "x", "kind": "rebalance"}},
    ]
    with pytest.raises(ScenarioError, match=r"spec\.steps\[1\]\.interrupt: .*joiner\[sim\]"):
        Simulation(load_scenario(yaml.safe_dump(doc)))


def test_the_rebalance_setting_replaces_the_node_in_a_scenario() -> None:
    doc = copy.deepcopy(BASE)
    doc["spec"]["settings"] = {"INTERRUPTION_REPLACE_ON_REBALANCE": "true"}
    result = run_doc(doc, "rebalance")
    at = interrupted_at(result)
    first = sorted((c for c in result.nodeclaims if c.created_at < at), key=lambda c: c.name)[0]
    assert first.disruption_reason == "Interrupted"
    assert reasons(result).count("SpotRebalanceRecommendation") == 1
    assert len([c for c in result.nodeclaims if c.deleted_at is None]) == 2


def test_a_simulation_reuses_an_idle_bus_only_when_its_queue_is_empty():
    """Setting a bus up takes a score of calls: the next simulation of the process
    takes the last one's, unless a message is left in it (visible or in flight)."""
    first = InterruptionBus.take("eu-west-3")
    first.give_back()
    again = InterruptionBus.take("eu-west-3")
    assert again is first
    again.sqs.send_message(QueueUrl=again.queue_url, MessageBody="left over")
    again.sqs.receive_message(QueueUrl=again.queue_url)  # in flight, not deleted
    again.give_back()
    fresh = InterruptionBus.take("eu-west-3")
    assert fresh is not again and fresh.name != again.name
    assert fresh.sqs.receive_message(QueueUrl=fresh.queue_url).get("Messages") is None
    with pytest.raises(ClientError):  # the used one was removed
        again.sqs.get_queue_attributes(QueueUrl=again.queue_url)
    fresh.give_back()
