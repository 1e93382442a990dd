"""EC2NodeClass schema (karpenter.k8s.aws/v1) [SPEC 1].

The checks the API server makes follow upstream's CRD to the letter, quirks included
(selector ids are matched anywhere in the text; a term mixing ``id`` with other fields is
refused only when every term does; ``kubelet`` is free-form), so that Joiner's CRD and
``joiner validate`` accept what Karpenter's accepts. Joiner's advice covers the rest."""

from __future__ import annotations

import re
from typing import Any

from joiner.api import ec2nodeclass as ec2
from joiner.api import labels as wk
from joiner.api.definitions.common import cel_list, conditions
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.schema import (
    QUANTITY_HINT,
    QUANTITY_PATTERN,
    Advice,
    Rule,
    Schema,
    any_object,
    array,
    boolean,
    integer,
    map_of,
    obj,
    string,
    unsupported,
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
# EBS sizes upstream accepts: 1..59000Gi, 1..64000G, up to 58Ti, up to 64T. Its number part
# of Ti and T may be empty ("Ti"), which Joiner cannot read (see VOLUME_SIZE advice).
VOLUME_SIZE = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)
ALIAS_FAMILIES = tuple(sorted(ec2.AMI_ALIAS_FAMILIES))
WINDOWS_ALIASES = tuple(f for f in ALIAS_FAMILIES if f.startswith("windows"))

KUBELET = "kubelet"
SELECTOR_TERM = "selector-term"
SELECTOR_ID = "selector-id"
BLOCK_DEVICE = "block-device"
WINDOWS = "windows"


def _not_empty(field: str) -> Rule:
    return Rule(f"{field} cannot be empty", lambda value: value != "", cel="self != ''")


# -- selector terms ---------------------------------------------------------------------------


def selector_tags() -> Schema:
    return map_of(
        string(),
        "Tags to match; '*' matches any value.",
        max_properties=20,
        rules=(
            Rule(
                "empty tag keys or values aren't supported",
                lambda tags: all(k != "" and v != "" for k, v in tags.items()),
                cel="self.all(k, k != '' && self[k] != '')",
            ),
        ),
    )


def _has_any(term: dict[str, Any], fields: tuple[str, ...]) -> bool:
    return any(f in term for f in fields)


def _cel_has_any(fields: tuple[str, ...], var: str = "x") -> str:
    return " || ".join(f"has({var}.{f})" for f in fields)


def _needs_one(fields: tuple[str, ...], what: str) -> Rule:
    return Rule(
        f"each {what} needs one of {', '.join(fields)}",
        lambda terms: all(_has_any(t, fields) for t in terms),
        cel=f"self.all(x, {_cel_has_any(fields)})",
    )


def _exclusive_in_every(field: str, others: tuple[str, ...], what: str) -> Rule:
    """Upstream's rule, which refuses ``field`` with ``others`` only when every term has
    them (and an empty list)."""
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with other fields in a {what}",
        lambda terms: not all(field in t and _has_any(t, others) for t in terms),
        cel=f"!self.all(x, has(x.{field}) && ({_cel_has_any(others)}))",
    )


def _exclusive_in_any(field: str, others: tuple[str, ...], what: str) -> Rule:
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with other fields in an {what}",
        lambda terms: not any(field in t and _has_any(t, others) for t in terms),
        cel=f"!self.exists(x, has(x.{field}) && ({_cel_has_any(others)}))",
    )


def _not_empty_list(field: str) -> Rule:
    return Rule(f"{field} cannot be empty", lambda terms: len(terms) != 0, cel="self.size() != 0")


def _mixed_term_advice(field: str, others: tuple[str, ...]) -> Advice:
    return Advice(
        SELECTOR_TERM,
        f"'{field}' set with other fields in a term",
        lambda term: field not in term or not _has_any(term, others),
        lambda term: (
            f"'{field}' is set with {', '.join(o for o in others if o in term)} in one term: "
            "upstream Karpenter refuses this unless another term does not; Joiner selects "
            "what matches all of them"
        ),
    )


