"""joiner.testing.kubelets on the real API server: a launched NodeClaim whose instance
exists gets a Ready Node and a renewed node Lease; one whose instance does not gets
nothing; a pod bound to the Node runs, and a deleted one finishes deleting."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api.conditions import is_true
from joiner.api.crds import render_crds
from joiner.kube.api import NotFound
from joiner.kube.http import HttpKube
from joiner.testing.envtest import ControlPlane
from joiner.testing.kubelets import NODE_LEASE_NAMESPACE, EmulatedKubelets
from joiner.testing.polling import wait_for

WAIT = 20.0
REGION = "us-east-1"


_wait = partial(wait_for, timeout=WAIT)


def _get(kube: HttpKube, kind: str, name: str, namespace: str | None = None) -> Any:
    with contextlib.suppress(NotFound):
        return kube.get(kind, name, namespace)
    return None


@pytest.fixture
def admin(control_plane: ControlPlane) -> Iterator[HttpKube]:
    control_plane.install_crds(render_crds())
    kube = control_plane.admin_kube()
    yield kube
    kube.close()


def _ready_node(kube: HttpKube, name: str) -> dict[str, Any] | None:
    node = _get(kube, "Node", name)
    return node if node and is_true(node["status"]["conditions"], "Ready") else None


def _launched_claim(kube: HttpKube, name: str, provider_id: str) -> None:
    """A NodeClaim as the controller leaves it once its instance is launched."""
    created = kube.create(testing.nodeclaim(name, labels={wk.INSTANCE_TYPE: "m5.large"}))
    created["status"] = {
        "providerID": provider_id,
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
        "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "29"},
    }
    kube.update_status(created)


def test_a_launched_instance_registers_a_ready_node_that_runs_its_pods(
    control_plane: ControlPlane, admin: HttpKube, namespace: str
) -> None:
    running, gone = f"{namespace}-a", f"{namespace}-b"  # cluster-scoped: unique names
    _launched_claim(admin, gone, "aws:///us-east-1a/i-gone")
    _launched_claim(admin, running, "aws:///us-east-1a/i-running")
    kubelet_kube = control_plane.admin_kube()
    kubelets = EmulatedKubelets(
        kubelet_kube, lambda provider_id: provider_id.endswith("i-running"), REGION
    ).start()
    try:
        node = _wait(lambda: _ready_node(admin, running), "a Ready Node")
        assert node["spec"]["providerID"] == "aws:///us-east-1a/i-running"
        labels = node["metadata"]["labels"]
        assert (labels[wk.INSTANCE_TYPE], labels[wk.HOSTNAME], labels[wk.REGION]) == (
            "m5.large",
            running,
            REGION,
        )
        assert node["status"]["allocatable"]["pods"] == "29"
        assert wk.UNREGISTERED_TAINT_KEY in {t["key"] for t in node["spec"]["taints"]}
        assert _get(admin, "Node", gone) is None  # reconciled first: its instance is gone
        lease = _wait(lambda: _get(admin, "Lease", running, NODE_LEASE_NAMESPACE), "the Lease")
        assert lease["spec"]["holderIdentity"] == running
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]

        # No Joiner controller lifts the unregistered taint here, and it is NoExecute: a
        # pod that did not tolerate it would be evicted by kube-controller-manager's
        # taint-eviction controller whenever another test has started that component.
        tolerate = {"key": wk.UNREGISTERED_TAINT_KEY, "operator": "Exists"}
        admin.create(
            testing.pod(
                "app", cpu="100m", namespace=namespace, nodeName=running, tolerations=[tolerate]
            )
        )
        _wait(
            lambda: _get(admin, "Pod", "app", namespace)["status"].get("phase") == "Running",
            "the pod to run",
        )
        admin.delete("Pod", "app", namespace)  # graceful: the kubelet finishes it
        _wait(lambda: _get(admin, "Pod", "app", namespace) is None, "the pod to go")
    finally:
        kubelets.stop()
        kubelet_kube.close()
        for name in (running, gone):
            admin.delete("NodeClaim", name)
        with contextlib.suppress(NotFound):
            admin.delete("Node", running)
