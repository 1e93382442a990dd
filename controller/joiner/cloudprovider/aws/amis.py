"""AMIs of an EC2NodeClass [SPEC 1, 4.1].

An ``alias`` (``al2023@latest``, ``al2@v20240807``, ``bottlerocket@v1.20.1``) resolves
through the public SSM parameters AWS publishes for the cluster's Kubernetes version, one
AMI per architecture and variant (standard, NVIDIA, Neuron). Other terms (id, name, tags,
owner, ssmParameter) resolve through DescribeImages. Each status entry carries the
requirements an instance type must meet to boot it (architecture; GPU and accelerator
variants for the types that need their drivers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import AMI_ALIAS_FAMILIES
from joiner.api.requirements import IN, NOT_IN, Requirement, Requirements
from joiner.cloudprovider.aws.instancetypes import ARCHITECTURES
from joiner.cloudprovider.aws.selectors import ResolutionError, check_term, tag_filters

FIELD = "amiSelectorTerms"
LATEST = "latest"
STANDARD, NVIDIA, NEURON = "standard", "nvidia", "neuron"
SUPPORTED_ALIASES = ("al2", "al2023", "bottlerocket")
DEFAULT_OWNERS = ["self", "amazon"]
_EC2_ARCH = {arch: ec2 for ec2, arch in ARCHITECTURES.items()}  # amd64 -> x86_64


@dataclass(frozen=True)
class AliasVariant:
    arch: str  # kubernetes.io/arch
    variant: str  # standard | nvidia | neuron
    parameter: str


def alias_variants(family: str, version: str, k8s: str) -> list[AliasVariant]:
    """The SSM parameters behind an alias, most specific variant first."""
    if family == "al2023":
        return _al2023(version, k8s)
    if family == "al2":
        return _al2(version, k8s)
    return _bottlerocket(version, k8s)


def _al2023(version: str, k8s: str) -> list[AliasVariant]:
    root = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023"
    out = []
    for arch, variant in (
        ("amd64", NVIDIA),
        ("arm64", NVIDIA),
        ("amd64", NEURON),
        ("amd64", STANDARD),
        ("arm64", STANDARD),
    ):
        ec2_arch = _EC2_ARCH[arch]
        leaf = (
            "recommended"
            if version == LATEST
            else f"amazon-eks-node-al2023-{ec2_arch}-{variant}-{k8s}-{version}"
        )
        out.append(AliasVariant(arch, variant, f"{root}/{ec2_arch}/{variant}/{leaf}/image_id"))
    return out


def _al2(version: str, k8s: str) -> list[AliasVariant]:
    root = f"/aws/service/eks/optimized-ami/{k8s}"
    out = []
    for arch, variant, suffix in (
        ("amd64", NVIDIA, "-gpu"),
        ("amd64", STANDARD, ""),
        ("arm64", STANDARD, "-arm64"),
    ):
        leaf = "recommended" if version == LATEST else f"amazon-eks{suffix}-node-{k8s}-{version}"
        out.append(AliasVariant(arch, variant, f"{root}/amazon-linux-2{suffix}/{leaf}/image_id"))
    return out


def _bottlerocket(version: str, k8s: str) -> list[AliasVariant]:
    leaf = LATEST if version == LATEST else version.removeprefix("v")
    out = []
    for arch, variant, suffix in (
        ("amd64", NVIDIA, "-nvidia"),
        ("arm64", NVIDIA, "-nvidia"),
        ("amd64", STANDARD, ""),
        ("arm64", STANDARD, ""),
    ):
        path = f"/aws/service/bottlerocket/aws-k8s-{k8s}{suffix}/{_EC2_ARCH[arch]}/{leaf}/image_id"
        out.append(AliasVariant(arch, variant, path))
    return out


def parse_alias(terms: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(family, version) when the terms are an alias, else None; raises on misuse."""
    for index, term in enumerate(terms):
        check_term(term, f"spec.{FIELD}[{index}]")
    aliases = [(i, t["alias"]) for i, t in enumerate(terms) if t.get("alias")]
    if not aliases:
        return None
    index, alias = aliases[0]
    where = f"spec.{FIELD}[{index}].alias"
    if len(terms) > 1 or len(terms[index]) > 1:
        raise ResolutionError(f"{where}: an alias must be the only AMI selector term")
    family, _, version = str(alias).partition("@")
    if family not in AMI_ALIAS_FAMILIES:
        raise ResolutionError(
            f"{where}: unknown AMI family {family!r} (want one of {', '.join(SUPPORTED_ALIASES)})"
        )
    if family not in SUPPORTED_ALIASES:
        raise ResolutionError(f"{where}: {family} nodes are not supported by joiner")
    if not version or (version != LATEST and not version.startswith("v")):
        raise ResolutionError(f"{where}: version must be 'latest' or start with 'v', got {alias!r}")
    return family, version


