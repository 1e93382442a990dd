"""Selector terms of an EC2NodeClass (subnets, security groups, AMIs, capacity
reservations), with upstream's rules as they are: ids matched anywhere in the text, a
term mixing ``id`` with other fields refused only when every term does (Joiner warns)."""

from __future__ import annotations

import re
from typing import Any

from joiner.api import ec2nodeclass as ec2
from joiner.api.definitions.common import cel_list
from joiner.api.schema import Advice, Rule, Schema, array, map_of, obj, string

ALIAS_FAMILIES = tuple(sorted(ec2.AMI_ALIAS_FAMILIES))
WINDOWS_ALIASES = tuple(f for f in ALIAS_FAMILIES if f.startswith("windows"))
SELECTOR_TERM = "selector-term"
SELECTOR_ID = "selector-id"
RESERVATION_ID = r"^cr-[0-9a-z]+$"
ACCOUNT_ID = r"^[0-9]{12}$"
MATCH_CRITERIA = ("open", "targeted")


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


def has_any(term: dict[str, Any], fields: tuple[str, ...]) -> bool:
    return any(f in term for f in fields)


def cel_has_any(fields: tuple[str, ...], var: str = "x") -> str:
    return " || ".join(f"has({var}.{f})" for f in fields)


def needs_one(fields: tuple[str, ...], what: str) -> Rule:
    return Rule(
        f"each {what} needs one of {', '.join(fields)}",
        lambda terms: all(has_any(t, fields) for t in terms),
        cel=f"self.all(x, {cel_has_any(fields)})",
    )


def exclusive_in_every(field: str, others: tuple[str, ...], what: str) -> Rule:
    """Upstream's rule, which refuses ``field`` with ``others`` only when every term has
    them (and an empty list)."""
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with other fields in a {what}",
        lambda terms: not all(field in t and has_any(t, others) for t in terms),
        cel=f"!self.all(x, has(x.{field}) && ({cel_has_any(others)}))",
    )


def _exclusive_in_any(field: str, others: tuple[str, ...], what: str) -> Rule:
    return Rule(
        f"'{field}' is mutually exclusive, cannot be set with other fields in an {what}",
        lambda terms: not any(field in t and has_any(t, others) for t in terms),
        cel=f"!self.exists(x, has(x.{field}) && ({cel_has_any(others)}))",
    )


def _not_empty_list(field: str) -> Rule:
    return Rule(f"{field} cannot be empty", lambda terms: len(terms) != 0, cel="self.size() != 0")


def _mixed_term_advice(field: str, others: tuple[str, ...]) -> Advice:
    return Advice(
        SELECTOR_TERM,
        f"'{field}' set with other fields in a term",
        lambda term: field not in term or not has_any(term, others),
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
            needs_one(("tags", "id"), what),
            exclusive_in_every("id", ("tags",), what),
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
            needs_one(("tags", "id", "name"), what),
            exclusive_in_every("id", ("tags", "name"), what),
            exclusive_in_every("name", ("tags", "id"), what),
        ),
    )


def alias_head(alias: str) -> str:
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
            needs_one(("tags", "id", "name", "alias", "ssmParameter"), what),
            _exclusive_in_any("id", ("alias", "tags", "name", "owner"), what),
            _exclusive_in_any("alias", ("id", "tags", "name", "owner"), what),
            Rule(
                "'alias' must be the only amiSelectorTerm",
                lambda terms: len(terms) == 1 or not any("alias" in t for t in terms),
                cel="self.size() == 1 || !self.exists(x, has(x.alias))",
            ),
        ),
    )


def capacity_reservation_terms() -> Schema:
    fields = ("tags", "id", "instanceMatchCriteria")
    return array(
        obj(
            "Capacity reservations to launch into (a term by id, or by tags, owner and "
            "match criteria).",
            {
                "id": string(pattern=RESERVATION_ID, hint="expected cr-..."),
                "instanceMatchCriteria": string(enum=MATCH_CRITERIA),
                "ownerID": string(pattern=ACCOUNT_ID, hint="expected an account id"),
                "tags": selector_tags(),
            },
        ),
        "Capacity reservation selector terms.",
        max_items=30,
        rules=(
            needs_one(fields, "capacity reservation selector term"),
            exclusive_in_every(
                "id",
                ("tags", "ownerID", "instanceMatchCriteria"),
                "capacity reservation selector term",
            ),
        ),
    )
