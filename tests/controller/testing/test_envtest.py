"""The envtest control plane itself (``joiner.testing.envtest``): the admin may do
anything, a service account only what RBAC grants it, a kubeconfig written for either
works with kubectl, and the audit log records who was refused what."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from joiner.kube.api import Forbidden
from joiner.kube.http import HttpKube
from joiner.testing.envtest import ControlPlane, ControlPlaneError
from joiner.testing.polling import wait_for

KUBECTL = str(Path(sys.executable).with_name("kubectl"))


def _grant_pod_reads(plane: ControlPlane, namespace: str, account: str) -> None:
    admin = plane.admin_kube()
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    meta = {"name": account, "namespace": namespace}
    admin.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": meta, "rules": rules})  # fmt: skip
    admin.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }
    )


def _may_list_pods(kube: HttpKube, namespace: str) -> bool:
    try:
        kube.list("Pod", namespace)
    except Forbidden:
        return False
    return True


def test_a_service_account_may_do_only_what_rbac_grants(
    control_plane: ControlPlane, namespace: str
) -> None:
    token = control_plane.service_account_token(namespace, "reader")
    kube = HttpKube(control_plane.token_config(token))
    with pytest.raises(Forbidden) as denied:
        kube.list("Pod", namespace)
    assert 'User "system:serviceaccount:' + namespace + ':reader" cannot list resource "pods"' in (
        str(denied.value)
    )
    _grant_pod_reads(control_plane, namespace, "reader")
    # the authorizer sees a new binding through its informer, a moment later
    wait_for(lambda: _may_list_pods(kube, namespace), "the RoleBinding to take effect", 10)
    assert kube.list("Pod", namespace).items == []
    with pytest.raises(Forbidden):
        kube.list("Pod", "default")  # the Role is namespaced
    with pytest.raises(Forbidden):
        kube.list("Node")


def test_kubeconfigs_work_with_kubectl(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    admin = control_plane.write_kubeconfig(tmp_path / "admin")
    out = subprocess.run(
        [KUBECTL, "--kubeconfig", str(admin), "auth", "can-i", "delete", "nodes"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (out.returncode, out.stdout.strip()) == (0, "yes")
    token = control_plane.service_account_token(namespace, "nobody")
    limited = control_plane.write_kubeconfig(tmp_path / "nobody", token=token)
    out = subprocess.run(
        [KUBECTL, "--kubeconfig", str(limited), "auth", "can-i", "delete", "nodes"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (out.returncode, out.stdout.strip()) == (1, "no")


def test_the_audit_log_says_who_was_refused_what(envtest_assets: Path, plane_workdir: Path) -> None:
    with ControlPlane(envtest_assets, plane_workdir, audit=True) as plane:
        token = plane.service_account_token("audited", "nobody")
        kube = HttpKube(plane.token_config(token))
        with pytest.raises(Forbidden):
            kube.list("Node")
        user = "system:serviceaccount:audited:nobody"
        deadline = time.monotonic() + 10
        while not (mine := [e for e in plane.audit_events() if e["user"]["username"] == user]):
            assert time.monotonic() < deadline, "no audit event for the refused request"
            time.sleep(0.05)
    (event,) = mine
    assert (event["verb"], event["objectRef"]["resource"], event["responseStatus"]["code"]) == (
        "list",
        "nodes",
        403,
    )
    assert event["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert event["stage"] == "ResponseComplete"


def test_audit_events_need_the_audit_log(plane_workdir: Path) -> None:
    with pytest.raises(ControlPlaneError, match="audit=True"):
        ControlPlane(plane_workdir, plane_workdir).audit_events()
