"""NodePools, EC2NodeClass selectors, the controller Deployment and the stack check."""

import copy

import pytest
from joiner_policies.kubernetes import (
    controller_hardened,
    ec2nodeclass_selectors,
    nodepool_disruption_budgets,
    nodepool_expiry,
    nodepool_limits,
    nodepool_nodeclass_exists,
)
from karpenter_objects import NODE_CLASS, node_class_props
from policy_calls import check, check_stack, resource, urn_of
from pulumi_joiner.nodepool import node_pool_manifest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"

NODE_CLASS_PROPS = node_class_props(
    subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "demo"}}, {"id": "subnet-1"}],
    securityGroupSelectorTerms=[{"name": "nodes"}],
)


def nodepool(limits=None, disruption=None, expire_after=None, name="default", ref="default"):
    """The NodePool the components create by default, with the fields a test is about."""
    props = node_pool_manifest(name, ref, {})
    spec = props["spec"]
    if limits is not None:
        spec["limits"] = limits
    if disruption is not None:
        spec["disruption"] = disruption
    if expire_after is not None:
        spec["template"]["spec"]["expireAfter"] = expire_after
    return props


NODEPOOL_PROPS = nodepool()


@pytest.mark.parametrize(
    "policy",
    [nodepool_limits, nodepool_expiry, nodepool_disruption_budgets, ec2nodeclass_selectors],
)
def test_sound_nodepools_and_node_classes_pass(policy):
    assert check(policy, NODEPOOL, NODEPOOL_PROPS) == []
    assert check(policy, NODE_CLASS, NODE_CLASS_PROPS) == []


UNBOUNDED = (
    "spec.limits sets no cpu, memory or nodes ceiling: the pool can launch without bound "
    "(an autoscaler without a ceiling is a billing incident)"
)


@pytest.mark.parametrize("limits", [{}, {"nvidia.com/gpu": "8"}, {"cpu": ""}])
def test_nodepools_without_a_ceiling_are_reported(limits):
    assert check(nodepool_limits, NODEPOOL, nodepool(limits=limits)) == [UNBOUNDED]


def test_a_nodepool_without_limits_at_all_is_reported():
    props = nodepool()
    del props["spec"]["limits"]
    assert check(nodepool_limits, NODEPOOL, props) == [UNBOUNDED]


@pytest.mark.parametrize("limits", [{"memory": "1000Gi"}, {"nodes": 10.0}, {"cpu": 0.0}])
def test_any_ceiling_counts(limits):
    assert check(nodepool_limits, NODEPOOL, nodepool(limits=limits)) == []


def test_never_expiring_nodes_are_reported_unless_allowed():
    props = nodepool(expire_after="Never")
    assert check(nodepool_expiry, NODEPOOL, props) == [
        "spec.template.spec.expireAfter is Never: nodes are never replaced, so they never pick "
        "up new AMIs and patches; use a duration such as 720h"
    ]
    assert check(nodepool_expiry, NODEPOOL, props, {"allowNeverExpire": True}) == []


NO_BUDGET = (
    "spec.disruption.budgets has no budget that always applies (no schedule, no reasons) and "
    "allows fewer than 100% of nodes: voluntary disruption can take every node at once; add "
    "e.g. {nodes: 10%}"
)


@pytest.mark.parametrize(
    "budgets",
    [
        [],
        [{"nodes": "100%"}],
        [{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}],
        [{"nodes": "1", "reasons": ["Drifted"]}],
        [{"nodes": "lots"}],
    ],
)
def test_nodepools_without_a_standing_budget_are_reported(budgets):
    props = nodepool(disruption={"budgets": budgets})
    assert check(nodepool_disruption_budgets, NODEPOOL, props) == [NO_BUDGET]


@pytest.mark.parametrize(
    "budgets",
    [[{"nodes": "10%"}], [{"nodes": "100%"}, {"nodes": "5"}], [{"nodes": 3.0}], [{}]],
)
def test_standing_budgets_pass(budgets):
    props = nodepool(disruption={"budgets": budgets})
    assert check(nodepool_disruption_budgets, NODEPOOL, props) == []


def node_class(**spec_changes):
    props = copy.deepcopy(NODE_CLASS_PROPS)
    props["spec"].update(spec_changes)
    return props


def test_empty_selectors_are_reported():
    props = node_class(
        subnetSelectorTerms=[], securityGroupSelectorTerms=[{"tags": {}}, {"id": ""}]
    )
    del props["spec"]["amiSelectorTerms"]
    assert check(ec2nodeclass_selectors, NODE_CLASS, props) == [
        "spec.subnetSelectorTerms is empty: it must select what nodes use",
        "spec.securityGroupSelectorTerms[0] selects nothing: give it one of tags, id, name",
        "spec.securityGroupSelectorTerms[1] selects nothing: give it one of tags, id, name",
        "spec.amiSelectorTerms is empty: it must select what nodes use",
    ]


