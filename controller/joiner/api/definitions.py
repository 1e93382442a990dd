"""The NodePool, NodeClaim and EC2NodeClass schemas: the one source of truth for the CRDs
(``joiner.api.crds``), defaulting and validation (``joiner.api.validation``).

Each CEL rule sits next to its Python twin and shares its message [SPEC 1].
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from croniter import croniter

from joiner.api import ec2nodeclass as ec2
from joiner.api import labels as wk
from joiner.api import nodeclaim as nc
from joiner.api import nodepool as np
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.requirements import OPERATORS
from joiner.api.schema import (
    QUANTITY_HINT,
    QUANTITY_PATTERN,
    Rule,
    Schema,
    array,
    boolean,
    free_object,
    immutable,
    integer,
    map_of,
    obj,
    quantity,
    string,
)

DURATION = r"^([0-9]+(s|m|h))+$"
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION_HINT = "expected a duration like 30s, 10m or 1h30m"
DURATION_OR_NEVER_HINT = "expected a duration like 30s, 10m or 1h30m, or Never"
BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_DURATION = r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?$"
CRON_MACROS = ("annually", "yearly", "monthly", "weekly", "daily", "midnight", "hourly")
BUDGET_SCHEDULE = r"^(@(" + "|".join(CRON_MACROS) + r")|\S+\s+\S+\s+\S+\s+\S+\s+\S+)$"
QUALIFIED_NAME = (
    r"^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
MAX_TAINTS = 50
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
EVICTION_THRESHOLD = (
    r"^(([0-9]{1,2}(\.[0-9]{1,2})?|100(\.0{1,2})?)%|"
    + QUANTITY_PATTERN.removeprefix("^").removesuffix("$")
    + ")$"
)
# EBS volumes are 1GiB to 64TiB.
MIN_VOLUME_BYTES, MAX_VOLUME_BYTES = 2**30, 64 * 2**40


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _cel_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_cel_string(v) for v in values) + "]"


# -- label keys a NodePool may not use ---------------------------------------------------------


@dataclass(frozen=True)
class _KeyCheck:
    """A check on one label key: ``cel(var)`` is the CEL predicate over the key named
    ``var``; ``ok`` is the same predicate in Python."""

    cel: Callable[[str], str]
    message: str
    ok: Callable[[str], bool]


def _domain_regex(domains: Iterable[str]) -> str:
    """Keys whose domain (the part before '/') ends with one of ``domains``."""
    return "^[^/]*(" + "|".join(d.replace(".", r"\.") for d in domains) + ")/"


def _domain_check(domain: str, allowed: frozenset[str]) -> _KeyCheck:
    inside = _domain_regex([domain])
    excepted = _domain_regex(wk.LABEL_DOMAIN_EXCEPTIONS)
    allowed = frozenset(key for key in allowed if re.match(inside, key))
    return _KeyCheck(
        cel=lambda var: (
            f"{var} in {_cel_list(sorted(allowed))}"
            f" || !{var}.matches({_cel_string(inside)}) || {var}.matches({_cel_string(excepted)})"
        ),
        message=f'label domain "{domain}" is restricted',
        ok=lambda key: (
            key in allowed or re.match(inside, key) is None or re.match(excepted, key) is not None
        ),
    )


def _restricted_key_checks() -> tuple[_KeyCheck, ...]:
    """The keys ``labels.is_restricted_label`` rejects, one message per reason: the
    restricted keys by name, then the reserved domains (minus well-known labels and the
    allowed sub-domains). A test proves the union equals ``is_restricted_label``."""
    restricted = wk.RESTRICTED_LABELS | {wk.EC2NODECLASS}
    explicit = tuple(
        _KeyCheck(
            lambda var, key=key: f"{var} != '{key}'",
            f'label "{key}" is restricted',
            lambda k, key=key: k != key,
        )
        for key in sorted(restricted)
    )
    # Keys reported by name above are let through here so that each is reported once.
    allowed = frozenset(wk.WELL_KNOWN_LABELS | set(wk.BETA_ALIASES)) | restricted
    domains = tuple(_domain_check(d, allowed) for d in wk.RESTRICTED_LABEL_DOMAINS)
    return explicit + domains


RESTRICTED_KEY_CHECKS = _restricted_key_checks()


def _key_rules() -> tuple[Rule, ...]:
    """Rules for a single label key (a requirement's ``key``)."""
    return tuple(
        Rule(check.message, check.ok, cel=check.cel("self")) for check in RESTRICTED_KEY_CHECKS
    )


def _map_key_rules() -> tuple[Rule, ...]:
    """The same rules over every key of a map (template labels)."""
    return tuple(
        Rule(
            check.message,
            lambda labels, ok=check.ok: all(ok(key) for key in labels),
            cel=f"self.all(k, {check.cel('k')})",
        )
        for check in RESTRICTED_KEY_CHECKS
    )


# -- shared pieces ----------------------------------------------------------------------------


def _duration(description: str, never: bool, **options: Any) -> Schema:
    return string(
        description,
        pattern=DURATION_OR_NEVER if never else DURATION,
        hint=DURATION_OR_NEVER_HINT if never else DURATION_HINT,
        **options,
    )


def _values_count(raw: dict[str, Any]) -> int:
    return len(raw.get("values") or [])


def _requirement_rules() -> tuple[Rule, ...]:
    numeric = _cel_list(NUMERIC_OPERATORS)
    return (
        Rule(
            "requirements with operator 'In' must have a value defined",
            lambda r: r["operator"] != "In" or _values_count(r) > 0,
            cel="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",
            field_path=".values",
        ),
        Rule(
            "requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
            "integer value >= 0",
            lambda r: (
                r["operator"] not in NUMERIC_OPERATORS
                or (_values_count(r) == 1 and re.fullmatch("[0-9]+", r["values"][0]) is not None)
            ),
            cel=f"!(self.operator in {numeric}) || (has(self.values) && size(self.values) == 1"
            " && self.values[0].matches('^[0-9]+$'))",
            field_path=".values",
        ),
        Rule(
            "requirements with operator 'Exists' or 'DoesNotExist' must not have values",
            lambda r: r["operator"] not in ("Exists", "DoesNotExist") or _values_count(r) == 0,
            cel="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values)"
            " || size(self.values) == 0",
            field_path=".values",
        ),
        Rule(
            "requirements with 'minValues' must have at least that many values in 'values'",
            lambda r: (
                not (r["operator"] == "In" and "minValues" in r)
                or _values_count(r) >= r["minValues"]
            ),
            cel="!(self.operator == 'In' && has(self.minValues))"
            " || (has(self.values) && size(self.values) >= self.minValues)",
            field_path=".values",
        ),
    )


def requirement(restrict_keys: bool) -> Schema:
    """A node selector requirement; a NodePool may not require restricted keys."""
    return obj(
        "A scheduling requirement on a node label.",
        {
            "key": string(
                "The label key.",
                max_length=316,
                pattern=QUALIFIED_NAME,
                hint="expected a label key like example.com/team",
                rules=_key_rules() if restrict_keys else (),
            ),
            "operator": string("How values are compared.", enum=OPERATORS),
            "values": array(string(max_length=63), "The values the operator compares."),
            "minValues": integer(
                "Least number of distinct values the launch must be flexible across.",
                minimum=1,
                maximum=50,
            ),
        },
        required=("key", "operator"),
        rules=_requirement_rules(),
    )


def taint() -> Schema:
    return obj(
        "A node taint.",
        {
            "key": string(
                "Taint key.", min_length=1, pattern=QUALIFIED_NAME, hint="expected a taint key"
            ),
            "value": string(
                "Taint value.", pattern=LABEL_VALUE, hint="expected a label-style value"
            ),
            "effect": string("Taint effect.", enum=TAINT_EFFECTS),
            "timeAdded": string("When the taint was added.", format="date-time"),
        },
        required=("key", "effect"),
    )


def _taint_pairs(spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    taints = list(spec.get("taints") or []) + list(spec.get("startupTaints") or [])
    return [(t.get("key"), t.get("effect")) for t in taints]


_ALL_TAINTS_CEL = (
    "((has(self.taints) ? self.taints : []) + (has(self.startupTaints) ? self.startupTaints : []))"
)
NO_DUPLICATE_TAINTS = Rule(
    "taints and startupTaints may not repeat a key/effect pair",
    lambda spec: len(set(_taint_pairs(spec))) == len(_taint_pairs(spec)),
    cel=f"{_ALL_TAINTS_CEL}.all(t, size({_ALL_TAINTS_CEL}.filter(u, u.key == t.key"
    " && u.effect == t.effect)) == 1)",
)


def node_class_ref(immutable_group_kind: bool) -> Schema:
    def part(description: str, field: str, **options: Any) -> Schema:
        rules = (immutable(f"nodeClassRef.{field} is immutable"),) if immutable_group_kind else ()
        return string(description, min_length=1, rules=rules, **options)

    return obj(
        "The node class (EC2NodeClass) nodes are launched with.",
        {
            "group": part(
                "API group of the node class.",
                "group",
                max_length=253,
                pattern=r"^[^/]*$",
                hint="expected an API group like karpenter.k8s.aws",
            ),
            "kind": part(
                "Kind of the node class.",
                "kind",
                max_length=63,
                pattern=r"^[A-Za-z0-9]+$",
                hint="expected a kind like EC2NodeClass",
            ),
            "name": string("Name of the node class.", min_length=1, max_length=253),
        },
        required=("group", "kind", "name"),
    )


def conditions() -> Schema:
    return array(
        obj(
            "A status condition.",
            {
                "type": string(max_length=316),
                "status": string(enum=("True", "False", "Unknown")),
                "reason": string(max_length=1024),
                "message": string(max_length=32768),
                "lastTransitionTime": string(format="date-time"),
                "observedGeneration": integer(minimum=0),
            },
            required=("type", "status"),
        ),
        "Status conditions.",
    )


# -- NodePool ---------------------------------------------------------------------------------


def _is_cron(schedule: str) -> bool:
    return bool(croniter.is_valid(schedule))


def budget() -> Schema:
    return obj(
        "How many nodes may be disrupted at once, optionally only during a schedule.",
        {
            "nodes": string(
                "A node count (5) or a percentage of the pool's nodes (10%).",
                pattern=BUDGET_NODES,
                hint="expected a node count like 5 or a percentage from 0% to 100%",
                default=np.DEFAULT_BUDGET_NODES,
            ),
            "schedule": string(
                "When the budget starts being active, as cron in UTC or a macro (@daily).",
                pattern=BUDGET_SCHEDULE,
                hint="expected a cron schedule with 5 fields or a macro like @daily",
                rules=(
                    Rule(
                        "invalid cron schedule (expected 5 fields like '0 9 * * 1-5' "
                        "or a macro like @daily)",
                        _is_cron,
                    ),
                ),
            ),
            "duration": string(
                "How long the budget is active after each scheduled start.",
                pattern=BUDGET_DURATION,
                hint="expected a duration in hours and minutes like 10h, 30m or 1h30m",
            ),
            "reasons": array(
                string(enum=np.DISRUPTION_REASONS),
                "The disruption reasons the budget limits (all when omitted).",
                max_items=len(np.DISRUPTION_REASONS),
            ),
        },
        required=("nodes",),
        rules=(
            Rule(
                "'schedule' must be set with 'duration'",
                lambda b: ("schedule" in b) == ("duration" in b),
                cel="has(self.schedule) == has(self.duration)",
            ),
        ),
    )


def disruption() -> Schema:
    return obj(
        "When and how nodes of this pool may be disrupted.",
        {
            "consolidationPolicy": string(
                "Which nodes consolidation considers.",
                enum=np.CONSOLIDATION_POLICIES,
                default=np.DEFAULT_CONSOLIDATION_POLICY,
            ),
            "consolidateAfter": _duration(
                "How long a node must be consolidatable before it is; Never disables.",
                never=True,
                default=np.DEFAULT_CONSOLIDATE_AFTER,
            ),
            "budgets": array(
                budget(),
                "Disruption budgets; the most restrictive active one applies.",
                max_items=50,
                default=[{"nodes": np.DEFAULT_BUDGET_NODES}],
            ),
        },
        required=("consolidateAfter",),
        default={"consolidateAfter": np.DEFAULT_CONSOLIDATE_AFTER},
    )


def template_metadata() -> Schema:
    return obj(
        "Labels and annotations every node of the pool gets.",
        {
            "labels": map_of(
                string(max_length=63, pattern=LABEL_VALUE, hint="expected a label value"),
                "Node labels.",
                max_properties=100,
                rules=_map_key_rules(),
            ),
            "annotations": map_of(string(), "Node annotations."),
        },
    )


def nodeclaim_spec(for_template: bool) -> Schema:
    """The NodeClaim spec, also the spec of a NodePool's template."""
    properties: dict[str, Schema] = {
        "nodeClassRef": node_class_ref(immutable_group_kind=for_template),
        "requirements": array(
            requirement(restrict_keys=for_template),
            "Requirements on node labels (instance type, zone, capacity type, ...).",
            min_items=1,
            max_items=100,
        ),
    }
    if not for_template:
        properties["resources"] = obj(
            "Resources the node must provide.",
            {"requests": map_of(quantity(), "Requested resources.")},
        )
    properties |= {
        # The duplicate-taint rule compares every pair: bounded lists keep its CEL cost
        # within the API server's budget.
        "taints": array(taint(), "Taints every node gets.", max_items=MAX_TAINTS),
        "startupTaints": array(
            taint(),
            "Taints a node starts with and something else removes; pods need not tolerate them.",
            max_items=MAX_TAINTS,
        ),
        "expireAfter": _duration(
            "Node lifetime before it is replaced; Never keeps nodes.",
            never=True,
            default=np.DEFAULT_EXPIRE_AFTER,
        ),
        "terminationGracePeriod": _duration(
            "Longest time draining may take before the node is terminated.", never=False
        ),
    }
    rules = (
        (NO_DUPLICATE_TAINTS,)
        if for_template
        else (
            NO_DUPLICATE_TAINTS,
            immutable("spec is immutable"),
        )
    )
    return obj(
        "What the node must be.",
        properties,
        required=("nodeClassRef", "requirements"),
        rules=rules,
    )


def nodepool_spec() -> Schema:
    return obj(
        "A pool of nodes Joiner may launch.",
        {
            "template": obj(
                "What every NodeClaim of the pool gets.",
                {"metadata": template_metadata(), "spec": nodeclaim_spec(for_template=True)},
                required=("spec",),
            ),
            "disruption": disruption(),
            "limits": map_of(
                quantity(),
                "Most resources (cpu, memory, nodes, ...) the pool's nodes may sum to.",
            ),
            "weight": integer("Priority among pools; higher first.", minimum=1, maximum=100),
        },
        required=("template",),
    )


def nodepool_status() -> Schema:
    return obj(
        "Observed state of the pool.",
        {
            "resources": map_of(quantity(), "Sum of the capacity of the pool's nodes."),
            "nodes": integer("Number of nodes in the pool.", minimum=0),
            "nodeClassObservedGeneration": integer(minimum=0),
            "conditions": conditions(),
        },
    )


def nodeclaim_status() -> Schema:
    return obj(
        "Observed state of the machine.",
        {
            "nodeName": string("The Node this claim became."),
            "providerID": string("aws:///<zone>/<instance-id>"),
            "imageID": string("The AMI the instance runs."),
            "capacity": map_of(quantity(), "Capacity of the instance."),
            "allocatable": map_of(quantity(), "What pods may use."),
            "lastPodEventTime": string(format="date-time"),
            "conditions": conditions(),
        },
    )


# -- EC2NodeClass -----------------------------------------------------------------------------


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


def _exclusive(field: str, what: str) -> Rule:
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with other fields in "
        f"{'an' if what[0] in 'AEIOU' else 'a'} {what}",
        lambda term: field not in term or len(term) == 1,
        cel=f"!has(self.{field}) || size(self) == 1",
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
            _exclusive("id", "subnet selector term"),
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
            _exclusive("id", "security group selector term"),
        ),
    )


