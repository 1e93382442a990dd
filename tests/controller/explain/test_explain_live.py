"""``joiner explain`` against a live cluster: the real kube-apiserver of the shared control
plane, read by a ServiceAccount bound to nothing but ``READ_ONLY_RULES``, and the AWS
provider's instance types from moto (server mode). Names carry the test namespace's
digest: the NodePools of parallel tests never collide, and answers are read for ours."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from joiner.api import labels as wk
from joiner.api.crds import render_crds
from joiner.cli import main
from joiner.explain.live import READ_ONLY_RULES
from joiner.kube.api import NotFound
from joiner.testing import create_unschedulable, ec2nodeclass, nodepool, pod, requirement
from joiner.testing.envtest import ControlPlane

REGION = "us-east-1"


@pytest.fixture
def aws(moto_url: str, monkeypatch: pytest.MonkeyPatch, namespace: str) -> str:
    """An EKS cluster in moto, and the environment the AWS SDK and the settings read."""
    cluster = f"explain-{namespace[-8:]}"
    for name, value in {
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "CLUSTER_NAME": cluster,
        "ISOLATED_VPC": "true",  # moto serves no Price List API: the embedded prices
    }.items():
        monkeypatch.setenv(name, value)
    eks = boto3.client("eks", region_name=REGION, endpoint_url=moto_url)
    eks.create_cluster(
        name=cluster,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    return cluster


@pytest.fixture
def live(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Two NodePools (one tainted, one of small types only) of a Ready EC2NodeClass, a pod
    no node takes, a CapacityBuffer of a PodTemplate, and a read-only kubeconfig."""
    control_plane.install_crds(render_crds())
    kube = control_plane.admin_kube()
    tag = namespace[-8:]
    created: list[dict[str, Any]] = []
    try:
        nodeclass = kube.create(ec2nodeclass(tag))
        created.append(nodeclass)
        nodeclass["status"] = {
            "subnets": [{"id": "subnet-1", "zone": "us-east-1a"}],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
        kube.update_status(nodeclass)
        created.append(
            kube.create(
                nodepool(
                    f"{tag}-gpu",
                    nodeclass=tag,
                    taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
                )
            )
        )
        created.append(
            kube.create(
                nodepool(
                    f"{tag}-tiny",
                    nodeclass=tag,
                    requirements=[requirement(wk.INSTANCE_TYPE, "In", ["t3.micro", "t3.small"])],
                )
            )
        )
        create_unschedulable(kube, pod("big", "6", "1Gi", namespace=namespace))
        for obj in _buffer(namespace, tag):  # namespaced: they go with the namespace
            kube.create(obj)
        yield {
            "tag": tag,
            "kubeconfig": control_plane.cluster_role_kubeconfig(
                tmp_path / "explain.kubeconfig", namespace, tag, READ_ONLY_RULES
            ),
        }
    finally:
        for obj in reversed(created):
            with contextlib.suppress(NotFound):
                kube.delete(obj["kind"], obj["metadata"]["name"])
        for kind in ("ClusterRoleBinding", "ClusterRole"):
            with contextlib.suppress(NotFound):
                kube.delete(kind, tag)
        kube.close()


def test_a_pending_pod_on_a_live_cluster_read_only(
    live: dict[str, Any], aws: str, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each of our NodePools' reasons (other tests' pools, if any, are left out), with the
    types of moto's catalogue as the controller's AWS provider reads them."""
    tag = live["tag"]
    code = main(["explain", "pod", f"{namespace}/big", "--kubeconfig", str(live["kubeconfig"])])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert _ours(out, tag) == [
        f"pod {namespace}/big is pending",
        f"  nodepool {tag}-tiny: resources: no instance type has enough resources, requests "
        f"cpu=6, memory=1Gi, pods=1 (pod + daemonsets), nodepool={tag}-tiny",
        "    closest instance types:",
        "      t3.small: cpu short by 4070m (needs 6, has 1930m)",
        "      t3.micro: cpu short by 4070m (needs 6, has 1930m), memory short by 476Mi "
        "(needs 1Gi, has 548Mi)",
        f"  nodepool {tag}-gpu: taints: did not tolerate taint "
        f"(taint=dedicated=gpu:NoSchedule), nodepool={tag}-gpu",
    ]


def _buffer(namespace: str, tag: str) -> list[dict[str, Any]]:
    """A PodTemplate whose pods only the tiny pool's nodes take, and a buffer of 2 chunks."""
    chunk = pod("chunk", "100m", "128Mi", namespace, nodeSelector={wk.NODEPOOL: f"{tag}-tiny"})
    return [
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "chunk", "namespace": namespace},
            "template": {"metadata": {"labels": {"app": "chunk"}}, "spec": chunk["spec"]},
        },
        {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1",
            "kind": "CapacityBuffer",
            "metadata": {"name": "spare", "namespace": namespace},
            "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 2},
        },
    ]