def _id_advice(prefix: str, what: str) -> Advice:
    exact = re.compile(rf"{prefix}-[0-9a-z]+")
    return Advice(
        SELECTOR_ID,
        f"not {what} id",
        lambda value: exact.fullmatch(value) is not None,
        lambda value: (
            f"{value!r} is not {what} id ({prefix}-...): the API server accepts any text "
            f"containing one, and EC2 finds nothing by it"
        ),
    )


def _id(prefix: str, what: str) -> Schema:
    return string(
        f"{what} id",
        pattern=f"{prefix}-[0-9a-z]+",
        hint=f"expected an id like {prefix}-0123abcd",
        advice=(_id_advice(prefix, what),),
    )


def subnet_terms() -> Schema:
    what = "subnet selector term"
    return array(
        obj(
            "Subnets to launch into: by tags or by id.",
            {"tags": selector_tags(), "id": _id("subnet", "a subnet")},
            advice=(_mixed_term_advice("id", ("tags",)),),
        ),
        "Subnets for the nodes (terms are alternatives).",
        max_items=30,
        rules=(
            _not_empty_list("subnetSelectorTerms"),
            _needs_one(("tags", "id"), what),
            _exclusive_in_every("id", ("tags",), what),
        ),
    )


def security_group_terms() -> Schema:
    what = "security group selector term"
    return array(
        obj(
            "Security groups for the nodes: by tags, id or name.",
            {"tags": selector_tags(), "id": _id("sg", "a security group"), "name": string()},
            advice=(
                _mixed_term_advice("id", ("tags", "name")),
                _mixed_term_advice("name", ("tags", "id")),
            ),
        ),
        "Security groups for the nodes (terms are alternatives).",
        max_items=30,
        rules=(
            _not_empty_list("securityGroupSelectorTerms"),
            _needs_one(("tags", "id", "name"), what),
            _exclusive_in_every("id", ("tags", "name"), what),
            _exclusive_in_every("name", ("tags", "id"), what),
        ),
    )


def _alias_head(alias: str) -> str:
    """CEL's ``alias.find('^[^@]+')``: the family part of family@version."""
    match = re.match(r"[^@]+", alias)
    return match.group(0) if match else ""


def _alias_rules() -> tuple[Rule, ...]:
    return (
        Rule(
            "alias must be family@version, like al2023@latest",
            lambda alias: re.fullmatch(r"[a-zA-Z0-9]+@.+", alias) is not None,
            cel="self.matches('^[a-zA-Z0-9]+@.+$')",
        ),
        Rule(
            "alias family must be one of " + ", ".join(ALIAS_FAMILIES),
            lambda alias: alias.split("@")[0] in ALIAS_FAMILIES,
            cel=f"self.split('@')[0] in {cel_list(ALIAS_FAMILIES)}",
        ),
        Rule(
            "windows families only support version 'latest'",
            lambda alias: (
                alias.split("@")[0] not in WINDOWS_ALIASES or alias.split("@")[1] == "latest"
            ),
            cel=f"!(self.split('@')[0] in {cel_list(WINDOWS_ALIASES)})"
            " || self.split('@')[1] == 'latest'",
        ),
    )


