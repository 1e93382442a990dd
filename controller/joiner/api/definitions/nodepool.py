"""NodePool and NodeClaim schemas (karpenter.sh/v1) [SPEC 1]."""

from __future__ import annotations

from croniter import croniter

from joiner.api import nodepool as np
from joiner.api.definitions.common import (
    LABEL_VALUE,
    NO_DUPLICATE_TAINTS,
    conditions,
    duration_string,
    map_key_rules,
    node_class_ref,
    requirement,
    taint,
)
from joiner.api.schema import (
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
CRON_MACROS = ("annually", "yearly", "monthly", "weekly", "daily", "midnight", "hourly")
BUDGET_SCHEDULE = r"^(@(" + "|".join(CRON_MACROS) + r")|\S+\s+\S+\s+\S+\s+\S+\s+\S+)$"
MAX_TAINTS = 50


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
            "consolidateAfter": duration_string(
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
                rules=map_key_rules(),
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
        "expireAfter": duration_string(
            "Node lifetime before it is replaced; Never keeps nodes.",
            never=True,
            default=np.DEFAULT_EXPIRE_AFTER,
        ),
        "terminationGracePeriod": duration_string(
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
