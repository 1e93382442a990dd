"""Builders of valid Joiner and Kubernetes objects for tests and benchmarks (Joiner's
counterpart of Karpenter's pkg/test). Each returns a fresh plain dict in the form the API
server stores, with defaults that pass validation; keywords override them. Also a
simulator scenario document, and ``OperatorRig``: the operator on a virtual clock over
the memory adapter and the fake cloud. Users may build their own tests on these too."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from joiner.api import labels as wk
from joiner.api.validation import validate_object
from joiner.clock import FakeClock
from joiner.cloudprovider.aws.tags import DISCOVERY_TAG
from joiner.cloudprovider.fake import FakeCloudProvider
from joiner.cloudprovider.types import InstanceType
from joiner.controllers.interruption.controller import InterruptionFeed
from joiner.kube.api import KubeAPI
from joiner.kube.memory import MemoryKube
from joiner.operator import Operator, OperatorOptions
from joiner.state.feed import DrainFeed

DEFAULT_CAPACITY_TYPES = (wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND)
MAX_STEPS = 10_000  # reconciles in one instant before the operator counts as looping


def requirement(key: str, operator: str = "In", values: Iterable[str] = ()) -> dict[str, Any]:
    """A node selector requirement; Exists and DoesNotExist carry no values."""
    if operator in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": operator}
    return {"key": key, "operator": operator, "values": list(values)}


def capacity_types(*types: str) -> dict[str, Any]:
    """The requirement on karpenter.sh/capacity-type In ``types``."""
    return requirement(wk.CAPACITY_TYPE, "In", types)


def nodeclass_ref(name: str = "default") -> dict[str, str]:
    """A NodePool's or NodeClaim's reference to an EC2NodeClass."""
    return {"group": wk.AWS_GROUP, "kind": "EC2NodeClass", "name": name}


def ec2nodeclass(
    name: str = "default", cluster: str = "test", role: str = "NodeRole", **spec: Any
) -> dict[str, Any]:
    """An EC2NodeClass on the latest AL2023 AMI whose subnets and security groups are
    discovered by the ``karpenter.sh/discovery: <cluster>`` tag. ``spec`` keywords are
    EC2NodeClass spec fields (camelCase, e.g. ``securityGroupSelectorTerms=[...]``) that
    replace or add to these."""
    return {
        "apiVersion": wk.AWS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "role": role,
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster}}],
            "securityGroupSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster}}],
            **spec,
        },
    }


def nodepool(
    name: str = "default",
    requirements: list[dict[str, Any]] | None = None,
    disruption: dict[str, Any] | None = None,
    limits: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    expire_after: str | None = None,
    nodeclass: str = "default",
    weight: int | None = None,
    replicas: int | None = None,
    **template_spec: Any,
) -> dict[str, Any]:
    """A NodePool of ``nodeclass``, by default allowing spot and on-demand capacity.
    ``labels`` go on its nodes; ``template_spec`` keywords are further NodeClaim template
    spec fields (camelCase, e.g. ``taints=[...]``). What is left None is left out, so
    the API's defaults apply."""
    node_spec: dict[str, Any] = {
        "nodeClassRef": nodeclass_ref(nodeclass),
        "requirements": (
            requirements if requirements is not None else [capacity_types(*DEFAULT_CAPACITY_TYPES)]
        ),
        **template_spec,
    }
    if expire_after is not None:
        node_spec["expireAfter"] = expire_after
    template: dict[str, Any] = {"spec": node_spec}
    if labels:
        template["metadata"] = {"labels": labels}
    spec: dict[str, Any] = {"template": template}
    optional = {"weight": weight, "limits": limits, "disruption": disruption, "replicas": replicas}
    spec.update({field: value for field, value in optional.items() if value is not None})
    return {
        "apiVersion": wk.API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


def nodeclaim(
    name: str,
    nodepool: str = "default",
    requirements: list[dict[str, Any]] | None = None,
    requests: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    nodeclass: str = "default",
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A NodeClaim of ``nodepool`` (labelled with it, plus ``labels``), by default spot or
    on-demand, requesting ``requests`` (1 CPU when None). ``status`` is set when given,
    as for a claim already launched."""
    claim: dict[str, Any] = {
        "apiVersion": wk.API_VERSION,
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {wk.NODEPOOL: nodepool, **(labels or {})}},
        "spec": {
            "nodeClassRef": nodeclass_ref(nodeclass),
            "requirements": (
                requirements
                if requirements is not None
                else [capacity_types(*DEFAULT_CAPACITY_TYPES)]
            ),
            "resources": {"requests": requests or {"cpu": "1"}},
        },
    }
    if status is not None:
        claim["status"] = status
    return claim


def container(
    cpu: str | None = None, memory: str | None = None, name: str = "main", image: str = "app"
) -> dict[str, Any]:
    """A container requesting the given CPU and memory (either may be left out)."""
    requests = {resource: value for resource, value in (("cpu", cpu), ("memory", memory)) if value}
    return {"name": name, "image": image, "resources": {"requests": requests}}


def pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod with one container requesting ``cpu`` and ``memory``, as a workload
    controller creates it (no node, no status). ``spec`` keywords are further pod spec
    fields (camelCase, e.g. ``nodeSelector={...}``)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [container(cpu, memory)], **spec},
    }


def deployment(
    name: str,
    replicas: int,
    cpu: str,
    memory: str,
    namespace: str = "default",
    annotations: dict[str, str] | None = None,
    **pod_spec: Any,
) -> dict[str, Any]:
    """A Deployment of ``replicas`` pods labelled ``app: <name>``, each with one container
    requesting ``cpu`` and ``memory``. ``annotations`` go on the pod template;
    ``pod_spec`` keywords are further pod spec fields (camelCase)."""
    template_metadata: dict[str, Any] = {"labels": {"app": name}}
    if annotations is not None:
        template_metadata["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": template_metadata,
                "spec": {"containers": [container(cpu, memory, name="app")], **pod_spec},
            },
        },
    }


def pod_disruption_budget(
    app: str, max_unavailable: int | str = 0, namespace: str = "default"
) -> dict[str, Any]:
    """A PDB over the pods labelled ``app=<app>`` (as ``deployment`` labels them);
    ``max_unavailable=0`` allows no voluntary disruption."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": namespace},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }


