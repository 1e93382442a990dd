"""Checks on the Kubernetes manifests a scenario creates (``spec.objects``, ``apply``).

The simulator accepts only the kinds it emulates; everything else would be silently
inert, so it is rejected. Each manifest gets the checks the API server would make
before the simulated world sees it: the Karpenter kinds through
``joiner.api.validation``, pod templates for containers and parseable resource
quantities, workloads for a selector that matches their template, and the decoding of
every field (``joiner.kube.decoding``: types, unknown fields). Errors are
``ManifestError``s whose message names the field; ``joiner.sim.scenario`` adds the
location in the scenario file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.validation import validate_object
from joiner.kube.admission import BUILT_IN_PRIORITIES
from joiner.kube.api import BadRequest
from joiner.kube.decoding import decode_body
from joiner.kube.jsondata import clone
from joiner.kube.resources import Registry, default_registry
from joiner.kube.selectors import selector_from_label_selector
from joiner.sim.bounds import MAX_PODS, too_many_pods

# The kinds the simulated world acts on, in the order the docs list them.
EMULATED_KINDS: tuple[str, ...] = (
    "NodePool",
    "EC2NodeClass",
    "NodeClaim",
    "NodeOverlay",
    "CapacityBuffer",
    "Namespace",
    "Pod",
    "PodTemplate",
    "Deployment",
    "ReplicaSet",
    "DaemonSet",
    "Job",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
)
# The kinds ``joiner.api.validation`` checks.
SERVED_KINDS = frozenset({"NodePool", "EC2NodeClass", "NodeClaim", "NodeOverlay", "CapacityBuffer"})
# Where each pod-creating kind keeps its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}
_SELECTOR_REQUIRED = frozenset({"Deployment", "ReplicaSet", "DaemonSet"})
_COUNT_FIELDS: dict[str, tuple[str, ...]] = {
    "Deployment": ("replicas",),
    "ReplicaSet": ("replicas",),
    "Job": ("parallelism", "completions"),
}
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_REGISTRY: Registry = default_registry()


class ManifestError(ValueError):
    """A manifest the simulated API server would reject; the message names the field."""


@dataclass(frozen=True, order=True)
class ObjectRef:
    """Kind, namespace (None for cluster-scoped kinds) and name of one object."""

    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def is_namespaced(kind: str) -> bool:
    return _REGISTRY.lookup(kind).namespaced


def identify(manifest: Any) -> ObjectRef:
    """The object a manifest names, after checking apiVersion, kind and metadata."""
    if not isinstance(manifest, Mapping):
        raise ManifestError(f"expected a manifest (a mapping), got {_type(manifest)}")
    kind = manifest.get("kind")
    if kind is None or kind == "":
        raise ManifestError("kind: required")
    if not isinstance(kind, str):
        raise ManifestError(f"kind: expected a string, got {kind!r}")
    if kind not in EMULATED_KINDS:
        raise ManifestError(
            f"kind: unsupported kind {kind!r} (the simulator emulates {', '.join(EMULATED_KINDS)})"
        )
    expected = _REGISTRY.lookup(kind).api_version
    if manifest.get("apiVersion") != expected:
        raise ManifestError(
            f"apiVersion: {manifest.get('apiVersion')!r} is not served for {kind} "
            f"(expected {expected})"
        )
    metadata = manifest.get("metadata")
    if not isinstance(metadata, Mapping):
        raise ManifestError("metadata: required (a mapping with a name)")
    return ObjectRef(kind, _namespace(kind, metadata), _name(metadata))


def check_manifest(manifest: Mapping[str, Any]) -> None:
    """Raise ManifestError for the first field the API server would reject (the manifest
    has been through ``identify``)."""
    kind = manifest["kind"]
    if kind in SERVED_KINDS:
        errors = validate_object(dict(manifest))
        if errors:
            raise ManifestError(str(errors[0]))
    if kind in POD_SPEC_PATHS:
        path = POD_SPEC_PATHS[kind]
        _check_pod_spec(_dig(manifest, path), ".".join(path))
    if kind in _SELECTOR_REQUIRED or (kind == "Job" and "selector" in _spec(manifest)):
        _check_selector(manifest)
    for count_field in _COUNT_FIELDS.get(kind, ()):
        if count_field in _spec(manifest):
            _check_count(_spec(manifest)[count_field], f"spec.{count_field}")
    if kind == "PodDisruptionBudget":
        _check_pdb(_spec(manifest))
    _check_decodes(manifest)


def _check_decodes(manifest: Mapping[str, Any]) -> None:
    """What the API server's decoder refuses, as ``kubectl apply`` sends a manifest
    (``fieldValidation=Strict``): a field of the wrong type, an unknown field."""
    try:
        decode_body(_REGISTRY.lookup(manifest["kind"]), clone(dict(manifest)), "Strict", [])
    except BadRequest as error:
        raise ManifestError(error.message.split(": ", 1)[1]) from None


def _namespace(kind: str, metadata: Mapping[str, Any]) -> str | None:
    namespace = metadata.get("namespace")
    if not is_namespaced(kind):
        if namespace is not None:
            raise ManifestError(f"metadata.namespace: {kind} is cluster-scoped")
        return None
    if namespace is None:
        return "default"
    if not isinstance(namespace, str) or not _NAME.match(namespace):
        raise ManifestError(f"metadata.namespace: invalid name {namespace!r}")
    return namespace


def _name(metadata: Mapping[str, Any]) -> str:
    name = metadata.get("name")
    if name is None:
        raise ManifestError("metadata.name: required")
    if not isinstance(name, str) or len(name) > 253 or not _NAME.match(name):
        raise ManifestError(
            f"metadata.name: invalid name {name!r} (lower-case letters, digits, '-' and '.')"
        )
    return name


def _check_pod_spec(spec: Any, path: str) -> None:
    if not isinstance(spec, Mapping):
        raise ManifestError(f"{path}: required (a pod spec)")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ManifestError(f"{path}.containers: at least one container is required")
    for field_name in ("containers", "initContainers"):
        for index, container in enumerate(spec.get(field_name) or []):
            _check_container(container, f"{path}.{field_name}[{index}]")
    for map_field in ("nodeSelector", "overhead"):
        if not isinstance(spec.get(map_field) or {}, Mapping):
            raise ManifestError(f"{path}.{map_field}: expected a mapping")
    priority_class = spec.get("priorityClassName")
    if priority_class and priority_class not in BUILT_IN_PRIORITIES:
        raise ManifestError(
            f"{path}.priorityClassName: no PriorityClass {priority_class!r} (the simulated "
            f"cluster has {' and '.join(sorted(BUILT_IN_PRIORITIES))})"
        )
    if not isinstance(spec.get("tolerations") or [], list):
        raise ManifestError(f"{path}.tolerations: expected a list")


def _check_container(container: Any, path: str) -> None:
    if not isinstance(container, Mapping) or not container.get("name"):
        raise ManifestError(f"{path}.name: required")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise ManifestError(f"{path}.resources: expected a mapping")
    for part in ("requests", "limits"):
        amounts = resources.get(part) or {}
        if not isinstance(amounts, Mapping):
            raise ManifestError(f"{path}.resources.{part}: expected a mapping")
        for resource, amount in amounts.items():
            try:
                parse_quantity(amount)
            except QuantityError as error:
                raise ManifestError(f"{path}.resources.{part}.{resource}: {error}") from None


def _check_selector(manifest: Mapping[str, Any]) -> None:
    spec = _spec(manifest)
    selector = spec.get("selector")
    if not isinstance(selector, Mapping) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        raise ManifestError("spec.selector: required (matchLabels or matchExpressions)")
    template_labels = _dig(manifest, ("spec", "template", "metadata", "labels")) or {}
    if not selector_from_label_selector(selector).matches(template_labels):
        raise ManifestError("spec.selector: does not match spec.template.metadata.labels")


def _check_pdb(spec: Mapping[str, Any]) -> None:
    if "minAvailable" in spec and "maxUnavailable" in spec:
        raise ManifestError("spec: minAvailable and maxUnavailable cannot both be set")
    for budget_field in ("minAvailable", "maxUnavailable"):
        if budget_field in spec:
            _check_int_or_percent(spec[budget_field], f"spec.{budget_field}")
    if not isinstance(spec.get("selector") or {}, Mapping):
        raise ManifestError("spec.selector: expected a mapping")


def _check_int_or_percent(value: Any, path: str) -> None:
    if isinstance(value, str) and re.fullmatch(r"[0-9]+%", value):
        return
    _check_count(value, path)


def _check_count(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ManifestError(f"{path}: must be a non-negative integer, got {value!r}")
    if value > MAX_PODS:
        raise ManifestError(f"{path}: {too_many_pods(value)}")


def pods_asked(manifest: Mapping[str, Any]) -> int:
    """How many pods a (checked) manifest asks to run at once: a Deployment's or
    ReplicaSet's replicas, a Job's parallelism (not beyond its completions), a Pod
    itself. DaemonSets follow the nodes and ask for none of their own."""
    kind, spec = manifest["kind"], _spec(manifest)
    if kind in ("Deployment", "ReplicaSet"):
        return int(spec.get("replicas", 1))
    if kind == "Job":
        parallelism = int(spec.get("parallelism", 1))
        return min(parallelism, int(spec.get("completions", parallelism)))
    return 1 if kind == "Pod" else 0


def _spec(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = manifest.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _type(value: Any) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__
