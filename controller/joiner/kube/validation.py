"""Validation of the in-memory API server: 422 Invalid with causes naming fields.

It runs after decoding (``joiner.kube.decoding``: the JSON types are right) and
defaulting. Core kinds get the API server's basic object checks (metadata, names,
labels, owner references, the few required Pod fields). Karpenter kinds are defaulted
and checked by ``joiner.api.validation`` (the CRD schema and its CEL rules, immutable
fields).
"""

from __future__ import annotations

import json
import re
from typing import Any

from joiner.api import objectmeta
from joiner.api import validation as api_validation
from joiner.api.validation import FieldError
from joiner.kube.api import Cause, Invalid
from joiner.kube.resources import ResourceKind

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_OWNER_FIELDS = (
    ("apiVersion", "version must not be empty"),
    ("kind", "kind must not be empty"),
    ("name", "name must not be empty"),
    ("uid", "must not be empty"),
)
# Kinds whose names must be DNS labels rather than DNS subdomains.
_LABEL_NAMED_KINDS = frozenset({"Namespace", "Service"})


def invalid(kind: str, name: str, causes: list[Cause]) -> Invalid:
    """A 422 worded as the API server words it: one cause inline, several in brackets."""
    details = [f"{c.field}: {c.message}" for c in causes]
    detail = details[0] if len(details) == 1 else "[" + ", ".join(details) + "]"
    return Invalid(f'{kind} "{name}" is invalid: {detail}', causes)


def check_name(kind: str, name: str) -> list[Cause]:
    if kind not in _LABEL_NAMED_KINDS:
        problems = objectmeta.subdomain_problems(name)
        return [Cause("metadata.name", objectmeta.invalid(name, p)) for p in problems]
    if len(name) > 63 or not _DNS_LABEL.match(name):
        return [
            Cause(
                "metadata.name",
                f"Invalid value: {name!r}: a lowercase RFC 1123 label must consist of lower "
                "case alphanumeric characters or '-', at most 63 characters",
            )
        ]
    return []


def _check_labels(labels: dict[str, str]) -> list[Cause]:
    """Keys and values of ``metadata.labels``; the server reports both on that field."""
    causes = []
    for key, value in labels.items():
        problems = objectmeta.qualified_name_problems(key)
        shown = key
        if not problems:
            problems, shown = objectmeta.label_value_problems(value), value
        causes += [Cause("metadata.labels", objectmeta.invalid(shown, p)) for p in problems[:1]]
    return causes


def _check_owner_references(refs: list[dict[str, Any]]) -> list[Cause]:
    """Every reference names its owner fully; at most one is the controller."""
    causes = []
    for ref in refs:
        for field, what in _OWNER_FIELDS:
            if not ref.get(field):
                causes.append(
                    Cause(f"metadata.ownerReferences.{field}", f'Invalid value: "": {what}')
                )
    controllers = [r for r in refs if r.get("controller")]
    if len(controllers) > 1:
        named = " and ".join(f"{r.get('kind')}/{r.get('name')}" for r in controllers)
        causes.append(
            Cause(
                "metadata.ownerReferences",
                "Invalid value: "
                + json.dumps(refs, separators=(",", ":"))
                + ': Only one reference can have Controller set to true. Found "true" in '
                f"references for {named}",
            )
        )
    return causes


