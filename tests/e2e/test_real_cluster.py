"""``joiner controller`` (the real CLI entry, in its own process) on a real control plane:
kube-apiserver with RBAC, kube-controller-manager and kube-scheduler (envtest), moto in
server mode for AWS, and the simulator's kubelet over the http adapter for the nodes.

The controller authenticates with a ServiceAccount token bound to exactly the
ClusterRole and Role ``pulumi_joiner`` renders, and runs with the environment the
rendered Deployment gives it, but for what a test machine needs: free ports on
127.0.0.1, moto's endpoint and built-in prices, a short batch window. The apiserver's
audit log then proves the role least-privilege: the controller was refused nothing, and
every permission the roles grant was used in the run or is listed with the code path
that needs it. The role without what issue #16's lacked fails that check.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_moto_seed import CLUSTER, REGION, nodeclass_dict
from botocore.exceptions import ClientError
from joiner.api import labels as wk
from joiner.api.conditions import is_true
from joiner.api.crds import render_crds
from joiner.kube.api import NotFound
from joiner.kube.http import HttpKube
from joiner.testing import capacity_types, deployment, nodepool, requirement
from joiner.testing.envtest import ControlPlane, free_port
from joiner.testing.kubelets import EmulatedKubelets
from joiner.testing.polling import wait_for
from pulumi_joiner import manifests

# The empty node waits ~45 s (nomination, disruption pass, validation); room to spare for
# a busy machine.
WAIT = 180.0
JOINER = str(Path(sys.executable).with_name("joiner"))
CONFIG = manifests.ControllerConfig(image="unused", cluster_name=CLUSTER, region=REGION)
ACCOUNT = f"system:serviceaccount:{CONFIG.namespace}:{CONFIG.service_account}"
APPS = "apps"  # the namespace of the workload

Permission = tuple[str, str, str]  # (API group, resource[/subresource], verb)


@dataclass
class RealCluster:
    plane: ControlPlane
    admin: HttpKube
    aws_url: str
    ec2: Any

    def instance_state(self, provider_id: str) -> str:
        instance_id = provider_id.rsplit("/", 1)[-1]
        try:
            reservations = self.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        except ClientError:
            return "unknown"
        return str(reservations[0]["Instances"][0]["State"]["Name"])

    def instance_running(self, provider_id: str) -> bool:
        return self.instance_state(provider_id) in ("pending", "running")


@pytest.fixture
def audited_plane(envtest_assets: Path, plane_workdir: Path) -> Iterator[ControlPlane]:
    """A control plane of the test's own (the controller acts on the whole cluster) with
    the audit log and Joiner's CRDs."""
    plane = ControlPlane(envtest_assets, plane_workdir, audit=True).start()
    try:
        plane.install_crds(render_crds())
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def real_cluster(audited_plane: ControlPlane, aws_account: str) -> Iterator[RealCluster]:
    """The plane with the controller manager and the scheduler, and the AWS account."""
    audited_plane.start_controller_manager()
    audited_plane.start_scheduler()
    admin = audited_plane.admin_kube()
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=aws_account)
    yield RealCluster(audited_plane, admin, aws_account, ec2)
    admin.close()


# --- the controller as deployed ---------------------------------------------------------------


def grant_rendered_rbac(
    plane: ControlPlane, cluster_rules: list[dict[str, Any]] | None = None
) -> str:
    """Create the namespace, service account and RBAC objects ``pulumi_joiner`` renders
    (``cluster_rules`` in place of the ClusterRole's rules) and return a token of the
    service account."""
    cluster_role = manifests.cluster_role()
    if cluster_rules is not None:
        cluster_role["rules"] = cluster_rules
    admin = plane.admin_kube()
    for obj in (
        manifests.namespace(CONFIG),
        manifests.service_account(CONFIG),
        cluster_role,
        manifests.cluster_role_binding(CONFIG),
        manifests.leader_election_role(CONFIG),
        manifests.leader_election_role_binding(CONFIG),
    ):
        admin.create(obj)
    admin.close()
    return plane.service_account_token(CONFIG.namespace, CONFIG.service_account)