def test_a_buffer_is_resolved_from_the_live_pod_template_read_only(
    live: dict[str, Any], aws: str, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its chunks are wanted of the tiny pool (no node holds them; no controller has
    written the buffer's status); the tainted pool, whose taint they do not tolerate,
    does not list it."""
    tag, kubeconfig = live["tag"], str(live["kubeconfig"])
    answers = {}
    for pool in ("tiny", "gpu"):
        args = ["explain", "nodepool", f"{tag}-{pool}", "--kubeconfig", kubeconfig, "-o", "json"]
        assert main(args) == 0
        buffers = json.loads(capsys.readouterr().out)["buffers"]
        answers[pool] = [b for b in buffers if b["buffer"].startswith(f"{namespace}/")]
    assert answers == {
        "tiny": [
            {
                "buffer": f"{namespace}/spare",
                "wanted": 2,
                "held": 0,
                "held_here": 0,
                "provisioning": None,
                "expansion": None,
            }
        ],
        "gpu": [],
    }


def test_a_role_without_a_rule_is_refused_and_the_list_named(
    control_plane: ControlPlane,
    live: dict[str, Any],
    aws: str,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The RBAC is enforced: without poddisruptionbudgets the read fails, in one line."""
    kube = control_plane.admin_kube()
    name = f"{live['tag']}-less"
    rules = [r for r in READ_ONLY_RULES if r["apiGroups"] != ["policy"]]
    try:
        kubeconfig = control_plane.cluster_role_kubeconfig(
            tmp_path / "less.kubeconfig", namespace, name, rules
        )
        code = main(["explain", "pod", f"{namespace}/big", "--kubeconfig", str(kubeconfig)])
        assert code == 1
        assert capsys.readouterr().err == (
            "joiner explain: list /apis/policy/v1/poddisruptionbudgets: "
            'poddisruptionbudgets.policy is forbidden: User "system:serviceaccount:'
            f'{namespace}:{name}" cannot list resource "poddisruptionbudgets" in API group '
            '"policy" at the cluster scope\n'
        )
    finally:
        for kind in ("ClusterRoleBinding", "ClusterRole"):
            with contextlib.suppress(NotFound):
                kube.delete(kind, name)
        kube.close()


def _ours(out: str, tag: str) -> list[str]:
    """The answer's first line, and the blocks of the NodePools named with ``tag``."""
    first, *rest = out.splitlines()
    kept, keeping = [first], False
    for line in rest:
        if line.startswith("  nodepool "):
            keeping = f"nodepool {tag}-" in line
        if keeping:
            kept.append(line)
    return kept


def test_the_documented_cluster_role_is_the_one_the_tests_enforce() -> None:
    operations = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    documents = re.findall(r"```yaml\n(.*?)```", operations, re.DOTALL)
    roles = [d for d in map(yaml.safe_load, documents) if isinstance(d, dict)]
    role = next(d for d in roles if d.get("metadata", {}).get("name") == "joiner-explain")
    assert role["rules"] == READ_ONLY_RULES
