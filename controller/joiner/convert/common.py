"""Pieces both source versions need: metadata, durations, annotations and label keys that
were renamed, AMI families, and reading fields with errors that name them."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from joiner.api import labels as wk
from joiner.api.duration import format_duration
from joiner.convert.report import ConversionError, Note, Outcome

# Pod and node annotations of v1alpha5 that v1beta1 merged into karpenter.sh/do-not-disrupt.
RENAMED_ANNOTATIONS = {
    "karpenter.sh/do-not-evict": wk.DO_NOT_DISRUPT,
    "karpenter.sh/do-not-consolidate": wk.DO_NOT_DISRUPT,
}
# Label keys of v1alpha5 renamed by v1beta1 (pods select nodes by them).
RENAMED_LABELS = {"karpenter.sh/provisioner-name": "karpenter.sh/nodepool"}
# amiFamily values that have an alias in v1 (the alias is the family in lower case).
ALIAS_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022")
UBUNTU = "Ubuntu"
DEFAULT_AMI_FAMILY = "AL2"  # what Karpenter before v1 used when amiFamily was unset
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KARPENTER_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
# karpenter-convert's stand-in for a role it cannot know (substitute it with envsubst).
ROLE_PLACEHOLDER = "$KARPENTER_NODE_ROLE"


def source_of(obj: dict[str, Any]) -> str:
    """``Kind/name`` of an object, for notes and errors."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{obj.get('kind')}/{name}" if isinstance(name, str) and name else str(obj.get("kind"))


def v1_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """What a v1 object keeps of the old one's metadata: name, labels, annotations. What
    the server, the controller or kubectl set (uid, resourceVersion, the drift hashes,
    the last applied configuration) describes the old object and is left out."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ConversionError(source_of(obj), "metadata.name", "required")
    out: dict[str, Any] = {"name": meta["name"]}
    if meta.get("labels"):
        out["labels"] = copy.deepcopy(meta["labels"])
    given = meta.get("annotations") or {}
    if not isinstance(given, dict):
        raise ConversionError(source_of(obj), "metadata.annotations", "expected a map of strings")
    annotations = {k: v for k, v in given.items() if not _describes_old_object(str(k))}
    if annotations:
        out["annotations"] = copy.deepcopy(annotations)
    return out


def _describes_old_object(annotation: str) -> bool:
    """kubectl's last applied configuration and Karpenter's drift hashes
    (``karpenter.sh/nodepool-hash``, ``karpenter.k8s.aws/ec2nodeclass-hash-version``)."""
    if annotation == LAST_APPLIED:
        return True
    domain, _, name = annotation.partition("/")
    return domain in KARPENTER_DOMAINS and name.endswith(("-hash", "-hash-version"))


def section(obj: dict[str, Any], path: str, source: str) -> dict[str, Any]:
    """The mapping at a dotted ``path`` ({} when absent); an error naming it otherwise."""
    value: Any = obj
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return {}
    if not isinstance(value, dict):
        raise ConversionError(source, path, f"expected an object, got {type(value).__name__}")
    return value


def seconds_to_duration(value: Any, source: str, path: str) -> str:
    """A TTL in seconds as a v1 duration (``1800`` -> ``30m``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConversionError(source, path, f"expected whole seconds >= 0, got {value!r}")
    return format_duration(value)


def renamed_annotations(annotations: Any, source: str, path: str) -> dict[str, Any]:
    """``annotations`` with the old do-not-evict / do-not-consolidate keys renamed."""
    if not isinstance(annotations, dict):
        raise ConversionError(source, path, "expected a map of strings")
    return {RENAMED_ANNOTATIONS.get(key, key): value for key, value in annotations.items()}


def requirement_list(requirements: Any, source: str, path: str) -> list[Any]:
    """A copy of the requirements, each checked to be an object."""
    if not isinstance(requirements, list):
        raise ConversionError(source, path, "expected a list of requirements")
    out = []
    for index, requirement in enumerate(requirements):
        if not isinstance(requirement, dict):
            raise ConversionError(source, f"{path}[{index}]", "expected a requirement object")
        out.append(copy.deepcopy(requirement))
    return out


def alias_for(family: str) -> str:
    return f"{family.lower()}@latest"


def ami_fields(family: Any, terms: list[Any], source: str, path: str) -> dict[str, Any]:
    """The v1 EC2NodeClass fields for an old AMI family and its selector terms: an alias
    when the family has one and no terms select AMIs, else the terms and the family."""
    if not isinstance(family, str):
        raise ConversionError(source, path, f"expected an AMI family name, got {family!r}")
    if family in ALIAS_FAMILIES and not terms:
        return {"amiSelectorTerms": [{"alias": alias_for(family)}]}
    if family == UBUNTU:
        if not terms:
            raise ConversionError(
                source,
                path,
                "Ubuntu has no v1 AMI family or alias: add amiSelectorTerms that select "
                "your Ubuntu AMIs (the family then becomes AL2, whose user data Ubuntu "
                "shares), then convert again",
            )
        return {"amiFamily": DEFAULT_AMI_FAMILY, "amiSelectorTerms": terms}
    return {"amiFamily": family, "amiSelectorTerms": terms}


@dataclass(frozen=True)
class Options:
    """``role``: the node role of EC2NodeClasses whose old object names no instance
    profile (before v1 it came from the controller's settings); ``ignore_defaults``: do
    not write the requirements v1alpha5's webhook defaulted."""

    role: str | None = None
    ignore_defaults: bool = False


@dataclass(frozen=True)
class KubeletMove:
    """Kubelet settings of a pool that v1 keeps on the EC2NodeClass ``node_class``."""

    node_class: str
    kubelet: dict[str, Any]
    source: str
    path: str


@dataclass
class Converted:
    """The v1 objects of one old object, its notes, and the kubelet settings that go to
    an EC2NodeClass (which may come from another object)."""

    targets: dict[str, str]  # the name of the v1 object of each kind
    notes: list[Note] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    kubelets: list[KubeletMove] = field(default_factory=list)

    def added(self, source: str, path: str, target: str, message: str) -> None:
        """A note of a v1 field written for an old one left unset; ``target`` is
        ``Kind field``."""
        kind, _, at = target.partition(" ")
        named = f"{kind}/{self.targets.get(kind, '?')} {at}"
        self.notes.append(Note(source, path, Outcome.ADDED, named, message))
