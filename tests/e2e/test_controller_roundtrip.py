"""The production wiring end to end: ``joiner controller``'s process (settings, the http
adapter, leader election, the AWS provider built by the command's factory) against a
local Kubernetes API server and moto. One provision-and-terminate round trip: a pending
pod -> NodeClaim -> EC2 instance via CreateFleet -> (the test plays kubelet) Node Ready
-> NodeClaim initialized -> NodeClaim deleted -> instance terminated -> finalizers gone.
Also: insufficient capacity at CreateFleet re-provisions from another pool; an
INTERRUPTION_QUEUE message (SQS) replaces a node; and the ``joiner controller`` command
itself, in its own process, leads and releases the Lease on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from functools import partial
from typing import Any

import boto3
import pytest
from aws_moto_seed import CLUSTER, REGION, nodeclass_dict
from joiner.api import labels as wk
from joiner.api.conditions import TRUE, is_true, set_condition
from joiner.commands.controller import aws_cloud_factory
from joiner.kube.api import NotFound
from joiner.kube.http import ClusterConfig, HttpKube
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer
from joiner.serve import ControllerProcess, LeaderElection
from joiner.settings import Settings
from joiner.sim.embedded_aws import CapacityOutage
from joiner.testing import (
    capacity_types,
    create_unschedulable,
    kubelet_node,
    nodepool,
    pod,
    requirement,
)
from joiner.testing.envtest import free_port
from joiner.testing.polling import wait_for

WAIT = 90.0  # the first launch loads moto's whole instance-type catalogue (~8 s)


_wait = partial(wait_for, timeout=WAIT)


def _start_controller(
    apiserver: KubeHTTPServer, aws_url: str, **env: str
) -> tuple[ControllerProcess, threading.Event, threading.Thread]:
    """The production process (what ``joiner controller`` runs), on its own thread."""
    settings = Settings.from_env(
        {
            "CLUSTER_NAME": CLUSTER,
            "AWS_REGION": REGION,
            "BATCH_IDLE_DURATION": "200ms",
            "BATCH_MAX_DURATION": "2s",
            "BIND_ADDRESS": "127.0.0.1",
            "METRICS_PORT": str(free_port()),
            "HEALTH_PROBE_PORT": str(free_port()),
            **env,
        }
    )
    stop = threading.Event()
    process = ControllerProcess(
        settings,
        HttpKube(ClusterConfig(server=apiserver.url)),
        aws_cloud_factory(settings, endpoint_url=aws_url),
        stop,
        LeaderElection(namespace="kube-system", identity="e2e-replica"),
    )
    thread = threading.Thread(target=process.run, daemon=True)
    return process, stop, thread


def _wait_nodeclass_ready(store: MemoryKube) -> None:
    _wait(
        lambda: is_true(
            (store.get("EC2NodeClass", "default").get("status") or {}).get("conditions"),
            "Ready",
        ),
        "the EC2NodeClass to resolve",
    )


def _nodepool(
    name: str = "default", instance_type: str = "m5.large", weight: int = 1
) -> dict[str, Any]:
    return nodepool(
        name,
        requirements=[
            requirement(wk.INSTANCE_TYPE, "In", [instance_type]),
            capacity_types("on-demand"),
        ],
        weight=weight,
    )


def _unschedulable_pod(store: MemoryKube) -> None:
    create_unschedulable(store, pod("app", cpu="1"))


def _launched_claim(store: MemoryKube) -> dict[str, Any] | None:
    """The first NodeClaim with an instance (a providerID), if any."""
    claims = store.list("NodeClaim").items
    return next((c for c in claims if (c.get("status") or {}).get("providerID")), None)


def _kubelet_registers(store: MemoryKube, claim: dict[str, Any]) -> str:
    """The instance boots and its kubelet registers a Ready Node with the providerID."""
    name = f"ip-10-0-0-1.{REGION}.compute.internal"
    node = kubelet_node(claim, name)
    set_condition(node["status"]["conditions"], "Ready", TRUE, time.time())
    store.create(node)
    return name


def _reasons_when_terminated(store: MemoryKube, name: str) -> list[str] | None:
    """The reasons of the NodeClaim's events in order, once the last is Terminated."""
    events = sorted(store.list("Event").items, key=lambda e: int(e["metadata"]["resourceVersion"]))
    reasons = [e["reason"] for e in events if e["involvedObject"]["name"] == name]
    return reasons if reasons and reasons[-1] == "Terminated" else None


