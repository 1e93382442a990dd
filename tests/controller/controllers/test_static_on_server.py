"""Static NodePools on the envtest tier's real kube-apiserver [STATIC]: ``kubectl scale``
through the NodePool's scale subresource (spec.replicas, and status.nodes read back as
the scale's status), the server refusing it on a dynamic pool with upstream's CEL
message, and the template NodeClaims the controller creates accepted by the real CRDs."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.api.crds import render_crds
from joiner.clock import FakeClock, RealClock
from joiner.cloudprovider.fake import FakeCloudProvider, new_instance_type
from joiner.controllers.context import ControllerContext
from joiner.controllers.static import StaticCapacity
from joiner.events import EventRecorder
from joiner.metrics import Metrics
from joiner.state.cluster import WATCHED_KINDS, ClusterState
from joiner.testing.envtest import ControlPlane

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
TRANSITION = (
    "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) "
    "provisioning modes"
)


class Plane:
    """The shared plane with Joiner's CRDs, an admin client and kubectl, and the NodePools
    and NodeClaims the test made (removed afterwards: cluster-scoped names)."""

    def __init__(self, plane: ControlPlane, kubeconfig: Path) -> None:
        self.plane, self.kubeconfig = plane, kubeconfig
        self.kube = plane.admin_kube()
        self.prefix = f"static-{uuid.uuid4().hex[:8]}"

    def kubectl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def pool(self, suffix: str, **more: Any) -> str:
        name = f"{self.prefix}-{suffix}"
        self.kube.create(testing.nodepool(name, **more))
        return name

    def remove(self) -> None:
        for kind in ("NodeClaim", "NodePool"):
            for obj in self.kube.list(kind).items:
                if obj["metadata"]["name"].startswith(self.prefix):
                    if obj["metadata"].get("finalizers"):
                        obj["metadata"]["finalizers"] = []
                        self.kube.update(obj)
                    self.kube.delete(kind, obj["metadata"]["name"])
        self.kube.close()


@pytest.fixture
def plane(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Plane]:
    control_plane.install_crds(render_crds())
    kubeconfig = tmp_path / "kubeconfig"
    control_plane.write_kubeconfig(kubeconfig)
    made = Plane(control_plane, kubeconfig)
    try:
        yield made
    finally:
        made.remove()


def test_kubectl_scale_sets_replicas_and_reads_status_nodes(plane: Plane) -> None:
    name = plane.pool("fixed", replicas=2)
    done = plane.kubectl("scale", f"nodepool/{name}", "--replicas=5")
    assert done.returncode == 0, done.stderr
    assert plane.kube.get("NodePool", name)["spec"]["replicas"] == 5

    pool = plane.kube.get("NodePool", name)
    pool["status"] = {"nodes": 3}
    plane.kube.update_status(pool)
    scale = plane.kubectl("get", f"nodepool/{name}", "--subresource=scale", "-o", "json")
    assert scale.returncode == 0, scale.stderr
    assert json.loads(scale.stdout)["spec"]["replicas"] == 5
    assert json.loads(scale.stdout)["status"]["replicas"] == 3


def test_kubectl_scale_of_a_dynamic_pool_is_refused_with_upstreams_message(plane: Plane) -> None:
    name = plane.pool("dynamic")
    refused = plane.kubectl("scale", f"nodepool/{name}", "--replicas=3")
    assert refused.returncode != 0
    assert TRANSITION in refused.stderr
    assert "replicas" not in plane.kube.get("NodePool", name)["spec"]


def test_the_template_nodeclaims_are_accepted_by_the_real_crds(plane: Plane) -> None:
    name = plane.pool("made", replicas=2, limits={"nodes": "4"})
    clock = FakeClock(RealClock().now())
    state = ClusterState(clock)
    for kind in WATCHED_KINDS:
        state.mark_listed(kind)
    state.apply("ADDED", plane.kube.get("NodePool", name))
    cloud = FakeCloudProvider([new_instance_type("m-2x8", cpu="2", memory="8Gi")], clock)
    ctx = ControllerContext(
        plane.kube, state, cloud, clock, EventRecorder(plane.kube, clock), Metrics()
    )

    StaticCapacity(ctx, lambda pool: True).reconcile(name)

    claims = [
        c
        for c in plane.kube.list("NodeClaim").items
        if c["metadata"]["labels"].get(wk.NODEPOOL) == name
    ]
    assert len(claims) == 2
    for claim in claims:
        assert claim["metadata"]["name"].startswith(f"{name}-")
        types = next(
            r["values"] for r in claim["spec"]["requirements"] if r["key"] == wk.INSTANCE_TYPE
        )
        assert types == ["m-2x8"]