_ALIAS_FAMILY_PATTERN = "^(" + "|".join(sorted(ec2.AMI_ALIAS_FAMILIES)) + ")@"


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
            _exclusive("alias", what),
            _exclusive("id", what),
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
                cel=f"self.all(k, k in {_cel_list(EVICTION_SIGNALS)})",
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
                cel=f"self.all(k, k in {_cel_list(RESERVED_RESOURCES)})",
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


# -- kinds ------------------------------------------------------------------------------------


def _has_name(obj_: dict[str, Any]) -> bool:
    meta = obj_.get("metadata")
    return isinstance(meta, dict) and bool(meta.get("name") or meta.get("generateName"))


def root(spec: Schema, status: Schema) -> Schema:
    return obj(
        properties={
            "apiVersion": string(),
            "kind": string(),
            "metadata": free_object(),
            "spec": spec,
            "status": status,
        },
        required=("spec",),
        rules=(
            Rule(
                "is required (or metadata.generateName)",
                _has_name,
                field_path="metadata.name",
            ),
        ),
    )


@dataclass(frozen=True)
class Kind:
    """A served kind: its names, printer columns and schema."""

    group: str
    kind: str
    plural: str
    short_names: tuple[str, ...]
    schema: Schema
    printer_columns: tuple[dict[str, Any], ...]

    @property
    def api_version(self) -> str:
        return f"{self.group}/v1"