def _instance_state(ec2: Any, instance_id: str) -> str:
    reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return reservations[0]["Instances"][0]["State"]["Name"]


def test_provision_and_terminate_round_trip(
    aws_account: str, store: MemoryKube, apiserver: KubeHTTPServer
) -> None:
    _, stop, thread = _start_controller(apiserver, aws_account)
    thread.start()
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=aws_account)
    try:
        store.create(nodeclass_dict())
        store.create(_nodepool())
        _wait_nodeclass_ready(store)
        _unschedulable_pod(store)

        claim = _wait(lambda: _launched_claim(store), "a launched NodeClaim")
        name = claim["metadata"]["name"]
        instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]
        zone = claim["metadata"]["labels"][wk.ZONE]
        assert claim["status"]["providerID"] == f"aws:///{zone}/{instance_id}"
        assert claim["metadata"]["labels"][wk.INSTANCE_TYPE] == "m5.large"
        assert claim["metadata"]["labels"][wk.CAPACITY_TYPE] == "on-demand"
        described = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0][
            "Instances"
        ][0]
        tags = {t["Key"]: t["Value"] for t in described["Tags"]}
        assert described["InstanceType"] == "m5.large"
        assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
        assert tags["karpenter.sh/nodeclaim"] == name
        assert tags["karpenter.sh/nodepool"] == "default"
        assert len(store.list("NodeClaim").items) == 1

        node_name = _kubelet_registers(store, claim)
        _wait(
            lambda: is_true(
                store.get("NodeClaim", name)["status"].get("conditions"), "Initialized"
            ),
            "the NodeClaim to be initialized",
        )
        node = store.get("Node", node_name)
        # No taint left; the key is gone when the node lifecycle controller lifted the
        # not-ready taint after registration wrote the list, and empty when before.
        assert node["spec"].get("taints", []) == []
        assert node["metadata"]["finalizers"] == [wk.TERMINATION_FINALIZER]

        store.delete("NodeClaim", name)
        _wait(lambda: not store.list("NodeClaim").items, "the NodeClaim to be finalized")
        assert _instance_state(ec2, instance_id) in ("shutting-down", "terminated")
        with pytest.raises(NotFound):
            store.get("Node", node_name)
        # The event follows the finalizer's removal: wait for it rather than race it.
        reasons = _wait(lambda: _reasons_when_terminated(store, name), "the Terminated event")
        assert reasons == ["Terminated"]  # the lifecycle is on its conditions, not Events
        lease = store.get("Lease", "karpenter-leader-election", "kube-system")
        assert lease["spec"]["holderIdentity"] == "e2e-replica"
    finally:
        stop.set()
        thread.join(timeout=WAIT)
    assert not thread.is_alive()