def scenario_instance_type(
    name: str, cpu: str, memory: str, prices: dict[str, float], **fields: Any
) -> dict[str, Any]:
    """An instance type in a scenario's fake catalogue. ``prices`` maps
    "zone/capacity-type" to a price, one offering each; ``fields`` are further entry
    fields (``pods=20``, ``overhead={...}``)."""
    offerings = []
    for key, price in prices.items():
        zone, capacity_type = key.split("/")
        offerings.append({"zone": zone, "capacityType": capacity_type, "price": price})
    return {"name": name, "cpu": cpu, "memory": memory, **fields, "offerings": offerings}


def scenario(
    name: str,
    instance_types: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    steps: list[dict[str, Any]] | None = None,
    cluster: str = "test",
    zones: Iterable[str] = ("zone-a", "zone-b"),
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A simulator scenario document (joiner.sim/v1) on the fake cloud in us-east-1:
    ``instance_types`` in the scenario's catalogue form, ``objects`` created at the start,
    then ``steps``. ``settings`` (controller settings by environment name) when given."""
    spec: dict[str, Any] = {
        "cluster": {"name": cluster, "region": "us-east-1", "zones": list(zones)},
        "cloud": {"provider": "fake", "instanceTypes": instance_types},
    }
    if settings is not None:
        spec["settings"] = settings
    spec.update(objects=objects, steps=steps or [])
    return {
        "apiVersion": "joiner.sim/v1",
        "kind": "Scenario",
        "metadata": {"name": name},
        "spec": spec,
    }


def on_demand_pool_scenario(
    name: str,
    instance_types: list[dict[str, Any]],
    disruption: dict[str, Any],
    objects: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    feature_gates: str,
) -> dict[str, Any]:
    """``scenario`` with the default EC2NodeClass and one on-demand NodePool disrupted as
    ``disruption`` says, then ``objects``; ``feature_gates`` is FEATURE_GATES."""
    pool = nodepool(requirements=[capacity_types("on-demand")], disruption=disruption)
    return scenario(
        name,
        instance_types=instance_types,
        objects=[ec2nodeclass(), pool, *objects],
        steps=steps,
        settings={"FEATURE_GATES": feature_gates},
    )


def kubelet_node(claim: dict[str, Any], name: str) -> dict[str, Any]:
    """The Node a launched NodeClaim's kubelet registers: the claim's labels (and the
    hostname), its providerID, capacity and allocatable, still tainted unregistered and
    with no conditions yet (the caller reports Ready or not)."""
    status = claim["status"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**claim["metadata"]["labels"], wk.HOSTNAME: name}},
        "spec": {"providerID": status["providerID"], "taints": [dict(wk.UNREGISTERED_TAINT)]},
        "status": {
            "capacity": status["capacity"],
            "allocatable": status["allocatable"],
            "conditions": [],
        },
    }


def create_unschedulable(kube: KubeAPI, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the pod and mark it as kube-scheduler does when no node fits it; returns
    the stored pod."""
    created = kube.create(manifest)
    created["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    return kube.update_status(created)


class OperatorRig:
    """The operator over the memory adapter and the fake cloud on a virtual clock,
    driven as the simulator drives it: at each instant pump the watches, run every due
    reconcile and the store's emulated kube-controller-manager until nothing more
    happens, then jump to the next due time. Tests play kubelet and kube-scheduler
    through ``kube``."""

    def __init__(
        self,
        instance_types: list[InstanceType],
        options: OperatorOptions | None = None,
        interruption_feed: InterruptionFeed | None = None,
    ) -> None:
        self.clock = FakeClock()
        self.kube = MemoryKube(self.clock)
        self.cloud = FakeCloudProvider(instance_types, self.clock)
        self.operator = Operator(
            self.kube,
            self.cloud,
            self.clock,
            self.cloud.resolve_nodeclass,
            options,
            validate=validate_object,
            interruption_feed=interruption_feed,
        )
        self.operator.attach(DrainFeed)

    def settle(self) -> None:
        """Run the current instant to quiescence."""
        for _ in range(MAX_STEPS):
            ran = (
                self.operator.pump() + self.operator.manager.run_due() + self.kube.run_controllers()
            )
            if not ran:
                return
        raise AssertionError(f"the operator did not settle within {MAX_STEPS} steps")

    def _next_due(self) -> float | None:
        dues = [d for d in (self.operator.manager.next_due(), self.kube.next_due()) if d]
        return min(dues, default=None)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, stopping at every instant something is due."""
        end = self.clock.now() + seconds
        self.settle()
        while (due := self._next_due()) is not None and due <= end:
            self.clock.set(max(due, self.clock.now()))
            self.settle()
        self.clock.set(end)
        self.settle()
