"""EC2NodeClass schema (karpenter.k8s.aws/v1) [SPEC 1].

The checks the API server makes follow upstream's CRD to the letter, quirks included
(selector ids are matched anywhere in the text; a term mixing ``id`` with other fields is
refused only when every term does; ``kubelet`` is free-form), so that Joiner's CRD and
``joiner validate`` accept what Karpenter's accepts. Joiner's advice covers the rest."""

from __future__ import annotations

from typing import Any

from joiner.api import ec2nodeclass as ec2
from joiner.api import labels as wk
from joiner.api.definitions.common import cel_list, conditions, not_empty
from joiner.api.definitions.kubelet import kubelet
from joiner.api.definitions.selectors import (
    ACCOUNT_ID,
    ALIAS_FAMILIES,
    MATCH_CRITERIA,
    RESERVATION_ID,
    alias_head,
    ami_terms,
    capacity_reservation_terms,
    cel_has_any,
    has_any,
    security_group_terms,
    subnet_terms,
)
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.schema import (
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

VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
# EBS sizes upstream accepts: 1..59000Gi, 1..64000G, up to 58Ti, up to 64T. Its number part
# of Ti and T may be empty ("Ti"), which Joiner cannot read (a block-device warning).
VOLUME_SIZE = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)

BLOCK_DEVICE = "block-device"
WINDOWS = "windows"


def _family_fits(spec: dict[str, Any]) -> bool:
    """amiFamily, when set and not Custom, is the family of every alias whose family is
    known (an unknown one is refused by the alias rules)."""
    family = spec.get("amiFamily")
    if family is None or family == "Custom":
        return True
    for term in spec["amiSelectorTerms"]:
        head = alias_head(term["alias"]) if "alias" in term else None
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
                ec2.AMI_ALIAS_FAMILIES.get(alias_head(t["alias"]), "")
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
                    lambda tracking: has_any(tracking, fields),
                    cel=cel_has_any(fields, "self"),
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
                    lambda selector: has_any(selector, ("name", "id")),
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
                "IAM role for the nodes' instance profile.",
                rules=(not_empty("role cannot be empty"),),
            ),
            "instanceProfile": string(
                "An existing instance profile.",
                rules=(not_empty("instanceProfile cannot be empty"),),
            ),
            "tags": map_of(string(), "Tags on launched resources.", rules=_forbidden_tag_rules()),
            "userData": string("User data merged with Joiner's bootstrap."),
            "kubelet": any_object(kubelet()),
            "blockDeviceMappings": block_device_mappings(),
            "metadataOptions": metadata_options(),
            "associatePublicIPAddress": boolean(),
            "detailedMonitoring": boolean(),
            "instanceStorePolicy": string(enum=("RAID0",)),
            "capacityReservationSelectorTerms": capacity_reservation_terms(),
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
                                },
                                required=("key", "operator"),
                            )
                        ),
                    },
                    required=("id", "requirements"),
                )
            ),
            "capacityReservations": array(
                obj(
                    "A capacity reservation the class selects (active, not ended).",
                    {
                        "availabilityZone": string(),
                        "endTime": string(format="date-time"),
                        "id": string(pattern=RESERVATION_ID, hint="expected cr-..."),
                        "instanceMatchCriteria": string(enum=MATCH_CRITERIA),
                        "instanceType": string(),
                        "interruptible": boolean(),
                        "ownerID": string(pattern=ACCOUNT_ID, hint="expected an account id"),
                        "reservationType": string(
                            enum=ec2.RESERVATION_TYPES, default=ec2.RESERVATION_TYPE_DEFAULT
                        ),
                        "state": string(enum=ec2.RESERVATION_STATES, default="active"),
                    },
                    required=(
                        "availabilityZone",
                        "id",
                        "instanceMatchCriteria",
                        "instanceType",
                        "ownerID",
                    ),
                )
            ),
            "instanceProfile": string(),
            "conditions": conditions(),
        },
    )
