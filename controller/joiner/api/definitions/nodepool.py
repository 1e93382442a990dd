"""NodePool and NodeClaim schemas (karpenter.sh/v1) [SPEC 1]."""

from __future__ import annotations

from collections.abc import Callable

from joiner.api import nodepool as np
from joiner.api.definitions.common import (
    LABEL_VALUE,
    NO_DUPLICATE_TAINTS,
    conditions,
    duration_string,
    label_key_advice,
    map_key_rules,
    node_class_ref,
    requirements,
    restricted_key_checks,
    taint,
)
from joiner.api.duration import DURATION_BEYOND_RANGE, beyond_range
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.api.schema import (
    Advice,
    Rule,
    Schema,
    array,
    immutable,
    integer,
    map_of,
    obj,
    quantity,
    string,
)

BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
BUDGET_DURATION = r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?$"
_MACROS = "|".join(sorted(m.removeprefix("@") for m in np.CRON_MACROS))
# As upstream's CRD: a macro prefix, or anything that ends in five space-separated parts.
BUDGET_SCHEDULE = r"^(@(" + _MACROS + r"))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"

CRON = "cron"
DURATION_RANGE = "duration-range"
NEGATIVE_LIMIT = "negative-limit"
QUANTITY_RANGE = "quantity-range"
_NEVER = "treated as Never"


def _cron_advice() -> Advice:
    return Advice(
        CRON,
        "not a cron schedule Joiner can read",
        lambda schedule: np.cron_expression(schedule) is not None,
        lambda schedule: (
            f"{schedule!r} is not a cron schedule Joiner can read (5 fields like "
            "'0 9 * * 1-5', or a macro like @daily); the budget then always applies"
        ),
    )


def duration_advice(outcome: str) -> Advice:
    """A duration too long for Kubernetes tools to hold."""
    return Advice(
        DURATION_RANGE,
        DURATION_BEYOND_RANGE,
        lambda text: not beyond_range(text),
        lambda text: f"{text!r}: {DURATION_BEYOND_RANGE}; {outcome}",
    )


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
                advice=(_cron_advice(),),
            ),
            "duration": string(
                "How long the budget is active after each scheduled start.",
                pattern=BUDGET_DURATION,
                hint="expected a duration in hours and minutes like 10h, 30m or 1h30m",
                advice=(duration_advice("the budget applies from its first start on"),),
            ),
            "reasons": array(
                string(enum=np.DISRUPTION_REASONS),
                "The disruption reasons the budget limits (all when omitted).",
                max_items=50,
                unique=True,
            ),
        },
        required=("nodes",),
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
            "consolidateAfter": duration_string(
                "How long a node must be consolidatable before it is; Never disables.",
                never=True,
                advice=(duration_advice(_NEVER),),
            ),
            "budgets": array(
                budget(),
                "Disruption budgets; the most restrictive active one applies.",
                max_items=50,
                default=[{"nodes": np.DEFAULT_BUDGET_NODES}],
                rules=(
                    Rule(
                        "'schedule' must be set with 'duration'",
                        lambda budgets: all(
                            ("schedule" in b) == ("duration" in b) for b in budgets
                        ),
                        cel="self.all(x, has(x.schedule) == has(x.duration))",
                    ),
                ),
            ),
        },
        required=("consolidateAfter",),
        default={"consolidateAfter": np.DEFAULT_CONSOLIDATE_AFTER},
    )


NODEPOOL_KEYS = restricted_key_checks(nodepool=True)
NODECLAIM_KEYS = restricted_key_checks(nodepool=False)


def template_metadata() -> Schema:
    return obj(
        "Labels and annotations every node of the pool gets.",
        {
            "labels": map_of(
                string(max_length=63, pattern=LABEL_VALUE, hint="expected a label value"),
                "Node labels.",
                max_properties=100,
                rules=map_key_rules(NODEPOOL_KEYS),
                advice=label_key_advice(NODEPOOL_KEYS, over_map=True),
            ),
            "annotations": map_of(string(), "Node annotations."),
        },
    )