class AMIResolver:
    def __init__(self, ec2: Any, ssm: Any, kubernetes_version: str | None) -> None:
        self._ec2 = ec2
        self._ssm = ssm
        self._k8s = kubernetes_version

    def resolve(self, terms: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Status entries ``{id, name, requirements}``, preferred first. Raises
        ResolutionError when nothing matches."""
        if not terms:
            raise ResolutionError(f"spec.{FIELD} is empty: at least one term is required")
        alias = parse_alias(terms)
        amis = self._from_alias(*alias) if alias else self._from_selectors(terms)
        if not amis:
            raise ResolutionError(f"no AMI matches spec.{FIELD} {list(terms)}")
        return amis

    # --- aliases -------------------------------------------------------------------

    def _from_alias(self, family: str, version: str) -> list[dict[str, Any]]:
        if not self._k8s:
            raise ResolutionError(
                "the cluster's Kubernetes version is unknown: cannot resolve aliases"
            )
        variants = alias_variants(family, version, self._k8s)
        values = self._parameters([v.parameter for v in variants])
        found = [v for v in variants if v.parameter in values]
        names = self._image_names([values[v.parameter] for v in found])
        specials = {(v.arch, v.variant) for v in found}
        return [
            {
                "id": values[v.parameter],
                "name": names.get(values[v.parameter], ""),
                "requirements": _variant_requirements(v, specials),
            }
            for v in found
        ]

    def _parameters(self, names: list[str]) -> dict[str, str]:
        """Values of the parameters that exist (one GetParameter each: that is the action
        the controller policy grants on ``parameter/aws/service/*``)."""
        values: dict[str, str] = {}
        for name in names:
            try:
                values[name] = self._ssm.get_parameter(Name=name)["Parameter"]["Value"]
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ParameterNotFound":
                    raise
        return values

    def _image_names(self, image_ids: list[str]) -> dict[str, str]:
        if not image_ids:
            return {}
        try:
            images = self._ec2.describe_images(ImageIds=sorted(set(image_ids)))["Images"]
        except ClientError:
            return {}  # a public AMI we may not describe: its id is enough to launch
        return {image["ImageId"]: image.get("Name", "") for image in images}

    # --- selector terms ----------------------------------------------------------

    def _from_selectors(self, terms: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        images: dict[str, dict[str, Any]] = {}
        for index, term in enumerate(terms):
            for image in self._describe_term(term, index):
                images[image["ImageId"]] = image
        ordered = sorted(images.values(), key=lambda i: (i.get("CreationDate", ""), i["ImageId"]))
        ordered.reverse()  # newest first
        return [
            {
                "id": image["ImageId"],
                "name": image.get("Name", ""),
                "requirements": [{"key": wk.ARCH, "operator": IN, "values": [_image_arch(image)]}],
            }
            for image in ordered
            if _image_arch(image) is not None
        ]

    def _describe_term(self, term: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
        where = f"spec.{FIELD}[{index}]"
        unknown = sorted(set(term) - {"id", "name", "tags", "owner", "ssmParameter"})
        if unknown:
            raise ResolutionError(f"{where}: unknown key(s) {', '.join(unknown)}")
        filters = [{"Name": "state", "Values": ["available"]}, *tag_filters(term.get("tags") or {})]
        image_id = term.get("id")
        if term.get("ssmParameter"):
            values = self._parameters([term["ssmParameter"]])
            if term["ssmParameter"] not in values:
                raise ResolutionError(f"{where}.ssmParameter: {term['ssmParameter']!r} not found")
            image_id = values[term["ssmParameter"]]
        if image_id:
            filters.append({"Name": "image-id", "Values": [image_id]})
        if term.get("name"):
            filters.append({"Name": "name", "Values": [term["name"]]})
        if len(filters) == 1 and not term.get("owner"):
            raise ResolutionError(
                f"{where} selects nothing: set id, name, tags, owner or ssmParameter"
            )
        kwargs: dict[str, Any] = {"Filters": filters}
        if term.get("owner"):
            kwargs["Owners"] = [term["owner"]]
        elif not image_id:
            kwargs["Owners"] = DEFAULT_OWNERS
        return self._ec2.describe_images(**kwargs)["Images"]


def _image_arch(image: Mapping[str, Any]) -> str | None:
    return ARCHITECTURES.get(image.get("Architecture", "x86_64"))


def _variant_requirements(
    variant: AliasVariant, found: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Architecture, plus: NVIDIA AMIs for NVIDIA GPUs, Neuron AMIs for AWS accelerators,
    and the standard AMI for the rest when such a variant exists for the architecture."""
    requirements = Requirements([Requirement.new(wk.ARCH, IN, [variant.arch])])
    if variant.variant == NVIDIA:
        requirements.add(Requirement.new(wk.INSTANCE_GPU_MANUFACTURER, IN, ["nvidia"]))
    elif variant.variant == NEURON:
        requirements.add(Requirement.new(wk.INSTANCE_ACCELERATOR_MANUFACTURER, IN, ["aws"]))
    else:
        if (variant.arch, NVIDIA) in found:
            requirements.add(Requirement.new(wk.INSTANCE_GPU_MANUFACTURER, NOT_IN, ["nvidia"]))
        if (variant.arch, NEURON) in found:
            requirements.add(Requirement.new(wk.INSTANCE_ACCELERATOR_MANUFACTURER, NOT_IN, ["aws"]))
    return requirements.to_dicts()
