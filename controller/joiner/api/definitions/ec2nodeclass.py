"""EC2NodeClass schema (karpenter.k8s.aws/v1) [SPEC 1]."""

from __future__ import annotations

import re
from typing import Any

from joiner.api import ec2nodeclass as ec2
from joiner.api import labels as wk
from joiner.api.definitions.common import cel_list, conditions, requirement
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.schema import (
    QUANTITY_HINT,
    QUANTITY_PATTERN,
    Rule,
    Schema,
    array,
    boolean,
    integer,
    map_of,
    obj,
    string,
)

EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
EVICTION_THRESHOLD = (
    r"^(([0-9]{1,2}(\.[0-9]{1,2})?|100(\.0{1,2})?)%|"
    + QUANTITY_PATTERN.removeprefix("^").removesuffix("$")
    + ")$"
)
# EBS volumes are 1GiB to 64TiB.
MIN_VOLUME_BYTES, MAX_VOLUME_BYTES = 2**30, 64 * 2**40


def selector_tags() -> Schema:
    return map_of(
        string(),
        "Tags to match; '*' matches any value.",
        max_properties=20,
        rules=(
            Rule(
                "empty tag keys or values aren't supported",
                lambda tags: all(k and v for k, v in tags.items()),
                cel="self.all(k, k != '' && self[k] != '')",
            ),
        ),
    )


def _at_least_one(fields: tuple[str, ...], what: str) -> Rule:
    return Rule(
        f"each {what} needs one of {', '.join(fields)}",
        lambda term: any(f in term for f in fields),
        cel=" || ".join(f"has(self.{f})" for f in fields),
    )


def _exclusive(field: str, others: tuple[str, ...], what: str) -> Rule:
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with other fields in "
        f"{'an' if what[0] in 'AEIOU' else 'a'} {what}",
        lambda term: field not in term or not any(other in term for other in others),
        cel=f"!has(self.{field}) || !({' || '.join(f'has(self.{o})' for o in others)})",
    )


def subnet_term() -> Schema:
    return obj(
        "Subnets to launch into: by tags or by id.",
        {
            "tags": selector_tags(),
            "id": string(pattern=r"^subnet-[0-9a-z]+$", hint="expected a subnet id subnet-..."),
        },
        rules=(
            _at_least_one(("tags", "id"), "subnet selector term"),
            _exclusive("id", ("tags",), "subnet selector term"),
        ),
    )


def security_group_term() -> Schema:
    return obj(
        "Security groups for the nodes: by tags, id or name.",
        {
            "tags": selector_tags(),
            "id": string(pattern=r"^sg-[0-9a-z]+$", hint="expected a security group id sg-..."),
            "name": string(),
        },
        rules=(
            _at_least_one(("tags", "id", "name"), "security group selector term"),
            _exclusive("id", ("tags", "name"), "security group selector term"),
        ),
    )


_ALIAS_FAMILY_PATTERN = "^(" + "|".join(sorted(ec2.AMI_ALIAS_FAMILIES)) + ")@"


_AMI_TERM_FIELDS = ("alias", "tags", "id", "name", "owner", "ssmParameter")


def _others(field: str) -> tuple[str, ...]:
    return tuple(f for f in _AMI_TERM_FIELDS if f != field)


def ami_term() -> Schema:
    what = "AMI selector term"
    return obj(
        "AMIs for the nodes: an alias (al2023@latest), or by tags, id, name, owner, ssmParameter.",
        {
            "alias": string(
                "family@version, e.g. al2023@latest or bottlerocket@v1.20.3.",
                max_length=30,
                pattern=r"^[a-zA-Z0-9]+@.+$",
                hint="expected family@version like al2023@latest",
                rules=(
                    Rule(
                        "alias family must be one of " + ", ".join(sorted(ec2.AMI_ALIAS_FAMILIES)),
                        # an alias without '@' is reported by the pattern alone
                        lambda alias: (
                            "@" not in alias or re.match(_ALIAS_FAMILY_PATTERN, alias) is not None
                        ),
                        cel=f"!self.contains('@') || self.matches('{_ALIAS_FAMILY_PATTERN}')",
                    ),
                    Rule(
                        "windows families only support version 'latest'",
                        lambda alias: not alias.startswith("windows") or alias.endswith("@latest"),
                        cel="!self.startsWith('windows') || self.endsWith('@latest')",
                    ),
                ),
            ),
            "tags": selector_tags(),
            "id": string(pattern=r"^ami-[0-9a-z]+$", hint="expected an AMI id ami-..."),
            "name": string(),
            "owner": string("An account id, or amazon, self, ..."),
            "ssmParameter": string("An SSM parameter holding an AMI id."),
        },
        rules=(
            _at_least_one(("alias", "tags", "id", "name", "ssmParameter"), what),
            _exclusive("alias", _others("alias"), what),
            _exclusive("id", _others("id"), what),
        ),
    )


