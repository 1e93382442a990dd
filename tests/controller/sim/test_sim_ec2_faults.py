"""Cloud faults with the AWS provider act on its EC2 API calls (``Ec2Faults``): EC2
(moto) never sees a failed call, botocore raises EC2's error, and the AWS provider's
own handling and the controllers' retries are what get over it."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from joiner import testing
from joiner.api import labels as wk
from joiner.sim.engine import Simulation
from joiner.sim.scenario import load_scenario

# Two pods of 3 CPUs on c5.xlarge (4 CPUs): two NodeClaims; empty nodes go at once.
AWS_SCENARIO: dict[str, Any] = testing.scenario(
    "ec2-faults",
    [],
    [
        testing.ec2nodeclass(cluster="demo", role="KarpenterNodeRole-demo"),
        testing.nodepool(
            requirements=[{"key": wk.INSTANCE_TYPE, "operator": "In", "values": ["c5.xlarge"]}],
            disruption={"consolidateAfter": "0s"},
        ),
        testing.deployment("app", 2, "3", "256Mi"),
    ],
    cluster="demo",
    zones=("us-east-1a",),
)
AWS_SCENARIO["spec"]["cloud"] = {"provider": "aws"}
SCALE_DOWN = {"scale": {"kind": "Deployment", "name": "app", "namespace": "default", "replicas": 0}}


def run(steps: list[dict[str, Any]]) -> tuple[Simulation, Any, dict[str, str]]:
    """Run the scenario with these steps; also EC2's instances (id: state) at the end."""
    document = copy.deepcopy(AWS_SCENARIO)
    document["spec"]["steps"] = steps
    sim = Simulation(load_scenario(yaml.safe_dump(document)))
    states: dict[str, str] = {}
    close = sim.close

    def close_after_looking() -> None:  # closing the embedded AWS resets moto
        pages = sim.cloud.clients.ec2.describe_instances()["Reservations"]  # type: ignore[attr-defined]
        states.update(
            {i["InstanceId"]: i["State"]["Name"] for page in pages for i in page["Instances"]}
        )
        close()

    sim.close = close_after_looking  # type: ignore[method-assign]
    return sim, sim.run(), states


def reasons(result: Any, reason: str) -> list[str]:
    return [e.message for e in result.events if e.reason == reason]


def test_failed_createfleet_and_terminateinstances_calls_are_retried_and_never_applied():
    sim, result, states = run(
        [
            {"fault": {"cloud": {"error": "throttled", "calls": ["create"], "times": 3}}},
            {"settle": "10m"},
            {"fault": {"cloud": {"error": "failed", "calls": ["delete"], "times": 2}}},
            SCALE_DOWN,
            {"advance": "5m"},
        ]
    )
    failed = reasons(result, "LaunchFailed")
    assert len(failed) == 2 and all(
        "(RequestLimitExceeded) when calling the CreateFleet operation" in m for m in failed
    )
    assert len(result.nodeclaims) == 2  # each launched once it got through, no more
    assert all(c.launched_at and c.deleted_at for c in result.nodeclaims)
    # Three throttled CreateFleet calls launched nothing; the failed terminations were
    # retried until the instances were gone.
    assert sorted(states.values()) == ["terminated", "terminated"]
    assert sim.faults.ec2 is not None and not sim.faults.ec2.faults.take("CreateFleet")


def test_only_the_controllers_calls_fail_and_a_launch_needs_no_describe():
    """Every DescribeInstances of the controller fails: the emulated kubelets read EC2
    through the same client and still register their nodes, and each NodeClaim launches
    one instance (a launch read back with DescribeInstances launched one per attempt)."""
    fault = {"fault": {"cloud": {"error": "failed", "calls": ["get", "list"], "rate": 1}}}
    sim, result, states = run([fault, {"settle": "10m"}])
    assert result.final.pending_pods == [] and len(result.final.nodes) == 2
    assert sorted(states.values()) == ["running", "running"]
    assert sim.faults.cloud.faults.take("create") is None  # the provider port is not faulted
