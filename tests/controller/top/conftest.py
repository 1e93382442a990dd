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
from joiner.testing import nodeclaim, nodepool
from joiner.testing.envtest import ControlPlane
from joiner.top.live import READ_ONLY_RULES
from top_cluster import TopCluster


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
        # top's only permission: READ_ONLY_RULES, cluster-wide (nodes are cluster-scoped)
        kubeconfig=control_plane.cluster_role_kubeconfig(
            tmp_path / "top.kubeconfig", namespace, tag, READ_ONLY_RULES
        ),
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


def _ours(node: dict[str, Any], tag: str) -> bool:
    return node["metadata"]["name"].startswith(tag)