def ami_terms() -> Schema:
    what = "AMI selector term"
    return array(
        obj(
            "AMIs for the nodes: an alias (al2023@latest), or by tags, id, name, owner, "
            "ssmParameter.",
            {
                "alias": string(
                    "family@version, e.g. al2023@latest or bottlerocket@v1.20.3.",
                    max_length=30,
                    rules=_alias_rules(),
                ),
                "tags": selector_tags(),
                "id": _id("ami", "an AMI"),
                "name": string(),
                "owner": string("An account id, or amazon, self, ..."),
                "ssmParameter": string("An SSM parameter holding an AMI id."),
            },
        ),
        "AMIs for the nodes (terms are alternatives).",
        min_items=1,
        max_items=30,
        rules=(
            _needs_one(("tags", "id", "name", "alias", "ssmParameter"), what),
            _exclusive_in_any("id", ("alias", "tags", "name", "owner"), what),
            _exclusive_in_any("alias", ("id", "tags", "name", "owner"), what),
            Rule(
                "'alias' must be the only amiSelectorTerm",
                lambda terms: len(terms) == 1 or not any("alias" in t for t in terms),
                cel="self.size() == 1 || !self.exists(x, has(x.alias))",
            ),
        ),
    )


def _family_fits(spec: dict[str, Any]) -> bool:
    """amiFamily, when set and not Custom, is the family of every alias whose family is
    known (an unknown one is refused by the alias rules)."""
    family = spec.get("amiFamily")
    if family is None or family == "Custom":
        return True
    for term in spec["amiSelectorTerms"]:
        head = _alias_head(term["alias"]) if "alias" in term else None
        if head in ec2.AMI_ALIAS_FAMILIES and ec2.AMI_ALIAS_FAMILIES[head] != family:
            return False
    return True


def _family_fits_cel() -> str:
    pairs = " || ".join(
        f"(h == '{alias}' && self.amiFamily == '{family}')"
        for alias, family in sorted(ec2.AMI_ALIAS_FAMILIES.items())
    )
    return (
        "!has(self.amiFamily) || self.amiFamily == 'Custom' || self.amiSelectorTerms.all(x, "
        f"!has(x.alias) || [x.alias.find('^[^@]+')].all(h, !(h in {cel_list(ALIAS_FAMILIES)})"
        f" || {pairs}))"
    )


def _spec_rules() -> tuple[Rule, ...]:
    return (
        Rule(
            "must specify exactly one of ['role', 'instanceProfile']",
            lambda s: ("role" in s) != ("instanceProfile" in s),
            cel="has(self.role) != has(self.instanceProfile)",
        ),
        Rule(
            "if set, amiFamily must be the family of the alias, or Custom",
            _family_fits,
            cel=_family_fits_cel(),
        ),
        Rule(
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
            lambda s: "amiFamily" in s or any("alias" in t for t in s["amiSelectorTerms"]),
            cel="has(self.amiFamily) || self.amiSelectorTerms.exists(x, has(x.alias))",
        ),
    )


def _windows_advice() -> Advice:
    def windows(spec: dict[str, Any]) -> bool:
        family = spec.get("amiFamily") or next(
            (
                ec2.AMI_ALIAS_FAMILIES.get(_alias_head(t["alias"]), "")
                for t in spec.get("amiSelectorTerms") or []
                if "alias" in t
            ),
            "",
        )
        return family.startswith("Windows")

    return Advice(
        WINDOWS,
        "Joiner does not launch Windows nodes; this EC2NodeClass never becomes Ready",
        lambda spec: not windows(spec),
    )