def test_joiner_controller_command_leads_and_releases_the_lease_on_sigterm(
    aws_account: str, store: MemoryKube, apiserver: KubeHTTPServer, tmp_path: Any
) -> None:
    """The real entry point in its own process: kubeconfig to the local API server, AWS
    SDK pointed at moto through AWS_ENDPOINT_URL; SIGTERM exits 0 and frees the Lease."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: local\n"
        "contexts: [{name: local, context: {cluster: local, user: local}}]\n"
        f'clusters: [{{name: local, cluster: {{server: "{apiserver.url}"}}}}]\n'
        "users: [{name: local, user: {token: local}}]\n"
    )
    health_port = free_port()
    env = {
        **os.environ,
        "CLUSTER_NAME": CLUSTER,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": aws_account,
        "BIND_ADDRESS": "127.0.0.1",
        "METRICS_PORT": str(free_port()),
        "HEALTH_PROBE_PORT": str(health_port),
        "LEADER_ELECTION_NAMESPACE": "kube-system",
        "HOSTNAME": "joiner-0",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "joiner.cli", "controller", "--kubeconfig", str(kubeconfig)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lease = _wait(lambda: _lease_holder(store), "the command to take the Lease")
        assert lease.startswith("joiner-0_")
        ready = _wait(lambda: _ready(health_port), "/readyz")
        assert ready == 200
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 0
    assert _lease_holder(store) is None
    messages = [json.loads(line)["message"] for line in stderr.splitlines()]  # all JSON
    assert messages.index("controller started") < messages.index("controller stopping")
    assert messages.index("leader election: leading") < messages.index("controller stopping")
    assert messages[-1] == "leader election: not leading"  # released on the way out


def _lease_holder(store: MemoryKube) -> str | None:
    try:
        return store.get("Lease", "karpenter-leader-election", "kube-system")["spec"].get(
            "holderIdentity"
        )
    except NotFound:
        return None


def _ready(port: int) -> int | None:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5).status
    except OSError:
        return None


def test_insufficient_capacity_on_ec2_reprovisions_from_the_next_pool(
    aws_account: str, store: MemoryKube, apiserver: KubeHTTPServer
) -> None:
    """CreateFleet answers InsufficientInstanceCapacity for every m5.large override: the
    NodeClaim is deleted and the pod is provisioned from the lower-weight pool's type."""
    process, stop, thread = _start_controller(apiserver, aws_account)
    ec2 = process.operator.cloud.clients.ec2
    zones = {s["SubnetId"]: s["AvailabilityZone"] for s in ec2.describe_subnets()["Subnets"]}
    outage = CapacityOutage(ec2, zones)
    outage.exhausted = {("m5.large", None, "on-demand")}  # every zone
    thread.start()
    try:
        store.create(nodeclass_dict())
        store.create(_nodepool("primary", "m5.large", weight=100))
        store.create(_nodepool("fallback", "m5.xlarge", weight=10))
        _wait_nodeclass_ready(store)
        _unschedulable_pod(store)

        claim = _wait(lambda: _launched_claim(store), "a launched NodeClaim")
        assert claim["metadata"]["name"].startswith("fallback-")
        assert claim["metadata"]["labels"][wk.INSTANCE_TYPE] == "m5.xlarge"
        failed = [
            e["involvedObject"]["name"]
            for e in store.list("Event").items
            if e["reason"] == "LaunchFailed"
        ]
        assert len(failed) == 1 and failed[0].startswith("primary-")
        assert [c["metadata"]["name"] for c in store.list("NodeClaim").items] == [
            claim["metadata"]["name"]
        ]
        running = [
            i["InstanceType"]
            for r in ec2.describe_instances()["Reservations"]
            for i in r["Instances"]
            if i["State"]["Name"] in ("pending", "running")
        ]
        assert running == ["m5.xlarge"]
    finally:
        stop.set()
        thread.join(timeout=WAIT)


def _launched_claim(store: MemoryKube) -> dict[str, Any]:
    return _wait(
        lambda: next(
            (c for c in store.list("NodeClaim").items if (c.get("status") or {}).get("providerID")),
            None,
        ),
        "a launched NodeClaim",
    )


def test_interruption_queue_message_replaces_the_node(
    aws_account: str,
    store: MemoryKube,
    apiserver: KubeHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """INTERRUPTION_QUEUE wired in the production process: the leader long-polls SQS, an
    instance stopping drains and deletes its NodeClaim, the message is deleted, and the
    pending pod gets a new NodeClaim."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_account)  # the queue client's endpoint
    sqs = boto3.client("sqs", region_name=REGION, endpoint_url=aws_account)
    queue_url = sqs.create_queue(QueueName="joiner-e2e-interruption")["QueueUrl"]
    _, stop, thread = _start_controller(
        apiserver, aws_account, INTERRUPTION_QUEUE="joiner-e2e-interruption"
    )
    thread.start()
    try:
        store.create(nodeclass_dict())
        store.create(_nodepool())
        _wait_nodeclass_ready(store)
        _unschedulable_pod(store)
        claim = _launched_claim(store)
        name = claim["metadata"]["name"]
        instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]
        event = {
            "version": "0",
            "id": "e2e-state-change-1",
            "detail-type": "EC2 Instance State-change Notification",
            "source": "aws.ec2",
            "account": "123456789012",
            "time": "2026-01-01T00:00:00Z",
            "region": REGION,
            "resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{instance_id}"],
            "detail": {"instance-id": instance_id, "state": "stopping"},
        }
        sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(event))

        replacement = _wait(
            lambda: next(
                (
                    c
                    for c in store.list("NodeClaim").items
                    if c["metadata"]["name"] != name and (c.get("status") or {}).get("providerID")
                ),
                None,
            ),
            "a replacement NodeClaim",
        )
        assert replacement["metadata"]["labels"][wk.INSTANCE_TYPE] == "m5.large"
        reasons = _wait(lambda: _reasons_when_terminated(store, name), "the NodeClaim to go")
        assert reasons == ["InstanceStopping", "Terminated"]
        attributes = sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        assert attributes == {
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0",
        }
    finally:
        stop.set()
        thread.join(timeout=WAIT)