def nodeclaim_spec(for_template: bool) -> Schema:
    """The NodeClaim spec, also the spec of a NodePool's template."""
    keys = NODEPOOL_KEYS if for_template else NODECLAIM_KEYS
    properties: dict[str, Schema] = {
        "nodeClassRef": node_class_ref(immutable_group_kind=for_template),
        "requirements": requirements(keys, advise=for_template),
    }
    if not for_template:
        properties["resources"] = obj(
            "Resources the node must provide.",
            {"requests": map_of(quantity(), "Requested resources.")},
        )
    properties |= {
        "taints": array(taint(), "Taints every node gets."),
        "startupTaints": array(
            taint(),
            "Taints a node starts with and something else removes; pods need not tolerate them.",
        ),
        "expireAfter": duration_string(
            "Node lifetime before it is replaced; Never keeps nodes.",
            never=True,
            default=np.DEFAULT_EXPIRE_AFTER,
            advice=(duration_advice(_NEVER),),
        ),
        "terminationGracePeriod": duration_string(
            "Longest time draining may take before the node is terminated.",
            never=False,
            advice=(duration_advice("draining is not cut short"),),
        ),
    }
    return obj(
        "What the node must be.",
        properties,
        required=("nodeClassRef", "requirements"),
        rules=() if for_template else (immutable("spec is immutable"),),
        advice=(NO_DUPLICATE_TAINTS,),
    )


def _negative(value: int | str) -> bool:
    try:
        return parse_quantity(value).value < 0
    except QuantityError:
        return False  # the range advice says so


def _readable(value: int | str) -> bool:
    """The pattern lets through exponents beyond what Joiner reads (e+-1000)."""
    try:
        parse_quantity(value)
    except QuantityError:
        return False
    return True


def _first(limits: dict[str, int | str], bad: Callable[[int | str], bool]) -> str:
    return next(f"{k}={v}" for k, v in limits.items() if bad(v))


def _limit_advice() -> tuple[Advice, ...]:
    return (
        Advice(
            NEGATIVE_LIMIT,
            "a negative limit",
            lambda limits: not any(_negative(v) for v in limits.values()),
            lambda limits: (
                f"negative limit {_first(limits, _negative)}; Joiner treats it as 0 "
                "(the pool launches nothing more of it)"
            ),
        ),
        Advice(
            QUANTITY_RANGE,
            "a quantity beyond Joiner's range",
            lambda limits: all(_readable(v) for v in limits.values()),
            lambda limits: (
                f"limit {_first(limits, lambda v: not _readable(v))} has an exponent beyond "
                "what Joiner reads (e+-1000); Joiner ignores this limit"
            ),
        ),
    )


def _static_pool_rules() -> tuple[Rule, ...]:
    """Upstream's rules on static NodePools (``replicas``) [STATIC-2]."""
    return (
        Rule(
            "Cannot transition NodePool between static (replicas set) and dynamic "
            "(replicas unset) provisioning modes",
            lambda old, new: ("replicas" in old) == ("replicas" in new),
            cel="has(self.replicas) == has(oldSelf.replicas)",
            transition=True,
        ),
        Rule(
            "only 'limits.nodes' is supported on static NodePools",
            lambda spec: (
                "replicas" not in spec or all(k == "nodes" for k in spec.get("limits", {}))
            ),
            cel="!has(self.replicas) || !has(self.limits) || self.limits.all(k, k == 'nodes')",
        ),
        Rule(
            "'weight' is not supported on static NodePools",
            lambda spec: "replicas" not in spec or "weight" not in spec,
            cel="!has(self.replicas) || !has(self.weight)",
        ),
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
                advice=_limit_advice(),
            ),
            "weight": integer(
                "Priority among pools; higher first.", minimum=1, maximum=100, format="int32"
            ),
            "replicas": integer(
                "A fixed number of nodes (a static NodePool, gate StaticCapacity).",
                minimum=0,
                format="int64",
            ),
        },
        required=("template",),
        rules=_static_pool_rules(),
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
