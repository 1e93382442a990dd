"""NodeOverlay schema (karpenter.sh/v1alpha1) [OVERLAY-1]: upstream's CRD, field for field
and rule for rule (messages as upstream writes them)."""

from __future__ import annotations

from joiner.api import nodeoverlay as no
from joiner.api.definitions.common import (
    NUMERIC_OPERATORS,
    QUALIFIED_NAME,
    cel_list,
    conditions,
    key_rules,
    numeric_ok,
    overlay_key_checks,
)
from joiner.api.requirements import OPERATORS
from joiner.api.schema import Rule, Schema, array, integer, map_of, obj, quantity, string

PRICE = r"^\d+(\.\d+)?$"
PRICE_ADJUSTMENT = r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"


def _requirement() -> Schema:
    return obj(
        "A requirement on the labels of the instance types (and offerings) to change.",
        {
            "key": string(
                "The label key.",
                max_length=316,
                pattern=QUALIFIED_NAME,
                hint="expected a label key like node.kubernetes.io/instance-type",
                rules=key_rules(overlay_key_checks()),
            ),
            "operator": string("How values are compared.", enum=OPERATORS),
            "values": array(string(), "The values the operator compares."),
        },
        required=("key", "operator"),
    )


def _requirement_rules() -> tuple[Rule, ...]:
    """Upstream's three rules; a requirement without ``values`` where they are needed fails
    as the CEL evaluation does (no such key)."""
    return (
        Rule(
            "requirements with operator 'NotIn' must have a value defined",
            lambda reqs: all(r["operator"] != "NotIn" or len(r["values"]) != 0 for r in reqs),
            cel="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)",
        ),
        Rule(
            "requirements with operator 'In' must have a value defined",
            lambda reqs: all(r["operator"] != "In" or len(r["values"]) != 0 for r in reqs),
            cel="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
        ),
        Rule(
            "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive "
            "integer value",
            lambda reqs: all(numeric_ok(r) for r in reqs),
            cel=f"self.all(x, (x.operator in {cel_list(NUMERIC_OPERATORS)})"
            " ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        ),
    )


def nodeoverlay_spec() -> Schema:
    return obj(
        "Which instance types to change, and how.",
        {
            "requirements": array(
                _requirement(),
                "Requirements on instance type and offering labels (instance type, capacity "
                "type, zone, the NodePool and its template labels) selecting what to change.",
                max_items=100,
                rules=_requirement_rules(),
            ),
            "weight": integer(
                "Precedence where overlays select the same instance type: higher wins; "
                "unset counts as 0.",
                minimum=1,
                maximum=10000,
                format="int32",
            ),
            "price": string(
                "The price of the selected offerings, replacing the cloud's.",
                pattern=PRICE,
                hint="expected a price like 0.25",
            ),
            "priceAdjustment": string(
                "A change of the selected offerings' price: an amount (+0.1, -0.05) or a "
                "percentage (+10%, -15%).",
                pattern=PRICE_ADJUSTMENT,
                hint="expected an amount like -0.05 or a percentage like +10% or -15%",
            ),
            "capacity": map_of(
                quantity(),
                "Extended resources the selected instance types' nodes have (device plugins).",
                rules=(
                    Rule(
                        "invalid resource restricted",
                        lambda capacity: not any(r in no.STANDARD_RESOURCES for r in capacity),
                        cel=f"self.all(x, !(x in {cel_list(no.STANDARD_RESOURCES)}))",
                    ),
                ),
            ),
        },
        required=("requirements",),
        rules=(
            Rule(
                "cannot set both 'price' and 'priceAdjustment'",
                lambda spec: "price" not in spec or "priceAdjustment" not in spec,
                cel="!has(self.price) || !has(self.priceAdjustment)",
            ),
        ),
    )


def nodeoverlay_status() -> Schema:
    return obj("What Joiner found applying the overlay.", {"conditions": conditions()})
