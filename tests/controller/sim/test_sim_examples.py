"""Every scenario shipped in examples/ is valid, and the walkthrough is the one of the
source documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from joiner.sim.scenario import ExpectStep, ScaleStep, load_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCENARIOS = sorted(EXAMPLES.glob("*.yaml"))


def test_the_examples_are_there():
    assert [p.name for p in SCENARIOS] == [
        "balanced.yaml",
        "capacity-block.yaml",
        "explain-disruption.yaml",
        "explain-pending.yaml",
        "gpu.yaml",
        "headroom.yaml",
        "limits.yaml",
        "min-values.yaml",
        "night-at-zero.yaml",
        "node-overlay.yaml",
        "node-repair.yaml",
        "pod-deletion-cost.yaml",
        "replicas-1000.yaml",
        "replicas-10000.yaml",
        "restarts.yaml",
        "spot-interruption.yaml",
        "static-nodepool.yaml",
        "walkthrough-v1alpha5.yaml",
        "walkthrough.yaml",
        "weighted-pools.yaml",
        "zone-spread.yaml",
    ]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_example_loads(path: Path):
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert any(isinstance(step, ExpectStep) for step in scenario.steps)


def test_walkthrough_replays_the_source_document():
    scenario = load_scenario(EXAMPLES / "walkthrough.yaml")

    assert (scenario.cluster.name, scenario.cluster.region) == ("demo", "us-east-1")
    assert scenario.cluster.zones == ("us-east-1a", "us-east-1b", "us-east-1c")
    assert scenario.cloud.provider == "aws"
    (static,) = scenario.nodes
    assert (static.name, static.instance_type, static.capacity_type) == (
        "system-1",
        "m5.large",
        "on-demand",
    )
    objects = {(o["kind"], o["metadata"]["name"]): o for o in scenario.objects}
    nodepool = objects[("NodePool", "default")]["spec"]
    assert nodepool["template"]["spec"]["expireAfter"] == "30m"
    assert nodepool["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    assert nodepool["limits"] == {"cpu": 100}
    requirements = {r["key"]: r["values"] for r in nodepool["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["spot", "on-demand"]
    assert requirements["karpenter.k8s.aws/instance-category"] == ["c", "m", "r"]
    nodeclass = objects[("EC2NodeClass", "default")]["spec"]
    assert nodeclass["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    inflate = objects[("Deployment", "inflate")]["spec"]["template"]["spec"]["containers"][0]
    assert inflate["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}

    replicas = [s.replicas for s in scenario.steps if isinstance(s, ScaleStep)]
    assert [objects[("Deployment", "inflate")]["spec"]["replicas"], *replicas] == [
        1,
        5,
        20,
        10,
        5,
        0,
    ]
    final = scenario.steps[-1]
    assert isinstance(final, ExpectStep)
    assert str(final.nodes["managed"]) == "0"
