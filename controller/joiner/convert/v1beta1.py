"""v1beta1 ``NodePool``, ``NodeClaim`` (karpenter.sh) and ``EC2NodeClass``
(karpenter.k8s.aws) to v1, as upstream's v1 conversion webhooks and its v1 migration
guide map them (the table is ``joiner.convert.fields``)."""

from __future__ import annotations

import copy
from typing import Any

from joiner.api.serialize import optional_fields
from joiner.convert import fields as f
from joiner.convert.common import (
    UBUNTU,
    Converted,
    KubeletMove,
    Options,
    ami_fields,
    section,
    source_of,
    v1_metadata,
)
from joiner.convert.notes import field_notes
from joiner.convert.report import ConversionError

WHEN_UNDERUTILIZED = "WhenUnderutilized"
# The root volume upstream's webhook gives a converted Ubuntu EC2NodeClass that had none
# (Ubuntu's default; AL2's differs).
UBUNTU_ROOT_VOLUME = {
    "deviceName": "/dev/sda1",
    "rootVolume": True,
    "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"},
}
_CLAIM_FIELDS = ("taints", "startupTaints")


def convert_nodepool(obj: dict[str, Any], options: Options) -> Converted:
    source, metadata = source_of(obj), v1_metadata(obj)
    claim = section(obj, "spec.template.spec", source)
    ref = _node_class_ref(claim.get("nodeClassRef"), source, "spec.template.spec.nodeClassRef")
    targets = {"NodePool": metadata["name"], "EC2NodeClass": ref["name"]}
    out = Converted(targets, field_notes(obj, source, targets))
    disruption = section(obj, "spec.disruption", source)
    v1_claim = _claim_spec(claim, ref)
    optional_fields(v1_claim, expireAfter=disruption.get("expireAfter"))
    template: dict[str, Any] = {"spec": v1_claim}
    template_meta = section(obj, "spec.template.metadata", source)
    if template_meta:
        template = {"metadata": copy.deepcopy(template_meta), **template}
    spec = section(obj, "spec", source)
    pool_spec = optional_fields(
        {"template": template},
        disruption=_disruption(disruption, source),
        limits=spec.get("limits"),
        weight=spec.get("weight"),
    )
    out.objects.append(
        {"apiVersion": f.NODEPOOL[0], "kind": "NodePool", "metadata": metadata, "spec": pool_spec}
    )
    kubelet = claim.get("kubelet")
    if kubelet:
        if not isinstance(kubelet, dict):
            raise ConversionError(source, "spec.template.spec.kubelet", "expected an object")
        out.kubelets.append(
            KubeletMove(ref["name"], copy.deepcopy(kubelet), source, "spec.template.spec.kubelet")
        )
    return out


def convert_nodeclaim(obj: dict[str, Any], options: Options) -> Converted:
    source, metadata = source_of(obj), v1_metadata(obj)
    spec = section(obj, "spec", source)
    ref = _node_class_ref(spec.get("nodeClassRef"), source, "spec.nodeClassRef")
    targets = {"NodeClaim": metadata["name"]}
    out = Converted(targets, field_notes(obj, source, targets))
    v1_spec = optional_fields(_claim_spec(spec, ref), resources=spec.get("resources"))
    out.objects.append(
        {"apiVersion": f.NODECLAIM[0], "kind": "NodeClaim", "metadata": metadata, "spec": v1_spec}
    )
    return out


def convert_ec2nodeclass(obj: dict[str, Any], options: Options) -> Converted:
    source, metadata = source_of(obj), v1_metadata(obj)
    targets = {"EC2NodeClass": metadata["name"]}
    out = Converted(targets, field_notes(obj, source, targets))
    spec = copy.deepcopy(section(obj, "spec", source))
    family = spec.pop("amiFamily", None)
    if family is not None:
        terms = spec.pop("amiSelectorTerms", None) or []
        spec.update(ami_fields(family, terms, source, "spec.amiFamily"))
        if family == UBUNTU and not spec.get("blockDeviceMappings"):
            spec["blockDeviceMappings"] = [copy.deepcopy(UBUNTU_ROOT_VOLUME)]
            out.added(
                source,
                "spec.blockDeviceMappings",
                f"EC2NodeClass/{metadata['name']} spec.blockDeviceMappings",
                "Ubuntu's root volume (/dev/sda1, 20Gi gp3, encrypted), which AL2 would not give",
            )
    out.objects.append(
        {
            "apiVersion": f.EC2NODECLASS[0],
            "kind": "EC2NodeClass",
            "metadata": metadata,
            "spec": spec,
        }
    )
    return out


def _node_class_ref(ref: Any, source: str, path: str) -> dict[str, str]:
    """A v1beta1 nodeClassRef (apiVersion, kind, name) as v1's (group, kind, name)."""
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or not ref["name"]:
        raise ConversionError(source, f"{path}.name", "required")
    api_version = ref.get("apiVersion") or f.EC2NODECLASS[0]
    if not isinstance(api_version, str):
        raise ConversionError(source, f"{path}.apiVersion", "expected a string")
    kind = ref.get("kind") or "EC2NodeClass"
    return {"group": api_version.split("/")[0], "kind": kind, "name": ref["name"]}


def _claim_spec(claim: dict[str, Any], ref: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeClassRef": ref,
        "requirements": copy.deepcopy(claim.get("requirements") or []),
    }
    return optional_fields(spec, **{name: claim.get(name) for name in _CLAIM_FIELDS})


def _disruption(disruption: dict[str, Any], source: str) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in disruption.items() if k != "expireAfter"}
    if out.get("consolidationPolicy") == WHEN_UNDERUTILIZED:
        if "consolidateAfter" in out:
            raise ConversionError(
                source,
                "spec.disruption.consolidateAfter",
                "not with consolidationPolicy WhenUnderutilized (v1beta1 refused both)",
            )
        out.update(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="0s")
    return out