def _alias_of(spec: dict[str, Any]) -> str | None:
    return next((t["alias"] for t in spec.get("amiSelectorTerms") or [] if "alias" in t), None)


def _family_matches_alias(spec: dict[str, Any]) -> bool:
    alias = _alias_of(spec)
    if alias is None or "amiFamily" not in spec:
        return True
    return ec2.AMI_ALIAS_FAMILIES.get(alias.split("@", 1)[0]) == spec["amiFamily"]


def _family_matches_alias_cel() -> str:
    pairs = " || ".join(
        f"(self.amiFamily == '{family}' && x.alias.startsWith('{prefix}@'))"
        for prefix, family in sorted(ec2.AMI_ALIAS_FAMILIES.items())
    )
    return (
        "!has(self.amiFamily) || !has(self.amiSelectorTerms)"
        f" || self.amiSelectorTerms.all(x, !has(x.alias) || {pairs})"
    )


def _ami_family_rules() -> tuple[Rule, ...]:
    return (
        Rule(
            "amiFamily is required when amiSelectorTerms has no alias term",
            lambda s: "amiFamily" in s or not s.get("amiSelectorTerms") or _alias_of(s) is not None,
            cel="has(self.amiFamily) || !has(self.amiSelectorTerms)"
            " || self.amiSelectorTerms.exists(x, has(x.alias))",
            field_path=".amiFamily",
        ),
        Rule(
            "amiFamily must match the family of the alias (or be omitted)",
            _family_matches_alias,
            cel=_family_matches_alias_cel(),
            field_path=".amiFamily",
        ),
    )


def _role_rules() -> tuple[Rule, ...]:
    return (
        Rule(
            "must specify exactly one of ['role', 'instanceProfile']",
            lambda s: ("role" in s) != ("instanceProfile" in s),
            cel="has(self.role) != has(self.instanceProfile)",
        ),
        Rule(
            "changing between 'role' and 'instanceProfile' is not supported; "
            "delete and recreate the EC2NodeClass",
            lambda old, new: ("role" in old) == ("role" in new),
            cel="has(oldSelf.role) == has(self.role)",
            transition=True,
        ),
    )


def _forbidden_tag_rules() -> tuple[Rule, ...]:
    exact = (wk.EKS_CLUSTER_NAME_TAG, wk.NODEPOOL, wk.NODECLAIM_TAG, wk.EC2NODECLASS)
    rules = [
        Rule(
            "empty tag keys aren't supported",
            lambda tags: all(tags),
            cel="self.all(k, k != '')",
        ),
        Rule(
            f"tag contains a restricted tag matching {wk.CLUSTER_TAG_PREFIX}*",
            lambda tags: not any(k.startswith(wk.CLUSTER_TAG_PREFIX) for k in tags),
            cel=f"self.all(k, !k.startsWith('{wk.CLUSTER_TAG_PREFIX}'))",
        ),
    ]
    rules += [
        Rule(
            f"tag contains a restricted tag matching {key}",
            lambda tags, key=key: key not in tags,
            cel=f"self.all(k, k != '{key}')",
        )
        for key in exact
    ]
    return tuple(rules)


def _signal_map(description: str, values: Schema, name: str) -> Schema:
    return map_of(
        values,
        description,
        rules=(
            Rule(
                f"valid keys for {name} are {list(EVICTION_SIGNALS)}",
                lambda m: all(k in EVICTION_SIGNALS for k in m),
                cel=f"self.all(k, k in {cel_list(EVICTION_SIGNALS)})",
            ),
        ),
    )