def _forbidden_tag_rules() -> tuple[Rule, ...]:
    exact = (wk.EKS_CLUSTER_NAME_TAG, wk.NODEPOOL, wk.NODECLAIM_TAG, wk.EC2NODECLASS)
    rules = [
        Rule(
            "empty tag keys aren't supported",
            lambda tags: all(k != "" for k in tags),
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


# -- kubelet: free-form for the API server; what Joiner reads -----------------------------------


def _kubelet_advice(message: str, holds: Any, field_path: str) -> Advice:
    return Advice(KUBELET, message, holds, field_path=field_path)


def _signal_map(description: str, values: Schema, name: str) -> Schema:
    return map_of(
        values,
        description,
        advice=(
            Advice(
                KUBELET,
                f"valid keys for {name} are {list(EVICTION_SIGNALS)}",
                lambda m: all(k in EVICTION_SIGNALS for k in m),
            ),
        ),
    )


def _reserved_map(name: str) -> Schema:
    return map_of(
        string(pattern=QUANTITY_PATTERN, hint=QUANTITY_HINT),
        f"Resources reserved for {name.removesuffix('Reserved')} daemons.",
        advice=(
            Advice(
                KUBELET,
                f"valid keys for {name} are {list(RESERVED_RESOURCES)}",
                lambda m: all(k in RESERVED_RESOURCES for k in m),
            ),
            Advice(
                KUBELET,
                f"{name} values cannot be negative quantities",
                lambda m: not any(str(v).startswith("-") for v in m.values()),
            ),
        ),
    )


def _kubelet_rules() -> tuple[Advice, ...]:
    def keys(spec: dict[str, Any], name: str) -> set[str]:
        return set(spec.get(name) or {})

    return (
        _kubelet_advice(
            "every evictionSoft signal needs a matching evictionSoftGracePeriod",
            lambda k: keys(k, "evictionSoft") <= keys(k, "evictionSoftGracePeriod"),
            ".evictionSoft",
        ),
        _kubelet_advice(
            "every evictionSoftGracePeriod signal needs a matching evictionSoft",
            lambda k: keys(k, "evictionSoftGracePeriod") <= keys(k, "evictionSoft"),
            ".evictionSoftGracePeriod",
        ),
        _kubelet_advice(
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            lambda k: (
                "imageGCHighThresholdPercent" not in k
                or "imageGCLowThresholdPercent" not in k
                or k["imageGCHighThresholdPercent"] > k["imageGCLowThresholdPercent"]
            ),
            ".imageGCHighThresholdPercent",
        ),
    )


def kubelet() -> Schema:
    """The kubelet settings Joiner reads (upstream's CRD keeps ``kubelet`` free-form)."""
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
        advice=_kubelet_rules(),
    )


# -- block devices ----------------------------------------------------------------------------


def _readable_size(size: str) -> bool:
    try:
        parse_quantity(size)
    except QuantityError:
        return False
    return True


def ebs() -> Schema:
    return obj(
        "The EBS volume.",
        {
            "volumeSize": string(
                "Size, e.g. 20Gi (1Gi..59000Gi, 1G..64000G, 1Ti..58Ti or 1T..64T).",
                pattern=VOLUME_SIZE,
                hint="expected a size like 20Gi, 100G or 2Ti within EBS's range",
                advice=(
                    Advice(
                        BLOCK_DEVICE,
                        "volumeSize has no number; Joiner leaves the size to EC2 (the "
                        "snapshot's or the AMI's)",
                        _readable_size,
                    ),
                ),
            ),
            "volumeType": string(enum=VOLUME_TYPES),
            "iops": integer(format="int64", advice=(_not_negative("iops"),)),
            "throughput": integer(format="int64", advice=(_not_negative("throughput"),)),
            "encrypted": boolean(),
            "deleteOnTermination": boolean(),
            "kmsKeyID": string(),
            "snapshotID": string(),
            "volumeInitializationRate": unsupported(
                integer(
                    "Initialization rate (MiB/s) of a volume from a snapshot.",
                    minimum=100,
                    maximum=300,
                    format="int32",
                )
            ),
        },
        rules=(
            Rule(
                "snapshotID or volumeSize must be defined",
                lambda e: "snapshotID" in e or "volumeSize" in e,
                cel="has(self.snapshotID) || has(self.volumeSize)",
            ),
            Rule(
                "snapshotID must be set when volumeInitializationRate is set",
                lambda e: "volumeInitializationRate" not in e or e["snapshotID"] != "",
                cel="!has(self.volumeInitializationRate)"
                " || (has(self.snapshotID) && self.snapshotID != '')",
            ),
        ),
    )


def _not_negative(field: str) -> Advice:
    return Advice(
        BLOCK_DEVICE,
        f"{field} is negative: EC2 refuses it, so launches with this class fail",
        lambda value: value >= 0,
    )


def block_device_mappings() -> Schema:
    return array(
        obj(
            "A volume attached at launch.",
            {
                "deviceName": string("e.g. /dev/xvda"),
                "ebs": ebs(),
                "rootVolume": boolean("This is the root volume."),
            },
            advice=(
                Advice(
                    BLOCK_DEVICE,
                    "a mapping without deviceName: Joiner leaves it out of the launch template",
                    lambda mapping: "deviceName" in mapping,
                ),
            ),
        ),
        "Volumes of the nodes (a default root volume when omitted).",
        max_items=50,
        rules=(
            Rule(
                "must have only one blockDeviceMappings with rootVolume",
                lambda mappings: sum(1 for m in mappings if m.get("rootVolume") is True) <= 1,
                cel="self.filter(x, has(x.rootVolume) && x.rootVolume).size() <= 1",
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
                minimum=1, maximum=64, default=defaults["httpPutResponseHopLimit"], format="int64"
            ),
            "httpTokens": string(enum=("required", "optional"), default=defaults["httpTokens"]),
        },
        default=dict(defaults),
    )


# -- fields upstream defines and Joiner does not implement -----------------------------------


def _capacity_reservation_terms() -> Schema:
    fields = ("tags", "id", "instanceMatchCriteria")
    return unsupported(
        array(
            obj(
                "Capacity reservations to launch into.",
                {
                    "id": string(pattern=r"^cr-[0-9a-z]+$", hint="expected cr-..."),
                    "instanceMatchCriteria": string(enum=("open", "targeted")),
                    "ownerID": string(pattern=r"^[0-9]{12}$", hint="expected an account id"),
                    "tags": selector_tags(),
                },
            ),
            "Capacity reservation selector terms.",
            max_items=30,
            rules=(
                _needs_one(fields, "capacity reservation selector term"),
                _exclusive_in_every(
                    "id",
                    ("tags", "ownerID", "instanceMatchCriteria"),
                    "capacity reservation selector term",
                ),
            ),
        )
    )


def _connection_tracking() -> Schema:
    fields = ("tcpEstablishedTimeout", "udpStreamTimeout", "udpTimeout")
    return unsupported(
        obj(
            "Connection tracking timeouts of the network interfaces (seconds).",
            {
                "tcpEstablishedTimeout": integer(minimum=60, maximum=432000, format="int32"),
                "udpStreamTimeout": integer(minimum=60, maximum=180, format="int32"),
                "udpTimeout": integer(minimum=30, maximum=60, format="int32"),
            },
            rules=(
                Rule(
                    "at least one of " + ", ".join(fields) + " must be set",
                    lambda tracking: _has_any(tracking, fields),
                    cel=_cel_has_any(fields, "self"),
                ),
            ),
        )
    )


def _same_slot(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["networkCardIndex"], a["deviceIndex"]) == (b["networkCardIndex"], b["deviceIndex"])


def _interfaces_well_formed(interfaces: list[dict[str, Any]]) -> bool:
    def efa_on_card(x: dict[str, Any]) -> int:
        return sum(
            1
            for y in interfaces
            if y["networkCardIndex"] == x["networkCardIndex"] and y["interfaceType"] == "efa-only"
        )

    return all(
        sum(1 for y in interfaces if _same_slot(x, y)) == 1
        and (x["interfaceType"] != "efa-only" or efa_on_card(x) == 1)
        for x in interfaces
    )


def _network_interfaces() -> Schema:
    return unsupported(
        array(
            obj(
                "A network interface of the instances.",
                {
                    "deviceIndex": integer(minimum=0, format="int32"),
                    "interfaceType": string(enum=("interface", "efa-only")),
                    "networkCardIndex": integer(minimum=0, format="int32"),
                },
                required=("deviceIndex", "interfaceType", "networkCardIndex"),
            ),
            "Network interfaces of the instances.",
            max_items=150,
            rules=(
                Rule(
                    "networkInterfaces must include a primary interface with "
                    "interfaceType='interface'",
                    lambda interfaces: (
                        len(interfaces) == 0
                        or any(
                            (x["deviceIndex"], x["networkCardIndex"], x["interfaceType"])
                            == (0, 0, "interface")
                            for x in interfaces
                        )
                    ),
                    cel="self.size() == 0 || self.exists(x, x.deviceIndex == 0"
                    " && x.networkCardIndex == 0 && x.interfaceType == 'interface')",
                ),
                Rule(
                    "networkInterfaces must not repeat a networkCardIndex and deviceIndex "
                    "pair, and can have at most one efa-only interface per network card",
                    _interfaces_well_formed,
                    cel="self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex"
                    " && x.deviceIndex == y.deviceIndex).size() == 1"
                    " && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex"
                    " == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",
                ),
            ),
        )
    )


def _placement_group() -> Schema:
    return unsupported(
        obj(
            "The placement group to launch into.",
            {
                "id": string(pattern=r"^pg-[0-9a-z]+$", hint="expected pg-..."),
                "name": string(min_length=1),
            },
            rules=(
                Rule(
                    "placementGroupSelector needs one of name, id",
                    lambda selector: _has_any(selector, ("name", "id")),
                    cel="has(self.name) || has(self.id)",
                ),
                Rule(
                    "'name' and 'id' are mutually exclusive",
                    lambda selector: not ("name" in selector and "id" in selector),
                    cel="!(has(self.name) && has(self.id))",
                ),
            ),
        )
    )


def ec2nodeclass_spec() -> Schema:
    return obj(
        "How Joiner launches nodes on EC2.",
        {
            "subnetSelectorTerms": subnet_terms(),
            "securityGroupSelectorTerms": security_group_terms(),
            "amiSelectorTerms": ami_terms(),
            "amiFamily": string("Bootstrap format of the AMIs.", enum=ec2.AMI_FAMILIES),
            "role": string(
                "IAM role for the nodes' instance profile.", rules=(_not_empty("role"),)
            ),
            "instanceProfile": string(
                "An existing instance profile.", rules=(_not_empty("instanceProfile"),)
            ),
            "tags": map_of(string(), "Tags on launched resources.", rules=_forbidden_tag_rules()),
            "userData": string("User data merged with Joiner's bootstrap."),
            "kubelet": any_object(kubelet()),
            "blockDeviceMappings": block_device_mappings(),
            "metadataOptions": metadata_options(),
            "associatePublicIPAddress": boolean(),
            "detailedMonitoring": boolean(),
            "instanceStorePolicy": string(enum=("RAID0",)),
            "capacityReservationSelectorTerms": _capacity_reservation_terms(),
            "connectionTracking": _connection_tracking(),
            "context": unsupported(string("An EC2 Fleet context.")),
            "cpuOptions": unsupported(
                obj(
                    "CPU options of the instances.",
                    {"nestedVirtualization": string(enum=("enabled", "disabled"))},
                )
            ),
            "ipPrefixCount": unsupported(
                integer("IPv4 prefixes per network interface.", minimum=0, format="int32")
            ),
            "networkInterfaces": _network_interfaces(),
            "placementGroupSelector": _placement_group(),
        },
        required=("amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"),
        rules=_spec_rules(),
        advice=(_windows_advice(),),
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
                        "requirements": array(
                            obj(
                                properties={
                                    "key": string(),
                                    "operator": string(),
                                    "values": array(string()),
                                    "minValues": integer(),
                                },
                                required=("key", "operator"),
                            )
                        ),
                    },
                    required=("id", "requirements"),
                )
            ),
            "capacityReservations": array(
                any_object(obj("A capacity reservation (not used by Joiner)."))
            ),
            "instanceProfile": string(),
            "conditions": conditions(),
        },
    )
