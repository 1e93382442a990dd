"""Karpenter objects and the autoscaler's own Deployment [SPEC 1] [DEPLOY]."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joiner.api import labels as wk
from joiner.api.nodepool import DEFAULT_BUDGET_NODES
from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    StackValidationArgs,
)

from joiner_policies._declare import allow_option, resource_policy, stack_policy, string_list_option
from joiner_policies._kubernetes import DEPLOYMENT, EC2NODECLASS, NODEPOOL, is_kind
from joiner_policies._values import (
    config_value,
    dig,
    is_true,
    items,
    known,
    mapping,
    number,
    strings,
)

# A limit on any of these bounds how much a pool can launch.
CEILING_RESOURCES = ("cpu", "memory", "nodes")
NEVER = "Never"
# Field -> the term keys that select something (a term needs at least one).
SELECTOR_FIELDS = {
    "subnetSelectorTerms": ("tags", "id"),
    "securityGroupSelectorTerms": ("tags", "id", "name"),
    "amiSelectorTerms": ("alias", "tags", "id", "name", "ssmParameter"),
}
APP_NAME_LABEL = "app.kubernetes.io/name"
DEFAULT_CONTROLLER_NAMES = ["karpenter", "joiner"]


def _nodepool_limits(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_kind(args.resource_type, args.props, NODEPOOL):
        return
    limits = mapping(dig(args.props, "spec", "limits"))
    if not any(limits.get(name) not in (None, "") for name in CEILING_RESOURCES):
        report(
            "spec.limits sets no cpu, memory or nodes ceiling: the pool can launch without "
            "bound (an autoscaler without a ceiling is a billing incident)",
            None,
        )


def _nodepool_expiry(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_kind(args.resource_type, args.props, NODEPOOL):
        return
    if is_true(config_value(args.get_config(), "allowNeverExpire", False)):
        return
    if dig(args.props, "spec", "template", "spec", "expireAfter") == NEVER:
        report(
            "spec.template.spec.expireAfter is Never: nodes are never replaced, so they "
            "never pick up new AMIs and patches; use a duration such as 720h",
            None,
        )


def _limits_disruption(budget: Mapping[str, Any]) -> bool:
    """True for a budget that is always active, for every reason, below 100% of nodes."""
    if budget.get("schedule") or budget.get("reasons"):
        return False
    nodes = str(budget.get("nodes", DEFAULT_BUDGET_NODES)).strip()
    if nodes.endswith("%"):
        percent = number(nodes[:-1])
        return percent is not None and percent < 100
    return number(nodes) is not None


def _nodepool_budgets(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_kind(args.resource_type, args.props, NODEPOOL):
        return
    budgets = dig(args.props, "spec", "disruption", "budgets")
    if budgets is None:
        return  # the API default applies: {nodes: 10%}
    if not any(_limits_disruption(mapping(budget)) for budget in items(budgets)):
        report(
            "spec.disruption.budgets has no budget that always applies (no schedule, no "
            "reasons) and allows fewer than 100% of nodes: voluntary disruption can take "
            f"every node at once; add e.g. {{nodes: {DEFAULT_BUDGET_NODES}}}",
            None,
        )


def _nodeclass_selectors(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_kind(args.resource_type, args.props, EC2NODECLASS):
        return
    spec = mapping(args.props.get("spec"))
    for field, selectors in SELECTOR_FIELDS.items():
        terms = items(spec.get(field))
        if not terms:
            report(f"spec.{field} is empty: it must select what nodes use", None)
            continue
        for index, term in enumerate(terms):
            if not any(mapping(term).get(key) for key in selectors):
                report(
                    f"spec.{field}[{index}] selects nothing: give it one of {', '.join(selectors)}",
                    None,
                )


def _is_controller(props: Mapping[str, Any], names: list[str]) -> bool:
    labels = [
        mapping(dig(props, "metadata", "labels")).get(APP_NAME_LABEL),
        mapping(dig(props, "spec", "template", "metadata", "labels")).get(APP_NAME_LABEL),
    ]
    return any(label in names for label in labels)


def _runs_as_root(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    pod_context = mapping(pod.get("securityContext"))
    context = mapping(container.get("securityContext"))
    non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
    uid = number(context.get("runAsUser", pod_context.get("runAsUser")))
    if uid is not None:
        return uid == 0
    return not is_true(non_root)


def _avoids_managed_nodes(pod: Mapping[str, Any]) -> bool:
    """True when every required node selector term excludes nodes of a NodePool."""
    terms = items(
        dig(
            pod,
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        )
    )
    return bool(terms) and all(
        any(
            mapping(expression).get("key") == wk.NODEPOOL
            and mapping(expression).get("operator") == "DoesNotExist"
            for expression in items(mapping(term).get("matchExpressions"))
        )
        for term in terms
    )


def _controller_hardened(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_kind(args.resource_type, args.props, DEPLOYMENT):
        return
    names = strings(config_value(args.get_config(), "controllerNames", DEFAULT_CONTROLLER_NAMES))
    if not _is_controller(args.props, names):
        return
    pod = mapping(dig(args.props, "spec", "template", "spec"))
    containers = items(pod.get("initContainers")) + items(pod.get("containers"))
    for container in map(mapping, containers):
        name = container.get("name")
        if _runs_as_root(pod, container):
            report(
                f"container {name} may run as root: "
                "set runAsNonRoot: true and a non-zero runAsUser",
                None,
            )
        if not is_true(mapping(container.get("securityContext")).get("readOnlyRootFilesystem")):
            report(
                f"container {name} has a writable root filesystem: "
                "set readOnlyRootFilesystem: true",
                None,
            )
    if not _avoids_managed_nodes(pod):
        report(
            "the controller can be scheduled on nodes it manages (and then evict itself): "
            f"require node affinity {wk.NODEPOOL} DoesNotExist in every nodeSelectorTerm",
            None,
        )


def _node_class_ref(pool: PolicyResource) -> tuple[str, str, str]:
    ref = mapping(dig(pool.props, "spec", "template", "spec", "nodeClassRef"))
    return ref.get("group", wk.AWS_GROUP), ref.get("kind", EC2NODECLASS[1]), ref.get("name")


def _declared_node_classes(resources: list[PolicyResource]) -> set[str | None]:
    """Names of the stack's EC2NodeClasses; None stands for one not known yet."""
    return {
        known(lambda r=r: dig(r.props, "metadata", "name"))
        for r in resources
        if known(lambda r=r: is_kind(r.resource_type, r.props, EC2NODECLASS))
    }