def _reserved_map(name: str) -> Schema:
    return map_of(
        string(pattern=QUANTITY_PATTERN, hint=QUANTITY_HINT),
        f"Resources reserved for {name.removesuffix('Reserved')} daemons.",
        rules=(
            Rule(
                f"valid keys for {name} are {list(RESERVED_RESOURCES)}",
                lambda m: all(k in RESERVED_RESOURCES for k in m),
                cel=f"self.all(k, k in {cel_list(RESERVED_RESOURCES)})",
            ),
            Rule(
                f"{name} values cannot be negative quantities",
                lambda m: not any(str(v).startswith("-") for v in m.values()),
                cel="self.all(k, !self[k].startsWith('-'))",
            ),
        ),
    )


def _kubelet_rules() -> tuple[Rule, ...]:
    def keys(spec: dict[str, Any], name: str) -> set[str]:
        return set(spec.get(name) or {})

    return (
        Rule(
            "every evictionSoft signal needs a matching evictionSoftGracePeriod",
            lambda k: keys(k, "evictionSoft") <= keys(k, "evictionSoftGracePeriod"),
            cel="!has(self.evictionSoft) || self.evictionSoft.all(e, "
            "has(self.evictionSoftGracePeriod) && e in self.evictionSoftGracePeriod)",
            field_path=".evictionSoftGracePeriod",
        ),
        Rule(
            "every evictionSoftGracePeriod signal needs a matching evictionSoft",
            lambda k: keys(k, "evictionSoftGracePeriod") <= keys(k, "evictionSoft"),
            cel="!has(self.evictionSoftGracePeriod) || self.evictionSoftGracePeriod.all(e, "
            "has(self.evictionSoft) && e in self.evictionSoft)",
            field_path=".evictionSoft",
        ),
        Rule(
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            lambda k: (
                "imageGCHighThresholdPercent" not in k
                or "imageGCLowThresholdPercent" not in k
                or k["imageGCHighThresholdPercent"] > k["imageGCLowThresholdPercent"]
            ),
            cel="!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent)"
            " || self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent",
            field_path=".imageGCHighThresholdPercent",
        ),
    )


def kubelet() -> Schema:
    threshold = string(pattern=EVICTION_THRESHOLD, hint="expected a percentage or a quantity")
    grace = string(pattern=r"^([0-9]+(\.[0-9]+)?(s|m|h))+$", hint="expected a duration like 1m30s")
    return obj(
        "Kubelet configuration of the nodes.",
        {
            "clusterDNS": array(string(), "DNS server addresses for pods."),
            "maxPods": integer("Most pods a node may run.", minimum=0),
            "podsPerCore": integer("Most pods per CPU core.", minimum=0),
            "systemReserved": _reserved_map("systemReserved"),
            "kubeReserved": _reserved_map("kubeReserved"),
            "evictionHard": _signal_map("Hard eviction thresholds.", threshold, "evictionHard"),
            "evictionSoft": _signal_map("Soft eviction thresholds.", threshold, "evictionSoft"),
            "evictionSoftGracePeriod": _signal_map(
                "How long a soft threshold must hold before eviction.",
                grace,
                "evictionSoftGracePeriod",
            ),
            "evictionMaxPodGracePeriod": integer(
                "Longest pod grace period (seconds) for soft evictions."
            ),
            "imageGCHighThresholdPercent": integer(minimum=0, maximum=100),
            "imageGCLowThresholdPercent": integer(minimum=0, maximum=100),
            "cpuCFSQuota": boolean("Enforce CPU limits with CFS quota."),
        },
        rules=_kubelet_rules(),
    )


def _volume_size_in_range(size: str) -> bool:
    try:
        value = parse_quantity(size).value
    except QuantityError:
        return True  # the pattern check reports it
    return MIN_VOLUME_BYTES <= value <= MAX_VOLUME_BYTES


