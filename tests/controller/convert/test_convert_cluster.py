"""``joiner convert --from-cluster --apply`` against the real kube-apiserver: the old
kinds are read from the cluster, the v1 objects written back and stored exactly as
converted (with the server's defaults).

The old CRDs are stand-ins: Provisioner (karpenter.sh/v1alpha5) and AWSNodeTemplate
(karpenter.k8s.aws/v1alpha1) with their group, version, names and scope as upstream's,
and a schema that keeps unknown fields (upstream's generated schemas are not copied
here; the field table is tested against upstream's types in test_convert_fields)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from joiner.api.crds import render_crds
from joiner.api.validation import apply_defaults
from joiner.cli import main
from joiner.convert import Options, convert_objects
from joiner.kube.api import NotFound
from joiner.kube.resources import ResourceKind
from joiner.testing.envtest import ControlPlane

NAME = "joiner-convert-cluster-test"
OLD_KINDS = (
    ResourceKind("Provisioner", "karpenter.sh", "v1alpha5", "provisioners", False, custom=True),
    ResourceKind(
        "AWSNodeTemplate", "karpenter.k8s.aws", "v1alpha1", "awsnodetemplates", False, custom=True
    ),
)
PROVISIONER = {
    "apiVersion": "karpenter.sh/v1alpha5",
    "kind": "Provisioner",
    "metadata": {"name": NAME},
    "spec": {
        "providerRef": {"name": NAME},
        "requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
        ],
        "kubeletConfiguration": {"maxPods": 42},
        "limits": {"resources": {"cpu": "100"}},
        "consolidation": {"enabled": True},
        "ttlSecondsUntilExpired": 604800,
        "weight": 5,
    },
}
TEMPLATE = {
    "apiVersion": "karpenter.k8s.aws/v1alpha1",
    "kind": "AWSNodeTemplate",
    "metadata": {"name": NAME},
    "spec": {
        "amiFamily": "AL2023",
        "instanceProfile": "KarpenterNodeInstanceProfile-demo",
        "subnetSelector": {"karpenter.sh/discovery": "demo"},
        "securityGroupSelector": {"aws-ids": "sg-1, sg-2"},
        "tags": {"team": "a"},
    },
}


def _stand_in_crd(kind: ResourceKind) -> dict[str, Any]:
    keep = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema = {"type": "object", "properties": {"spec": keep, "status": keep}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{kind.group}"},
        "spec": {
            "group": kind.group,
            "names": {"kind": kind.kind, "plural": kind.plural, "listKind": f"{kind.kind}List"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


@pytest.fixture
def old_objects(control_plane: ControlPlane) -> Iterator[None]:
    control_plane.install_crds([*render_crds(), *(_stand_in_crd(k) for k in OLD_KINDS)])
    kube = control_plane.admin_kube()
    for kind in OLD_KINDS:
        kube.registry.add(kind)
    created = [kube.create(PROVISIONER), kube.create(TEMPLATE)]
    yield
    for obj in created:
        kube.delete(obj["kind"], NAME, api_version=obj["apiVersion"])
    for kind, version in (
        ("NodePool", "karpenter.sh/v1"),
        ("EC2NodeClass", "karpenter.k8s.aws/v1"),
    ):
        with contextlib.suppress(NotFound):  # not there when the test failed before --apply
            kube.delete(kind, NAME, api_version=version)
    kube.close()


def test_from_cluster_apply_writes_the_converted_objects(
    control_plane: ControlPlane,
    old_objects: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "kubeconfig")
    argv = ["convert", "--from-cluster", "--kubeconfig", str(kubeconfig), "--apply"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    expected = convert_objects([PROVISIONER, TEMPLATE], Options())
    assert list(yaml.safe_load_all(out)) == expected.objects
    assert err.splitlines()[-2:] == [f"NodePool/{NAME} created", f"EC2NodeClass/{NAME} created"]
    kube = control_plane.admin_kube()
    try:
        for obj in expected.objects:
            stored = kube.get(obj["kind"], NAME, api_version=obj["apiVersion"])
            assert stored["spec"] == apply_defaults(obj)["spec"]
        node_class = expected.objects[1]["spec"]
        assert node_class["kubelet"] == {"maxPods": 42}
        assert node_class["securityGroupSelectorTerms"] == [{"id": "sg-1"}, {"id": "sg-2"}]
        assert node_class["instanceProfile"] == "KarpenterNodeInstanceProfile-demo"
        assert node_class["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    finally:
        kube.close()
    # a second apply replaces what the first wrote
    assert main(argv) == 0
    assert capsys.readouterr().err.splitlines()[-2:] == [
        f"NodePool/{NAME} configured",
        f"EC2NodeClass/{NAME} configured",
    ]


def test_apply_does_not_write_nodeclaims(
    control_plane: ControlPlane, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    control_plane.install_crds(render_crds())
    claim = {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodeClaim",
        "metadata": {"name": NAME},
        "spec": {"nodeClassRef": {"name": "default"}, "requirements": []},
    }
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "kubeconfig")
    assert main(["convert", "--kubeconfig", str(kubeconfig), "--apply", str(path)]) == 0
    out, err = capsys.readouterr()
    assert [o["kind"] for o in yaml.safe_load_all(out)] == ["NodeClaim"]
    assert err.splitlines()[-1] == (
        f"NodeClaim/{NAME} not applied (the controller's own; printed only)"
    )
    kube = control_plane.admin_kube()
    try:
        with pytest.raises(NotFound):
            kube.get("NodeClaim", NAME, api_version="karpenter.sh/v1")
    finally:
        kube.close()
