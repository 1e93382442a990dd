"""v1alpha5 ``Provisioner`` (karpenter.sh) and v1alpha1 ``AWSNodeTemplate``
(karpenter.k8s.aws) to v1 ``NodePool`` and ``EC2NodeClass``, as karpenter-convert and
upstream's v1beta1 and v1 migration guides map them (the table is
``joiner.convert.fields``)."""

from __future__ import annotations

import copy
from typing import Any

from joiner.api import labels as wk
from joiner.api.duration import NEVER
from joiner.api.serialize import optional_fields
from joiner.convert import fields as f
from joiner.convert.common import (
    DEFAULT_AMI_FAMILY,
    ROLE_PLACEHOLDER,
    Converted,
    KubeletMove,
    Options,
    ami_fields,
    renamed_annotations,
    requirement_list,
    seconds_to_duration,
    section,
    source_of,
    v1_metadata,
)
from joiner.convert.notes import field_notes
from joiner.convert.report import ConversionError, Note, Outcome

NODE_CLASS_GROUP = "karpenter.k8s.aws"
_ID_KEYS = ("aws-ids", "aws::ids")
# The requirements v1alpha5's AWS webhook added when a Provisioner left the key out
# (karpenter-convert writes them too unless --ignore-defaults).
_INSTANCE_SHAPE_KEYS = (
    wk.INSTANCE_TYPE,
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-generation",
)
_DEFAULTS: tuple[tuple[tuple[str, ...], tuple[dict[str, Any], ...]], ...] = (
    (("kubernetes.io/os",), ({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},)),
    (
        ("kubernetes.io/arch",),
        ({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},),
    ),
    (
        (wk.CAPACITY_TYPE,),
        ({"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},),
    ),
    (
        _INSTANCE_SHAPE_KEYS,
        (
            {
                "key": "karpenter.k8s.aws/instance-category",
                "operator": "In",
                "values": ["c", "m", "r"],
            },
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
        ),
    ),
)


def convert_provisioner(obj: dict[str, Any], options: Options) -> Converted:
    source, metadata = source_of(obj), v1_metadata(obj)
    name = metadata["name"]
    spec = section(obj, "spec", source)
    class_name = _class_name(spec, name, source)
    targets = {"NodePool": name, "EC2NodeClass": class_name}
    out = Converted(targets, field_notes(obj, source, targets))
    pool_spec: dict[str, Any] = {
        "template": _template(spec, class_name, source, options, out),
        "disruption": _disruption(obj, source, out),
    }
    limits = section(obj, "spec.limits", source).get("resources")
    optional_fields(pool_spec, limits=limits, weight=spec.get("weight"))
    out.objects.append(
        {"apiVersion": f.NODEPOOL[0], "kind": "NodePool", "metadata": metadata, "spec": pool_spec}
    )
    provider = spec.get("provider")
    if provider is not None:
        if not isinstance(provider, dict):
            raise ConversionError(source, "spec.provider", "expected an object")
        class_spec = node_class_spec(provider, source, "spec.provider", options, out)
        out.objects.append(_node_class({"name": name}, class_spec))
    _move_kubelet(obj, class_name, source, out)
    return out


def _class_name(spec: dict[str, Any], name: str, source: str) -> str:
    """The EC2NodeClass the pool uses: the AWSNodeTemplate of ``providerRef``, or the
    one the inline ``provider`` becomes (named after the Provisioner)."""
    ref = spec.get("providerRef")
    if ref is None:
        return name
    if spec.get("provider") is not None:
        raise ConversionError(source, "spec.provider", "set either provider or providerRef")
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or not ref["name"]:
        raise ConversionError(source, "spec.providerRef.name", "required")
    kind = ref.get("kind", "AWSNodeTemplate")
    if kind != "AWSNodeTemplate":
        raise ConversionError(
            source, "spec.providerRef.kind", f"expected AWSNodeTemplate, got {kind!r}"
        )
    return ref["name"]


def _template(
    spec: dict[str, Any], class_name: str, source: str, options: Options, out: Converted
) -> dict[str, Any]:
    """The NodePool's ``spec.template``: labels and annotations, then the claim spec."""
    annotations = spec.get("annotations")
    if annotations is not None:
        annotations = renamed_annotations(annotations, source, "spec.annotations")
    meta = optional_fields({}, labels=spec.get("labels"), annotations=annotations)
    claim = _claim_spec(spec, class_name, source, options, out)
    return {"metadata": meta, "spec": claim} if meta else {"spec": claim}


def _move_kubelet(obj: dict[str, Any], class_name: str, source: str, out: Converted) -> None:
    kubelet = section(obj, "spec.kubeletConfiguration", source)
    moved = {k: copy.deepcopy(v) for k, v in kubelet.items() if k in f.KUBELET_FIELDS}
    if moved:
        out.kubelets.append(KubeletMove(class_name, moved, source, "spec.kubeletConfiguration"))


def convert_node_template(obj: dict[str, Any], options: Options) -> Converted:
    source, metadata = source_of(obj), v1_metadata(obj)
    targets = {"EC2NodeClass": metadata["name"]}
    out = Converted(targets, field_notes(obj, source, targets))
    spec = section(obj, "spec", source)
    class_spec = node_class_spec(spec, source, "spec", options, out)
    out.objects.append(_node_class(metadata, class_spec))
    return out


def node_class_spec(
    aws: dict[str, Any], source: str, at: str, options: Options, out: Converted
) -> dict[str, Any]:
    """The v1 EC2NodeClass spec of an AWSNodeTemplate's spec or a Provisioner's
    ``spec.provider`` (at ``at``)."""
    spec: dict[str, Any] = {}
    for old, new in (
        ("subnetSelector", "subnetSelectorTerms"),
        ("securityGroupSelector", "securityGroupSelectorTerms"),
    ):
        if aws.get(old) is not None:
            spec[new] = _id_or_tag_terms(aws[old], source, f"{at}.{old}", out)
    family = aws.get("amiFamily")
    if family is None:
        family = DEFAULT_AMI_FAMILY
        out.added(
            source,
            f"{at}.amiFamily",
            "EC2NodeClass spec.amiSelectorTerms",
            "unset: AL2, the old default",
        )
    terms = _ami_terms(aws.get("amiSelector"), source, f"{at}.amiSelector", out)
    spec.update(ami_fields(family, terms, source, f"{at}.amiFamily"))
    if aws.get("instanceProfile") is not None:
        spec["instanceProfile"] = aws["instanceProfile"]
    else:
        spec["role"] = options.role or ROLE_PLACEHOLDER
        out.added(
            source,
            f"{at}.instanceProfile",
            "EC2NodeClass spec.role",
            "unset: the nodes used the controller's default instance profile; "
            + (
                f"role {options.role} as given"
                if options.role
                else f"replace {ROLE_PLACEHOLDER} with that profile's role (or use --role)"
            ),
        )
    mappings = aws.get("blockDeviceMappings")
    if mappings is not None:
        if not isinstance(mappings, list):
            raise ConversionError(source, f"{at}.blockDeviceMappings", "expected a list")
        mappings = [
            {k: v for k, v in m.items() if k != "virtualName"}
            for m in mappings
            if isinstance(m, dict)
        ]
    return optional_fields(
        spec,
        userData=aws.get("userData"),
        tags=aws.get("tags"),
        context=aws.get("context"),
        metadataOptions=aws.get("metadataOptions"),
        detailedMonitoring=aws.get("detailedMonitoring"),
        blockDeviceMappings=mappings,
    )


def _node_class(metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f.EC2NODECLASS[0],
        "kind": "EC2NodeClass",
        "metadata": metadata,
        "spec": spec,
    }


def _claim_spec(
    spec: dict[str, Any], class_name: str, source: str, options: Options, out: Converted
) -> dict[str, Any]:
    requirements = requirement_list(spec.get("requirements") or [], source, "spec.requirements")
    if not options.ignore_defaults:
        requirements += _default_requirements(requirements, source, out)
    claim: dict[str, Any] = {
        "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": "EC2NodeClass", "name": class_name},
        "requirements": requirements,
    }
    optional_fields(claim, taints=spec.get("taints"), startupTaints=spec.get("startupTaints"))
    ttl = spec.get("ttlSecondsUntilExpired")
    if ttl is None:
        claim["expireAfter"] = NEVER
        out.added(
            source,
            "spec.ttlSecondsUntilExpired",
            "NodePool spec.template.spec.expireAfter",
            "unset: Never, as v1alpha5 nodes did not expire (v1's default is 720h)",
        )
    else:
        claim["expireAfter"] = seconds_to_duration(ttl, source, "spec.ttlSecondsUntilExpired")
    return claim


def _default_requirements(
    requirements: list[Any], source: str, out: Converted
) -> list[dict[str, Any]]:
    keys = {r.get("key") for r in requirements}
    added: list[dict[str, Any]] = []
    for trigger, defaults in _DEFAULTS:
        if keys.isdisjoint(trigger):
            for requirement in defaults:
                added.append(copy.deepcopy(requirement))
                out.added(
                    source,
                    "spec.requirements",
                    "NodePool spec.template.spec.requirements",
                    f"{requirement['key']} {requirement['operator']} {requirement['values']}: the "
                    "v1alpha5 default (convert with --ignore-defaults to leave it out)",
                )
    return added


def _disruption(obj: dict[str, Any], source: str, out: Converted) -> dict[str, Any]:
    spec = section(obj, "spec", source)
    enabled = section(obj, "spec.consolidation", source).get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise ConversionError(
            source, "spec.consolidation.enabled", f"expected true or false, got {enabled!r}"
        )
    ttl = spec.get("ttlSecondsAfterEmpty")
    if enabled and ttl is not None:
        raise ConversionError(
            source,
            "spec.ttlSecondsAfterEmpty",
            "not with spec.consolidation.enabled (v1alpha5 refused both; keep one)",
        )
    if enabled:
        return {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
    if ttl is not None:
        after = seconds_to_duration(ttl, source, "spec.ttlSecondsAfterEmpty")
        return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": after}
    out.added(
        source,
        "spec.ttlSecondsAfterEmpty",
        "NodePool spec.disruption.consolidateAfter",
        "unset: WhenEmpty with consolidateAfter Never, as the Provisioner removed no "
        "node for being empty or underused",
    )
    return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": NEVER}


def _id_or_tag_terms(selector: Any, source: str, path: str, out: Converted) -> list[dict[str, Any]]:
    """A v1alpha1 subnet or security-group selector map as v1 terms."""
    if not isinstance(selector, dict):
        raise ConversionError(source, path, "expected a map of tags")
    ids = _listed(selector.get("aws-ids", selector.get("aws::ids")))
    tags = {k: v for k, v in selector.items() if k not in _ID_KEYS}
    if not ids:
        return [{"tags": tags}]
    _note_narrowing(tags, source, path, out)
    return [{"id": i} for i in ids]


def _ami_terms(selector: Any, source: str, path: str, out: Converted) -> list[dict[str, Any]]:
    """A v1alpha1 AMI selector map as v1 terms: one per id, else one per owner and name
    combination (with the tags in each)."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        raise ConversionError(source, path, "expected a map of tags")
    ids = _listed(selector.get("aws-ids", selector.get("aws::ids")))
    rest = {k: v for k, v in selector.items() if k not in _ID_KEYS}
    if ids:
        _note_narrowing(rest, source, path, out)
        return [{"id": i} for i in ids]
    tags = {k: v for k, v in rest.items() if k not in ("aws::name", "aws::owners")}
    names = _listed(rest.get("aws::name")) or [None]
    owners = _listed(rest.get("aws::owners")) or [None]
    return [
        optional_fields({}, name=name, owner=owner, tags=tags) for owner in owners for name in names
    ]


def _note_narrowing(others: dict[str, Any], source: str, path: str, out: Converted) -> None:
    """The old selector ANDed ids with its other keys; a v1 term with an id takes nothing
    else, so those keys are reported, not kept."""
    if others:
        out.notes.append(
            Note(
                source,
                path,
                Outcome.NO_EQUIVALENT,
                message=f"with aws::ids, v1 terms select by id alone; {', '.join(sorted(others))} "
                "(which narrowed the ids) are not kept: check the ids are the ones you meant",
            )
        )


def _listed(value: Any) -> list[str]:
    """A comma-separated selector value as its items."""
    if not isinstance(value, str):
        return []
    return [item.strip() for item in value.split(",") if item.strip()]