class ControllerCommand:
    """``joiner controller`` in its own process with the rendered Deployment's
    environment; the ports are free ones on 127.0.0.1 and AWS is moto."""

    def __init__(self, plane: ControlPlane, aws_url: str, token: str, workdir: Path) -> None:
        kubeconfig = plane.write_kubeconfig(workdir / "controller.kubeconfig", token=token)
        deployed = {item["name"]: item["value"] for item in manifests.controller_env(CONFIG)}
        self.metrics_port, self.health_port = free_port(), free_port()
        env = {
            **os.environ,
            **deployed,
            "AWS_ENDPOINT_URL": aws_url,
            "ISOLATED_VPC": "true",  # moto has no pricing API: the built-in prices
            "BIND_ADDRESS": "127.0.0.1",
            "METRICS_PORT": str(self.metrics_port),
            "HEALTH_PROBE_PORT": str(self.health_port),
            "BATCH_IDLE_DURATION": "200ms",
            "BATCH_MAX_DURATION": "2s",
            "HOSTNAME": "joiner-0",
            # the gated controllers' requests are part of what the role must allow
            "FEATURE_GATES": "NodeOverlay=true,PodDeletionCostManagement=true",
        }
        self.log = workdir / "controller.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [JOINER, "controller", "--kubeconfig", str(kubeconfig)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def get(self, port: int, path: str) -> tuple[int, str]:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()

    def stop(self) -> int:
        """SIGTERM, as Kubernetes stops a pod; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=WAIT)

    def tail(self, lines: int = 15, width: int = 300) -> str:
        """The end of the log, each line cut short (tracebacks are long)."""
        log = self.log.read_text(errors="replace").splitlines()
        return "\n".join(line[:width] for line in log[-lines:])


def _wait(condition: Callable[[], Any], what: str, controller: ControllerCommand) -> Any:
    """``wait_for``, failing at once if the controller exits, with the end of its log."""

    def while_it_runs() -> Any:
        assert controller.process.poll() is None, "joiner controller exited"
        return condition()

    try:
        return wait_for(while_it_runs, what, WAIT, interval=0.1)
    except AssertionError as failure:
        raise AssertionError(f"{failure} ({what}); controller log:\n{controller.tail()}") from None


# --- what the cluster looks like -----------------------------------------------------------------


def _claims(kube: HttpKube) -> list[dict[str, Any]]:
    return kube.list("NodeClaim").items


def _initialized_claim(kube: HttpKube, other_than: str = "") -> dict[str, Any] | None:
    for claim in _claims(kube):
        conditions = (claim.get("status") or {}).get("conditions")
        if claim["metadata"]["name"] != other_than and is_true(conditions, "Initialized"):
            return claim
    return None


def _running_on(kube: HttpKube, node: str, count: int) -> list[str] | None:
    """The names of the workload's pods, once ``count`` run on ``node`` (bound by the
    scheduler) and no other pod of it exists."""
    pods = kube.list("Pod", APPS).items
    running = [
        p["metadata"]["name"]
        for p in pods
        if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"
    ]
    return sorted(running) if len(running) == count == len(pods) else None


def _gone(kube: HttpKube, kind: str, name: str) -> bool:
    try:
        kube.get(kind, name)
    except NotFound:
        return True
    return False


def _reasons(kube: HttpKube, claim_name: str) -> list[str]:
    """The reasons of the NodeClaim's Events, oldest first (its Node has the same name and
    Events of its own, from the node lifecycle controller)."""
    events = kube.list("Event", "default").items
    events.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [
        e["reason"]
        for e in events
        if (e["involvedObject"]["kind"], e["involvedObject"]["name"]) == ("NodeClaim", claim_name)
    ]


def _overlay() -> dict[str, Any]:
    requirement_ = requirement(wk.INSTANCE_TYPE, "In", ["m5.large"])
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "savings-plan"},
        "spec": {"requirements": [requirement_], "priceAdjustment": "-10%"},
    }


def _overlay_validated(kube: HttpKube) -> bool:
    overlay = kube.get("NodeOverlay", "savings-plan")
    return is_true((overlay.get("status") or {}).get("conditions"), "ValidationSucceeded")


def _chunk_template() -> dict[str, Any]:
    chunk = deployment("chunk", 1, cpu="100m", memory="64Mi", namespace=APPS)["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": APPS},
        "template": chunk,
    }


def _buffers() -> list[dict[str, Any]]:
    """A buffer shaped by the PodTemplate and one by the workload, of no chunks (the round
    trip's capacity stays as it is): each is resolved and its status written."""
    refs = [
        {"podTemplateRef": {"name": "chunk"}},
        {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}},
    ]
    return [
        {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": f"spare-{i}", "namespace": APPS},
            "spec": {**ref, "replicas": 0},
        }
        for i, ref in enumerate(refs)
    ]


def _buffers_resolved(kube: HttpKube) -> bool:
    return all(
        is_true((b.get("status") or {}).get("conditions"), "ReadyForProvisioning")
        and b["status"].get("replicas") == 0
        for b in kube.list("CapacityBuffer", APPS).items
    )


def _deletion_costs(kube: HttpKube) -> set[str | None]:
    return {
        (p["metadata"].get("annotations") or {}).get(wk.POD_DELETION_COST)
        for p in kube.list("Pod", APPS).items
    }