def ebs() -> Schema:
    return obj(
        "The EBS volume.",
        {
            "volumeSize": string(
                "Size, e.g. 20Gi.",
                pattern=QUANTITY_PATTERN,
                hint=QUANTITY_HINT,
                rules=(Rule("volumeSize must be between 1Gi and 64Ti", _volume_size_in_range),),
            ),
            "volumeType": string(enum=VOLUME_TYPES),
            "iops": integer(minimum=0),
            "throughput": integer(minimum=0),
            "encrypted": boolean(),
            "deleteOnTermination": boolean(),
            "kmsKeyID": string(),
            "snapshotID": string(),
        },
        rules=(
            Rule(
                "snapshotID or volumeSize must be defined",
                lambda e: "snapshotID" in e or "volumeSize" in e,
                cel="has(self.snapshotID) || has(self.volumeSize)",
            ),
        ),
    )


def block_device_mappings() -> Schema:
    return array(
        obj(
            "A volume attached at launch.",
            {
                "deviceName": string("e.g. /dev/xvda", min_length=1),
                "ebs": ebs(),
                "rootVolume": boolean("This is the root volume."),
            },
            required=("deviceName",),
        ),
        "Volumes of the nodes (a default root volume when omitted).",
        max_items=50,
        rules=(
            Rule(
                "must have only one blockDeviceMappings with rootVolume",
                lambda mappings: sum(1 for m in mappings if m.get("rootVolume") is True) <= 1,
                cel="size(self.filter(x, has(x.rootVolume) && x.rootVolume)) <= 1",
            ),
        ),
    )


def metadata_options() -> Schema:
    defaults = ec2.DEFAULT_METADATA_OPTIONS
    return obj(
        "Instance metadata service options.",
        {
            "httpEndpoint": string(enum=("enabled", "disabled"), default=defaults["httpEndpoint"]),
            "httpProtocolIPv6": string(
                enum=("enabled", "disabled"), default=defaults["httpProtocolIPv6"]
            ),
            "httpPutResponseHopLimit": integer(
                minimum=1, maximum=64, default=defaults["httpPutResponseHopLimit"]
            ),
            "httpTokens": string(enum=("required", "optional"), default=defaults["httpTokens"]),
        },
        default=dict(defaults),
    )


def ec2nodeclass_spec() -> Schema:
    return obj(
        "How Joiner launches nodes on EC2.",
        {
            "subnetSelectorTerms": array(subnet_term(), min_items=1, max_items=30),
            "securityGroupSelectorTerms": array(security_group_term(), min_items=1, max_items=30),
            "amiSelectorTerms": array(
                ami_term(),
                min_items=1,
                max_items=30,
                rules=(
                    Rule(
                        "'alias' must be the only amiSelectorTerm",
                        lambda terms: len(terms) == 1 or not any("alias" in t for t in terms),
                        cel="size(self) == 1 || !self.exists(x, has(x.alias))",
                    ),
                ),
            ),
            "amiFamily": string("Bootstrap format of the AMIs.", enum=ec2.AMI_FAMILIES),
            "role": string("IAM role for the nodes' instance profile.", max_length=64),
            "instanceProfile": string("An existing instance profile.", max_length=128),
            "tags": map_of(string(), "Tags on launched resources.", rules=_forbidden_tag_rules()),
            "userData": string("User data merged with Joiner's bootstrap."),
            "kubelet": kubelet(),
            "blockDeviceMappings": block_device_mappings(),
            "metadataOptions": metadata_options(),
            "associatePublicIPAddress": boolean(),
            "detailedMonitoring": boolean(),
            "instanceStorePolicy": string(enum=("RAID0",)),
        },
        required=("subnetSelectorTerms", "securityGroupSelectorTerms"),
        rules=_ami_family_rules() + _role_rules(),
    )


def ec2nodeclass_status() -> Schema:
    return obj(
        "Resolved subnets, security groups, AMIs and instance profile.",
        {
            "subnets": array(
                obj(
                    properties={"id": string(), "zone": string(), "zoneID": string()},
                    required=("id", "zone"),
                )
            ),
            "securityGroups": array(
                obj(properties={"id": string(), "name": string()}, required=("id",))
            ),
            "amis": array(
                obj(
                    properties={
                        "id": string(),
                        "name": string(),
                        "deprecated": boolean(),
                        "requirements": array(requirement(restrict_keys=False)),
                    },
                    required=("id", "requirements"),
                )
            ),
            "instanceProfile": string(),
            "conditions": conditions(),
        },
    )