def _check_metadata(obj: dict[str, Any], needs_name: bool) -> list[Cause]:
    """What validation finds in metadata (decoding already checked the types)."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return [Cause("metadata", "Required value: must be an object", "FieldValueRequired")]
    causes: list[Cause] = []
    if needs_name and not metadata.get("name") and not metadata.get("generateName"):
        causes.append(
            Cause(
                "metadata.name",
                "Required value: name or generateName is required",
                "FieldValueRequired",
            )
        )
    causes += _check_labels(metadata.get("labels") or {})
    return causes + _check_owner_references(metadata.get("ownerReferences") or [])


def _check_pod(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [Cause("spec", "Required value", "FieldValueRequired")]
    causes = []
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and grace < 0:
        causes.append(
            Cause(
                "spec.terminationGracePeriodSeconds",
                f"Invalid value: {grace}: must be greater than or equal to 0",
            )
        )
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [*causes, Cause("spec.containers", "Required value", "FieldValueRequired")]
    return causes + [
        Cause(f"spec.containers[{i}].name", "Required value", "FieldValueRequired")
        for i, c in enumerate(containers)
        if not isinstance(c, dict) or not c.get("name")
    ]


_INT_OR_PERCENT = re.compile(r"^[0-9]+%?$")
_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def _check_int_or_percent(value: Any, field: str) -> list[Cause]:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return []
    if isinstance(value, str) and _INT_OR_PERCENT.match(value):
        return []
    return [Cause(field, f"Invalid value: {value!r}: must be a non-negative integer or percentage")]


def _check_selector(selector: Any, field: str) -> list[Cause]:
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [Cause(field, "must be a label selector object")]
    causes = []
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        at = f"{field}.matchExpressions[{i}]"
        operator = expr.get("operator") if isinstance(expr, dict) else None
        if operator not in _SELECTOR_OPERATORS:
            causes.append(Cause(f"{at}.operator", f"Unsupported value: {operator!r}"))
        elif operator in ("In", "NotIn") and not expr.get("values"):
            causes.append(Cause(f"{at}.values", "Required value: must be non-empty for In/NotIn"))
    return causes


def _check_pdb(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    causes = _check_int_or_percent(spec.get("minAvailable"), "spec.minAvailable")
    causes += _check_int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable")
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(
            Cause("spec", "Invalid value: minAvailable and maxUnavailable cannot both be set")
        )
    return causes + _check_selector(spec.get("selector"), "spec.selector")


def _kind_checks(rk: ResourceKind, obj: dict[str, Any]) -> list[Cause]:
    """The per-kind checks of the core kinds the simulator and controller write."""
    if rk.kind == "Pod" and not rk.group:
        return _check_pod(obj)
    if rk.kind == "PodDisruptionBudget":
        return _check_pdb(obj)
    return []


# What the API server adds when a schema error kept it from evaluating the CEL rules.
RULES_NOT_CHECKED = Cause("<nil>", f"Invalid value: null: {api_validation.NOT_CHECKED}")


def _custom_resource_causes(errors: list[FieldError]) -> list[Cause]:
    """The causes of a custom resource's errors, as kube-apiserver words the note that a
    blocking schema error kept it from evaluating the CEL rules."""
    return [
        RULES_NOT_CHECKED
        if (e.path, e.message) == ("", api_validation.NOT_CHECKED)
        else Cause(e.path, e.message, e.reason)
        for e in errors
    ]


def validate_create(rk: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
    """The object as stored (CRD schema defaults applied), or Invalid (422) naming every
    bad field."""
    causes = _check_metadata(obj, needs_name=True)
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = metadata.get("name")
    if not causes and isinstance(name, str) and name:
        causes += check_name(rk.kind, name)
    causes += _kind_checks(rk, obj)
    if rk.custom and not causes:
        obj = api_validation.apply_defaults(obj)
        causes += _custom_resource_causes(api_validation.validate_object(obj))
    if causes:
        raise invalid(rk.kind, str(name or metadata.get("generateName") or ""), causes)
    return obj


def validate_update(rk: ResourceKind, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The replacement as stored (defaults applied), or Invalid (422) for bad or
    immutable fields."""
    causes = _check_metadata(new, needs_name=False)
    causes += _kind_checks(rk, new)
    if rk.custom and not causes:
        new = api_validation.apply_defaults(new)
        causes += _custom_resource_causes(api_validation.validate_update(old, new))
    if causes:
        raise invalid(rk.kind, str(old["metadata"]["name"]), causes)
    return new
