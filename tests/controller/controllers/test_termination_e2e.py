"""Deleting a NodeClaim: taint, drain in tiers through the Eviction API honouring PDBs,
terminationGracePeriod, instance termination, finalizers [LIFE-2]."""

from __future__ import annotations

from typing import Any

from ctl_harness import Harness, pending_pod
from joiner.api import labels as wk
from joiner.api.conditions import TRUE, set_condition
from joiner.kube.api import NotFound
from joiner.kube.controllermanager import DISRUPTION_DELAY
from joiner.testing import ec2nodeclass, nodepool


def _static_node(h: Harness, name: str) -> None:
    """An unmanaged Node (e.g. from a managed node group) to take replacements."""
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {wk.HOSTNAME: name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "50"}, "conditions": []},
    }
    set_condition(node["status"]["conditions"], "Ready", TRUE, h.clock.now())
    h.kube.create(node)


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    pod = pending_pod(name, "100m", labels=extra.pop("labels", None), **extra.pop("spec", {}))
    pod["metadata"].update(extra)
    return pod


def _run_on(h: Harness, node_name: str, pod: dict[str, Any]) -> None:
    h.kube.create(pod)
    h.bind_running(pod["metadata"]["name"], node_name)


def _pdb(name: str, app: str, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def _daemonset_owner(h: Harness) -> list[dict[str, Any]]:
    """An owner reference to a real DaemonSet (orphans would be garbage collected)."""
    ds = h.kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "agent"}]},
                },
            },
        }
    )
    meta = ds["metadata"]
    return [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": meta["uid"]}]


CRITICAL = {"priorityClassName": "system-cluster-critical"}


def test_drain_goes_tier_by_tier_holds_on_the_pdb_then_terminates():
    h = Harness()
    h.default_setup()
    claim_name, node_name = h.initialized_node()
    _static_node(h, "static-1")
    for i in range(3):
        _run_on(h, node_name, _pod(f"web-{i}", labels={"app": "web"}))
    daemon_owner = _daemonset_owner(h)
    _run_on(h, node_name, _pod("logs", ownerReferences=daemon_owner))
    _run_on(h, node_name, _pod("dns", spec=CRITICAL))
    _run_on(h, node_name, _pod("proxy", ownerReferences=daemon_owner, spec=CRITICAL))
    tolerant = {"tolerations": [{"key": wk.DISRUPTED_TAINT_KEY, "operator": "Exists"}]}
    _run_on(h, node_name, _pod("tolerant", spec=tolerant))
    _run_on(h, node_name, _pod("static-web", annotations={"kubernetes.io/config.mirror": "x"}))
    h.kube.create(_pdb("web", "web", 2))
    h.advance(DISRUPTION_DELAY)  # the disruption controller writes the budget's status

    h.kube.delete("NodeClaim", claim_name)
    h.settle()
    node = h.kube.get("Node", node_name)
    assert node["spec"]["taints"] == [wk.DISRUPTED_TAINT]
    # Tier 0: the PDB lets one web pod go; the other two get 429.
    assert h.events("Evicted") == [("Pod", "web-0", "Evicted")]
    assert h.events("FailedDraining") == [
        ("Pod", "web-1", "FailedDraining"),
        ("Pod", "web-2", "FailedDraining"),
    ]

    assert h.finish_terminating_pods() == ["web-0"]
    h.advance(30)  # retried with backoff, still blocked: only two healthy web pods
    assert h.events("Evicted") == [("Pod", "web-0", "Evicted")]

    _run_on(h, "static-1", _pod("web-3", labels={"app": "web"}))  # the replacement runs
    h.advance(5)
    assert h.events("Evicted")[-1] == ("Pod", "web-1", "Evicted")
    h.finish_terminating_pods()
    _run_on(h, "static-1", _pod("web-4", labels={"app": "web"}))
    for _ in range(4):
        h.advance(5)
        h.finish_terminating_pods()

    assert [name for _, name, _ in h.events("Evicted")] == [
        "web-0",
        "web-1",
        "web-2",
        "logs",  # non-critical daemonset
        "dns",  # critical
        "proxy",  # critical daemonset
    ]
    with_deletion = {p["metadata"]["name"] for p in h.kube.list("Pod").items}
    assert with_deletion == {"web-3", "web-4", "tolerant", "static-web"}  # never evicted
    h.advance(10)
    assert h.kube.list("NodeClaim").items == []
    assert h.kube.list("Node", field_selector=f"metadata.name={node_name}").items == []
    assert h.cloud.instances == {}
    assert h.events("Terminated") == [("NodeClaim", claim_name, "Terminated")]
    assert h.operator.metrics.nodeclaims_terminated.labels("default")._value.get() == 1


def test_termination_grace_period_deletes_pods_the_pdb_protects():
    h = Harness()
    h.install(ec2nodeclass(), nodepool(terminationGracePeriod="30s"))
    claim_name, node_name = h.initialized_node()
    _run_on(h, node_name, _pod("db-0", labels={"app": "db"}))
    h.kube.create(_pdb("db", "db", 1))
    h.advance(DISRUPTION_DELAY)
    h.kube.delete("NodeClaim", claim_name)
    h.advance(29)
    assert h.events("Evicted") == []
    assert h.pod("db-0")["metadata"].get("deletionTimestamp") is None
    # The tainted node woke the provisioner: room for db-0 was launched beside it.
    [room] = [c for c in h.nodeclaims() if c["metadata"]["name"] != claim_name]

    h.advance(1)
    assert h.pod("db-0")["metadata"]["deletionTimestamp"] is not None
    assert h.events("Deleted") == [("Pod", "db-0", "Deleted")]
    h.finish_terminating_pods()
    h.advance(10)
    assert [c["metadata"]["name"] for c in h.nodeclaims()] == [room["metadata"]["name"]]
    assert list(h.cloud.instances) == [h.nodeclaims()[0]["status"]["providerID"]]


def test_not_ready_node_without_instance_is_finalized_without_drain():
    h = Harness()
    h.default_setup()
    claim_name, node_name = h.initialized_node()
    _run_on(h, node_name, _pod("app"))
    h.cloud.instances.clear()  # the instance vanished (e.g. terminated outside Joiner)
    h.set_node_ready(node_name, ready=False)
    h.kube.delete("NodeClaim", claim_name)
    h.settle()
    assert h.events("Evicted") == []
    assert h.kube.list("NodeClaim").items == []
    try:
        h.kube.get("Node", node_name)
        raise AssertionError("the Node should be gone")
    except NotFound:
        pass


def test_deleting_the_node_deletes_its_nodeclaim_and_drains():
    h = Harness()
    h.default_setup()
    claim_name, node_name = h.initialized_node()
    _run_on(h, node_name, _pod("app"))
    h.kube.delete("Node", node_name)  # kubectl delete node: the finalizer holds it
    h.settle()
    assert h.kube.get("NodeClaim", claim_name)["metadata"]["deletionTimestamp"] is not None
    assert h.events("Evicted") == [("Pod", "app", "Evicted")]
    h.finish_terminating_pods()
    h.advance(10)
    assert h.kube.list("NodeClaim").items == []
    assert h.kube.list("Node").items == []


def test_tainting_for_termination_leaves_the_watched_node_object_as_it_was():
    h = Harness()
    h.default_setup()
    claim_name, node_name = h.initialized_node()
    h.kube.delete("NodeClaim", claim_name)
    h.operator.pump()  # the state sees the deletion; no reconcile has run yet
    watched = h.operator.state.nodes[node_name]
    h.operator.termination.reconcile(claim_name)
    assert wk.DISRUPTED_TAINT not in (watched["spec"].get("taints") or [])
    assert wk.DISRUPTED_TAINT in h.kube.get("Node", node_name)["spec"]["taints"]
