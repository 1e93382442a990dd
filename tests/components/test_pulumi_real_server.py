"""Every Kubernetes object the Autoscaler (and so the Controller and the NodePools)
renders is accepted by the real kube-apiserver: applied server-side as a dry run with
fieldValidation=Strict, as `pulumi up` would apply it, so an unknown, misspelt or
misplaced field fails here instead of at deploy time.

The ServiceMonitor is the one exception: its CustomResourceDefinition belongs to the
Prometheus Operator, which is not available offline; its fields are pinned by the
Controller tests instead (test_service_monitor_pod_identity_and_existing_namespace)."""

from __future__ import annotations

from typing import Any

import pytest
from joiner.api.crds import render_crds
from joiner.kube.api import ApiError
from joiner.testing.envtest import ControlPlane
from pulumi_harness import OIDC_ISSUER, OIDC_PROVIDER_ARN, as_json, run_program
from pulumi_joiner import Autoscaler

NOT_DRY_RUN = {"ServiceMonitor": "the Prometheus Operator's CRD is not available offline"}
NODE_POOLS = {
    "default": {},
    "gpu": {
        "node_pool": {
            "template": {"spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}},
            "limits": {"cpu": "64", "nvidia.com/gpu": "8"},
            "weight": 10,
        },
        "node_class": {"amiSelectorTerms": [{"alias": "al2023@v20250101"}]},
    },
}


def rendered(namespace: str) -> list[dict[str, Any]]:
    """The Kubernetes objects of an Autoscaler with every optional object switched on."""
    program = run_program(
        lambda: (
            Autoscaler(
                "joiner",
                {
                    "cluster_name": "demo",
                    "oidc_provider_arn": OIDC_PROVIDER_ARN,
                    "oidc_provider_url": f"https://{OIDC_ISSUER}",
                    "image": "registry.example/joiner:1",
                    "namespace": namespace,
                    "service_monitor": True,
                    "node_pools": NODE_POOLS,
                },
            )
            and None
        )
    )
    return [as_json(r.inputs) for r in program.resources if r.type.startswith("kubernetes:")]


def _names(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((obj["kind"], obj["metadata"]["name"]) for obj in objects)


def test_every_rendered_object_is_accepted_by_the_real_server(
    control_plane: ControlPlane, namespace: str
) -> None:
    objects = rendered(namespace)
    crds = [obj for obj in objects if obj["kind"] == "CustomResourceDefinition"]
    for crd in crds:  # before they exist, or as an update where they do
        control_plane.dry_run(crd)
    control_plane.install_crds(crds)  # the NodePools and EC2NodeClasses need them served
    checked = [obj for obj in objects if obj["kind"] not in NOT_DRY_RUN]
    answers = [control_plane.dry_run(obj) for obj in checked if obj not in crds]
    assert _names(answers) == _names([obj for obj in checked if obj not in crds])
    assert _names(checked) == [
        ("ClusterRole", "joiner"),
        ("ClusterRoleBinding", "joiner"),
        ("CustomResourceDefinition", "capacitybuffers.autoscaling.x-k8s.io"),
        ("CustomResourceDefinition", "ec2nodeclasses.karpenter.k8s.aws"),
        ("CustomResourceDefinition", "nodeclaims.karpenter.sh"),
        ("CustomResourceDefinition", "nodeoverlays.karpenter.sh"),
        ("CustomResourceDefinition", "nodepools.karpenter.sh"),
        ("Deployment", "joiner"),
        ("EC2NodeClass", "default"),
        ("EC2NodeClass", "gpu"),
        ("Namespace", namespace),
        ("NodePool", "default"),
        ("NodePool", "gpu"),
        ("PodDisruptionBudget", "joiner"),
        ("Role", "joiner"),
        ("RoleBinding", "joiner"),
        ("Service", "joiner"),
        ("ServiceAccount", "karpenter"),
    ]
    assert _names([o for o in objects if o["kind"] in NOT_DRY_RUN]) == [
        ("ServiceMonitor", "joiner")
    ]
    deployment = next(a for a in answers if a["kind"] == "Deployment")
    assert deployment["metadata"]["namespace"] == namespace
    assert "uid" in deployment["metadata"]  # the server's own answer, not the input echoed


@pytest.mark.parametrize(
    ("kind", "break_it", "field"),
    [
        pytest.param(
            "Deployment",
            lambda obj: obj["spec"]["template"]["spec"]["containers"][0].update(imagePull="x"),
            '.spec.template.spec.containers[name="controller"].imagePull: field not declared',
            id="Deployment",
        ),
        pytest.param(
            "NodePool",
            lambda obj: obj["spec"].update(consolidation={"enabled": True}),
            ".spec.consolidation: field not declared in schema",
            id="NodePool",
        ),
    ],
)
def test_the_dry_run_refuses_an_unknown_field_and_names_it(
    control_plane: ControlPlane, namespace: str, kind: str, break_it: Any, field: str
) -> None:
    """Proof that the check above is strict: one unknown field is an error naming it."""
    control_plane.install_crds(render_crds())
    obj = next(o for o in rendered(namespace) if o["kind"] == kind)
    break_it(obj)
    with pytest.raises(ApiError) as refused:
        control_plane.dry_run(obj)
    assert field in str(refused.value)