def _column(name: str, path: str, type_: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


_READY = _column("Ready", '.status.conditions[?(@.type=="Ready")].status')
_AGE = _column("Age", ".metadata.creationTimestamp", "date")

NODEPOOL = Kind(
    group=wk.KARPENTER_GROUP,
    kind=np.KIND,
    plural="nodepools",
    short_names=(),
    schema=root(nodepool_spec(), nodepool_status()),
    printer_columns=(
        _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        _column("Nodes", ".status.resources.nodes"),
        _READY,
        _AGE,
        _column("Weight", ".spec.weight", "integer", priority=1),
        _column("CPU", ".status.resources.cpu", priority=1),
        _column("Memory", ".status.resources.memory", priority=1),
    ),
)

NODECLAIM = Kind(
    group=wk.KARPENTER_GROUP,
    kind=nc.KIND,
    plural="nodeclaims",
    short_names=(),
    schema=root(nodeclaim_spec(for_template=False), nodeclaim_status()),
    printer_columns=(
        _column("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
        _column("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
        _column("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
        _column("Node", ".status.nodeName"),
        _READY,
        _AGE,
        _column("ImageID", ".status.imageID", priority=1),
        _column("ID", ".status.providerID", priority=1),
        _column("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
        _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
    ),
)

EC2NODECLASS = Kind(
    group=wk.AWS_GROUP,
    kind=ec2.KIND,
    plural="ec2nodeclasses",
    short_names=("ec2nc", "ec2ncs"),
    schema=root(ec2nodeclass_spec(), ec2nodeclass_status()),
    printer_columns=(_READY, _AGE, _column("Role", ".spec.role", priority=1)),
)

KINDS: tuple[Kind, ...] = (NODEPOOL, NODECLAIM, EC2NODECLASS)
JOINER_GROUPS = frozenset(k.group for k in KINDS)