def _workload() -> dict[str, Any]:
    return deployment("web", 2, cpu="500m", memory="256Mi", namespace=APPS)


def _node_pool() -> dict[str, Any]:
    return nodepool(
        requirements=[
            requirement(wk.INSTANCE_TYPE, "In", ["m5.large"]),
            capacity_types("on-demand"),
        ],
        disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s"},
    )


# --- the round trip ----------------------------------------------------------------------------


def test_joiner_controller_round_trip_on_a_real_control_plane(
    real_cluster: RealCluster, tmp_path: Path
) -> None:
    """Pending pods -> NodeClaim -> EC2 instance -> Node registers -> the real scheduler
    binds -> a NodeClaim deleted with pods on it drains through the Eviction API and its
    pods get a new node -> scaled to zero, the empty node is consolidated and its instance
    terminated. Afterwards the audit log proves the rendered RBAC least-privilege."""
    cluster, admin = real_cluster, real_cluster.admin
    token = grant_rendered_rbac(cluster.plane)
    controller = ControllerCommand(cluster.plane, cluster.aws_url, token, tmp_path)
    kubelet_kube = cluster.plane.admin_kube()
    kubelets = EmulatedKubelets(kubelet_kube, cluster.instance_running, REGION).start()
    try:
        admin.create(nodeclass_dict())
        admin.create(_node_pool())
        admin.create(_overlay())
        admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APPS}})
        admin.create(_workload())
        admin.create(_chunk_template())
        for buffer in _buffers():
            admin.create(buffer)

        first = _wait(lambda: _initialized_claim(admin), "a NodeClaim's node", controller)
        first_name, first_node = first["metadata"]["name"], first["status"]["nodeName"]
        first_pods = _wait(
            lambda: _running_on(admin, first_node, 2), "the pods on the node", controller
        )
        assert len(_claims(admin)) == 1
        assert cluster.instance_state(first["status"]["providerID"]) == "running"
        node = admin.get("Node", first_node)
        assert node["metadata"]["labels"][wk.NODE_INITIALIZED] == "true"
        assert wk.TERMINATION_FINALIZER in node["metadata"]["finalizers"]
        # Ready: the role let it list every kind it watches; the endpoints on 127.0.0.1
        assert controller.get(controller.health_port, "/readyz") == (200, "ok\n")
        _, metrics = controller.get(controller.metrics_port, "/metrics")
        assert "karpenter_cluster_state_synced 1.0" in metrics.splitlines()

        # A NodeClaim deleted with pods on it: drained through the Eviction API.
        admin.delete("NodeClaim", first_name)
        second = _wait(
            lambda: _initialized_claim(admin, other_than=first_name), "a new node", controller
        )
        _wait(lambda: _gone(admin, "NodeClaim", first_name), "the NodeClaim to go", controller)
        _wait(lambda: _gone(admin, "Node", first_node), "its Node to go", controller)
        assert cluster.instance_state(first["status"]["providerID"]) in (
            "shutting-down",
            "terminated",
        )
        second_pods = _wait(
            lambda: _running_on(admin, second["status"]["nodeName"], 2),
            "the pods on the new node",
            controller,
        )
        assert not set(second_pods) & set(first_pods)  # the ReplicaSet made new ones
        # the gated controllers: the overlay's status, the pods' deletion cost (the one
        # node is within the pool's 10% budget: rank -1), re-ranked within a minute
        _wait(lambda: _overlay_validated(admin), "the NodeOverlay's status", controller)
        _wait(lambda: _buffers_resolved(admin), "the CapacityBuffers' status", controller)
        _wait(lambda: _deletion_costs(admin) == {"-1"}, "the pods' deletion cost", controller)
        assert _evicted(cluster.plane) == {(APPS, name) for name in first_pods}
        assert _reasons(admin, first_name) == ["Terminated"]

        # Scaled to zero: the empty node is consolidated and its instance terminated.
        scaled = admin.get("Deployment", "web", APPS)
        scaled["spec"]["replicas"] = 0
        admin.update(scaled)
        second_name = second["metadata"]["name"]
        _wait(lambda: not _claims(admin), "the empty node to be consolidated", controller)
        _wait(lambda: not admin.list("Node").items, "the Node to go", controller)
        assert cluster.instance_state(second["status"]["providerID"]) in (
            "shutting-down",
            "terminated",
        )
        reasons = _wait(
            lambda: (r := _reasons(admin, second_name)) and r[-1] == "Terminated" and r,
            "the Terminated event",
            controller,
        )
        assert reasons == ["DisruptionTerminating", "Terminated"]
    finally:
        kubelets.stop()
        kubelet_kube.close()
        exit_code = controller.stop()
    assert exit_code == 0, controller.tail()
    assert_least_privilege(_requests_of(cluster.plane, ACCOUNT))


