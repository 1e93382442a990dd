"""A small cluster of ``joiner top``'s kinds on the shared real control plane, and a
kubeconfig whose only permission is top's read-only ClusterRole. Names carry the test
namespace's digest: cluster-scoped objects of parallel tests never collide, and rows
stay short enough for a 120-column terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from joiner.api import labels as wk
from joiner.api.crds import render_crds
from joiner.kube.api import NotFound
from joiner.kube.http import HttpKube
from joiner.testing import nodeclaim, nodepool
from joiner.testing.envtest import ControlPlane
from joiner.top.live import READ_ONLY_RULES
from top_cluster import TopCluster

RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture
def top_cluster(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> Iterator[TopCluster]:
    control_plane.install_crds(render_crds())
    kube = control_plane.admin_kube()
    tag = namespace[-8:]  # the digest: short names fit a 120-column terminal
    cluster = TopCluster(
        kube,
        namespace,
        pool=tag,
        node=f"{tag}a",
        claim=f"{tag}c",
        kubeconfig=_reader_kubeconfig(control_plane, kube, namespace, tag, tmp_path),
    )
    created = [
        kube.create(nodepool(name=tag)),
        kube.create(
            nodeclaim(
                cluster.claim,
                nodepool=tag,
                labels={wk.INSTANCE_TYPE: "c5.large", wk.CAPACITY_TYPE: "spot"},
            )
        ),
    ]
    cluster.add_node(cluster.node, "m5.large", "on-demand", "1930m")
    cluster.bind_pod("web-1", cluster.node, "500m", "1Gi")
    try:
        yield cluster
    finally:
        names = [(o["kind"], o["metadata"]["name"]) for o in created]
        names += [("Node", n["metadata"]["name"]) for n in kube.list("Node") if _ours(n, tag)]
        names += [("ClusterRole", tag), ("ClusterRoleBinding", tag)]
        for kind, name in names:
            with contextlib.suppress(NotFound):
                kube.delete(kind, name)
        kube.close()


def _reader_kubeconfig(
    plane: ControlPlane, kube: HttpKube, namespace: str, name: str, tmp_path: Path
) -> Path:
    """A kubeconfig of ServiceAccount ``namespace/top`` bound to a ClusterRole of
    ``READ_ONLY_RULES`` (nodes are cluster-scoped: a namespaced Role cannot grant them)."""
    kube.create(
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": READ_ONLY_RULES,
        }
    )
    kube.create(
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": "top", "namespace": namespace}],
        }
    )
    token = plane.service_account_token(namespace, "top")
    return plane.write_kubeconfig(tmp_path / "top.kubeconfig", token=token)


def _ours(node: dict[str, Any], tag: str) -> bool:
    return node["metadata"]["name"].startswith(tag)