def _nodeclass_exists(args: StackValidationArgs, report: ReportViolation) -> None:
    classes = _declared_node_classes(args.resources)
    if None in classes:
        return  # a class whose name is not known yet could be the one referenced
    for pool in args.resources:
        if not known(lambda p=pool: is_kind(p.resource_type, p.props, NODEPOOL)):
            continue
        ref = known(lambda p=pool: _node_class_ref(p))
        if ref is None or ref[:2] != (wk.AWS_GROUP, EC2NODECLASS[1]) or ref[2] in classes:
            continue  # not known yet, another provider's node class, or declared
        name = known(lambda p=pool: dig(p.props, "metadata", "name")) or pool.name
        report(
            f"NodePool {name} references EC2NodeClass {ref[2]!r}, which this stack does not "
            "declare",
            pool.urn,
        )


nodepool_limits = resource_policy(
    "nodepool-limits",
    "Every NodePool sets spec.limits with a cpu, memory or nodes ceiling.",
    _nodepool_limits,
)

nodepool_expiry = resource_policy(
    "nodepool-expiry",
    "NodePools do not set expireAfter: Never unless allowNeverExpire is set.",
    _nodepool_expiry,
    options={"allowNeverExpire": allow_option("Allow NodePools whose nodes never expire.")},
)

nodepool_disruption_budgets = resource_policy(
    "nodepool-disruption-budgets",
    "NodePools keep a disruption budget that always applies and allows fewer than 100% "
    "of nodes (the API default, nodes: 10%, counts).",
    _nodepool_budgets,
)

ec2nodeclass_selectors = resource_policy(
    "ec2nodeclass-selectors",
    "EC2NodeClass subnet, security group and AMI selector terms are not empty.",
    _nodeclass_selectors,
)

controller_hardened = resource_policy(
    "autoscaler-controller-hardened",
    "The autoscaler controller Deployment runs as non-root with a read-only root "
    "filesystem and never on nodes it manages.",
    _controller_hardened,
    options={
        "controllerNames": string_list_option(
            f"{APP_NAME_LABEL} values that mark the controller Deployment.",
            default=DEFAULT_CONTROLLER_NAMES,
        )
    },
)

nodepool_nodeclass_exists = stack_policy(
    "nodepool-nodeclass-exists",
    "Every NodePool references an EC2NodeClass declared in the same stack.",
    _nodeclass_exists,
)

POLICIES = [
    nodepool_limits,
    nodepool_expiry,
    nodepool_disruption_budgets,
    ec2nodeclass_selectors,
    controller_hardened,
    nodepool_nodeclass_exists,
]