def _evicted(plane: ControlPlane) -> set[tuple[str, str]]:
    """(namespace, pod) of every eviction the controller made and the server granted."""
    return {
        (e["objectRef"]["namespace"], e["objectRef"]["name"])
        for e in plane.audit_events()
        if e["user"]["username"] == ACCOUNT
        and e["objectRef"].get("subresource") == "eviction"
        and e["responseStatus"]["code"] == 201
    }


# --- least privilege ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    permission: Permission
    code: int


def _requests_of(plane: ControlPlane, user: str) -> list[Request]:
    requests = []
    for event in plane.audit_events():
        ref = event.get("objectRef")
        if event["user"]["username"] != user or ref is None:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        permission = (ref.get("apiGroup", ""), resource, event["verb"])
        requests.append(Request(permission, int(event["responseStatus"]["code"])))
    return requests


def granted(rules: list[dict[str, Any]]) -> set[Permission]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


# Permissions the round trip does not exercise, and the code path that needs each.
NEEDED_BEYOND_THE_ROUND_TRIP: dict[Permission, str] = {
    ("", "pods", "delete"): "joiner/controllers/termination.py: a pod still on a draining "
    "node when its NodeClaim's terminationGracePeriod runs out is deleted",
    ("", "events", "patch"): "joiner/events.py: a repeated Event bumps the count of the first, "
    "written at most every two minutes",
    ("apps", "replicasets", "get"): "joiner/buffers/resolution.py: a CapacityBuffer's "
    "scalableRef may name a ReplicaSet (the round trip's names a Deployment)",
    ("apps", "statefulsets", "get"): "joiner/buffers/resolution.py: a CapacityBuffer's "
    "scalableRef may name a StatefulSet (the round trip's names a Deployment)",
}


def assert_least_privilege(requests: list[Request]) -> None:
    forbidden = sorted({r.permission for r in requests if r.code == 403})
    assert not forbidden, f"RBAC refused the controller: {forbidden}"
    used = {r.permission for r in requests}
    grants = granted(manifests.cluster_role_rules()) | granted(manifests.leader_election_rules())
    assert used <= grants  # nothing else could have succeeded
    unused = grants - used - set(NEEDED_BEYOND_THE_ROUND_TRIP)
    assert not unused, f"granted but never used nor justified: {sorted(unused)}"
    stale = set(NEEDED_BEYOND_THE_ROUND_TRIP) - grants
    assert not stale, f"justified but not granted: {sorted(stale)}"


# --- a missing verb fails ----------------------------------------------------------------------


def _without(rules: list[dict[str, Any]], missing: set[Permission]) -> list[dict[str, Any]]:
    kept = []
    for rule in rules:
        verbs = [
            verb
            for verb in rule["verbs"]
            if not {(g, r, verb) for g in rule["apiGroups"] for r in rule["resources"]} & missing
        ]
        if verbs:
            kept.append({**rule, "verbs": verbs})
    assert granted(kept) == granted(rules) - missing  # exactly those permissions less
    return kept


# What issue #16's ClusterRole lacked.
ISSUE_16 = {
    ("karpenter.k8s.aws", "ec2nodeclasses", "update"),
    ("karpenter.sh", "nodepools", "update"),
}


def test_the_role_without_a_permission_the_controller_needs_fails_the_check(
    audited_plane: ControlPlane, aws_account: str, tmp_path: Path
) -> None:
    """The rendered role minus what issue #16's lacked: every NodePool and EC2NodeClass
    reconcile is refused, so the NodePool never gets a status nor the EC2NodeClass a
    resolved one, and the least-privilege check names both permissions."""
    rules = _without(manifests.cluster_role_rules(), ISSUE_16)
    controller = ControllerCommand(
        audited_plane, aws_account, grant_rendered_rbac(audited_plane, rules), tmp_path
    )
    admin = audited_plane.admin_kube()
    try:
        admin.create(nodeclass_dict())
        admin.create(_node_pool())
        _wait(
            lambda: (
                {r.permission for r in _requests_of(audited_plane, ACCOUNT) if r.code == 403}
                == ISSUE_16
            ),
            "both refusals",
            controller,
        )
    finally:
        assert controller.stop() == 0, controller.tail()
    assert "status" not in admin.get("NodePool", "default")
    assert "status" not in admin.get("EC2NodeClass", "default")
    with pytest.raises(AssertionError) as failed:
        assert_least_privilege(_requests_of(audited_plane, ACCOUNT))
    assert str(failed.value).startswith(f"RBAC refused the controller: {sorted(ISSUE_16)!r}")