def test_an_ami_term_with_only_an_owner_selects_nothing():
    props = node_class(amiSelectorTerms=[{"owner": "self"}])
    assert check(ec2nodeclass_selectors, NODE_CLASS, props) == [
        "spec.amiSelectorTerms[0] selects nothing: "
        "give it one of alias, tags, id, name, ssmParameter"
    ]


def controller(labels=None, pod_context=None, container_context=None, affinity=None):
    container = {"name": "controller", "image": "joiner:1"}
    if container_context is not None:
        container["securityContext"] = container_context
    pod = {"containers": [container]}
    if pod_context is not None:
        pod["securityContext"] = pod_context
    if affinity is not None:
        pod["affinity"] = affinity
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "controller",
            "labels": labels or {"app.kubernetes.io/name": "karpenter"},
        },
        "spec": {"template": {"metadata": {"labels": {}}, "spec": pod}},
    }


def avoid_nodepools(*extra_terms):
    terms = [{"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms + list(extra_terms)
            }
        }
    }


HARDENED = {"runAsNonRoot": True, "runAsUser": 65532.0, "readOnlyRootFilesystem": True}
ROOT = "container controller may run as root: set runAsNonRoot: true and a non-zero runAsUser"
WRITABLE = "container controller has a writable root filesystem: set readOnlyRootFilesystem: true"
ON_MANAGED_NODES = (
    "the controller can be scheduled on nodes it manages (and then evict itself): require node "
    "affinity karpenter.sh/nodepool DoesNotExist in every nodeSelectorTerm"
)


def test_a_hardened_controller_passes():
    props = controller(container_context=HARDENED, affinity=avoid_nodepools())
    assert check(controller_hardened, DEPLOYMENT, props) == []
    pod_level = controller(
        pod_context={"runAsNonRoot": True},
        container_context={"readOnlyRootFilesystem": True},
        affinity=avoid_nodepools(),
    )
    assert check(controller_hardened, DEPLOYMENT, pod_level) == []


def test_an_unhardened_controller_is_reported():
    assert check(controller_hardened, DEPLOYMENT, controller()) == [
        ROOT,
        WRITABLE,
        ON_MANAGED_NODES,
    ]


@pytest.mark.parametrize(
    "context",
    [
        {"runAsUser": 0.0, "runAsNonRoot": True, "readOnlyRootFilesystem": True},
        {"runAsNonRoot": False, "readOnlyRootFilesystem": True},
    ],
)
def test_root_is_reported(context):
    props = controller(container_context=context, affinity=avoid_nodepools())
    assert check(controller_hardened, DEPLOYMENT, props) == [ROOT]


def test_every_node_selector_term_must_exclude_managed_nodes():
    anywhere = {
        "matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]
    }
    props = controller(container_context=HARDENED, affinity=avoid_nodepools(anywhere))
    assert check(controller_hardened, DEPLOYMENT, props) == [ON_MANAGED_NODES]


def test_only_controller_deployments_are_judged():
    other = controller(labels={"app.kubernetes.io/name": "web"})
    assert check(controller_hardened, DEPLOYMENT, other) == []
    config = {"controllerNames": ["web"]}
    assert check(controller_hardened, DEPLOYMENT, other, config) == [
        ROOT,
        WRITABLE,
        ON_MANAGED_NODES,
    ]
    nodepool_only = check(controller_hardened, NODEPOOL, NODEPOOL_PROPS)
    assert nodepool_only == []


def test_every_nodepool_references_a_declared_node_class():
    classes = [resource(NODE_CLASS, "class-default", NODE_CLASS_PROPS)]
    pools = [
        resource(NODEPOOL, "pool-default", nodepool()),
        resource(NODEPOOL, "pool-gpu", nodepool(name="gpu", ref="gpu")),
    ]
    assert check_stack(nodepool_nodeclass_exists, classes + pools) == [
        (
            "NodePool gpu references EC2NodeClass 'gpu', which this stack does not declare",
            urn_of(NODEPOOL, "pool-gpu"),
        )
    ]
    assert check_stack(nodepool_nodeclass_exists, classes + pools[:1]) == []


def test_other_node_class_kinds_and_unknown_names_are_not_judged():
    other_kind = nodepool(ref="x")
    other_kind["spec"]["template"]["spec"]["nodeClassRef"].update(group="example.com", kind="Other")
    later = nodepool(ref=UNKNOWN_STRING_VALUE)
    stack = [resource(NODEPOOL, "a", other_kind), resource(NODEPOOL, "b", later)]
    assert check_stack(nodepool_nodeclass_exists, stack) == []
