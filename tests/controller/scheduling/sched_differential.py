"""Joiner's plan against upstream Karpenter's outcomes on the same workload.

``divergences`` lists every way a plan breaks the compatibility promise (see
docs/compatibility.md, "Scheduling"), given several upstream runs (upstream is not
deterministic on ties):

- a pod every upstream run placed is left pending by Joiner;
- a pod no upstream run placed is placed by Joiner, unless a documented difference
  (``DOCUMENTED``) explains it;
- Joiner's NodeClaims cost more than the cheapest upstream run that placed at least the
  same pods, plus 1%; or Joiner opens more NodeClaims than such a run's fewest without
  a cheaper total;
- a NodeClaim whose requirements, taints, candidate types or resources do not admit its
  pods (checked here from the document itself, not with Joiner's code).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from joiner.api import labels as wk
from joiner.api import resources as res
from joiner.scheduling.model import NodeClaimPlan, Plan
from joiner.testing.oracle import Outcome, pinned_labels
from joiner.testing.workload import existing_node, instance_type, type_labels

COST_TOLERANCE = 0.01

Document = Mapping[str, Any]


@dataclass(frozen=True)
class Divergence:
    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


# --- documented differences (docs/compatibility.md, "Scheduling") ---------------------

# Each recognises one documented difference for one pod: (document, pod key) -> whether
# the pod is a case of it. A pod Joiner leaves pending while upstream places it, or the
# other way round, is explained only by a difference that applies to that very pod.
Explanation = Callable[[Document, str], bool]


def contradictory_node_selection(document: Document, key: str) -> bool:
    """Its nodeSelector and some required node-affinity term contradict on a key (no
    node can have the labels): upstream folds the contradiction into DoesNotExist, and
    once it has relaxed to that term places the pod on a node without the label, where
    kube-scheduler refuses it; Joiner never places a pod by a contradictory term."""
    spec = _pod(document, key).get("spec") or {}
    selector = [
        {"key": k, "operator": "In", "values": [v]}
        for k, v in (spec.get("nodeSelector") or {}).items()
    ]
    terms = _required_terms(spec) or [[]]
    return any(_contradicts([*selector, *term]) for term in terms)


def spread_ignoring_node_affinity(document: Document, key: str) -> bool:
    """It spreads with nodeAffinityPolicy Ignore and has a node selection, which may
    restrict the spread's key directly or through the instance types and NodePools it
    admits: Joiner counts every domain for the skew, as kube-scheduler does; upstream
    only the pod's own domains."""
    spec = _pod(document, key).get("spec") or {}
    selects = bool(spec.get("nodeSelector")) or any(_required_terms(spec))
    return selects and any(
        c.get("nodeAffinityPolicy") == "Ignore"
        and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        and c["topologyKey"] != wk.HOSTNAME
        for c in spec.get("topologySpreadConstraints") or ()
    )


def spread_honoring_prefer_no_schedule(document: Document, key: str) -> bool:
    """It spreads with nodeTaintsPolicy Honor and some NodePool has a PreferNoSchedule
    taint it does not tolerate: Joiner, like kube-scheduler, still counts that pool's
    domains (only NoSchedule and NoExecute exclude them); upstream excludes them."""
    pod = _pod(document, key)
    spec = pod.get("spec") or {}
    honors = any(
        c.get("nodeTaintsPolicy") == "Honor" for c in spec.get("topologySpreadConstraints") or ()
    )
    return honors and _prefers_not_on_some_pool(document, pod)


RELAXED_SPREAD = "spread after tolerating PreferNoSchedule"


def spread_after_tolerating_prefer_no_schedule(document: Document, key: str) -> bool:
    """It spreads with DoNotSchedule over pods it selects itself, taints counted as by
    default (not Honor), and upstream may relax it to tolerate a NodePool's
    PreferNoSchedule taint (``_relaxes_to_tolerate_prefer_no_schedule``): Joiner
    counts every pod placed in the batch; upstream, once it relaxes the pod to tolerate
    the taint, counts it in a new topology group that starts from the pods bound in the
    cluster only, missing those it placed earlier in the batch. The cost check does not
    skip the workload for it; it skips the runs that show it
    (``spread_skewed_after_relaxing``)."""
    pod = _pod(document, key)
    spec = pod.get("spec") or {}
    spreads_over_itself = any(
        c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        and c.get("nodeTaintsPolicy") != "Honor"
        and _selects(c, _labels(pod))
        for c in spec.get("topologySpreadConstraints") or ()
    )
    return spreads_over_itself and _relaxes_to_tolerate_prefer_no_schedule(document, pod)


def _relaxes_to_tolerate_prefer_no_schedule(document: Document, pod: Mapping[str, Any]) -> bool:
    """Whether upstream's last relaxation adds a PreferNoSchedule toleration to the pod:
    some NodePool has such a taint, and the pod has no toleration equal to the one it
    adds (operator Exists, effect PreferNoSchedule, no key). Upstream compares them
    field by field, so a pod that already tolerates the taint otherwise (an Exists
    without key or effect, say) gets it too, and a new topology group with it."""
    added = {"operator": "Exists", "effect": "PreferNoSchedule"}
    has_it = any(
        {k: v for k, v in toleration.items() if v} == added
        for toleration in (pod.get("spec") or {}).get("tolerations") or ()
    )
    return not has_it and any(
        taint.get("effect") == "PreferNoSchedule"
        for pool in document.get("nodePools") or ()
        for taint in ((pool.get("spec") or {}).get("template") or {}).get("spec", {}).get("taints")
        or ()
    )


RELAXED_TERM_SPREAD = "spread after relaxing a node-affinity term"


def spread_after_relaxing_a_term(document: Document, key: str) -> bool:
    """It spreads with DoNotSchedule over zones or capacity types, over pods it selects
    itself, and has more than one required node-affinity term: Joiner counts every pod
    placed in the batch; upstream, once it gives up the first term, counts the pod in a
    new topology group that starts from the pods bound in the cluster only. Like
    ``spread_after_tolerating_prefer_no_schedule``, the cost check skips only the runs
    that show it (``spread_skewed_after_relaxing``)."""
    pod = _pod(document, key)
    spec = pod.get("spec") or {}
    return len(_required_terms(spec)) > 1 and any(
        c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        and c.get("topologyKey") in (wk.ZONE, wk.CAPACITY_TYPE)
        and _selects(c, _labels(pod))
        for c in spec.get("topologySpreadConstraints") or ()
    )


def affinity_beyond_hostname_prefer_no_schedule(document: Document, key: str) -> bool:
    """It has a required pod affinity or anti-affinity on a key other than the hostname,
    and some NodePool has a PreferNoSchedule taint it does not tolerate: Joiner, like
    kube-scheduler, lets the pod use that pool's domains (the taint is a preference);
    upstream has no domain for the term there, and the pod stays pending."""
    pod = _pod(document, key)
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    beyond = any(
        term.get("topologyKey") != wk.HOSTNAME
        for kind in ("podAffinity", "podAntiAffinity")
        for term in (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or ()
    )
    return beyond and _prefers_not_on_some_pool(document, pod)


def affinity_to_a_pool_of_one_domain(document: Document, key: str) -> bool:
    """It has, or is selected by, a pending pod's required pod affinity on a zone or
    capacity type that selects a pending pod, and some NodePool allows exactly one such
    domain of the offerings without naming it alone with In (NotIn the others, say):
    Joiner counts that pool's NodeClaims in their only domain, so the pod can join their
    pods; upstream counts a NodeClaim in a domain only when its requirement is a
    single-valued In, and finds no domain."""
    pods = list(document.get("pods") or ())
    pod = _pod(document, key)
    for owner in pods:
        for term in _required(owner, "podAffinity"):
            topology_key = term.get("topologyKey")
            if topology_key not in (wk.ZONE, wk.CAPACITY_TYPE):
                continue
            selected = [p for p in pods if _selects(term, _labels(p))]
            involved = owner is pod or any(p is pod for p in selected)
            if involved and selected and _pool_of_one_domain(document, topology_key):
                return True
    return False


def _pool_of_one_domain(document: Document, key: str) -> bool:
    """Whether some NodePool allows one value of ``key`` among the offerings' without a
    single-valued In on it."""
    offered = _domains(document, {}, key)
    for pool in document.get("nodePools") or ():
        template = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
        on_key = [r for r in template.get("requirements") or () if r["key"] == key]
        if any(r["operator"] == "In" and len(r.get("values") or ()) == 1 for r in on_key):
            continue
        if len({v for v in offered if all(_matches(r, v) for r in on_key)}) == 1:
            return True
    return False


def _prefers_not_on_some_pool(document: Document, pod: Mapping[str, Any]) -> bool:
    """Whether some NodePool has a PreferNoSchedule taint the pod does not tolerate."""
    return any(
        taint.get("effect") == "PreferNoSchedule" and not _tolerated(pod, taint)
        for pool in document.get("nodePools") or ()
        for taint in ((pool.get("spec") or {}).get("template") or {}).get("spec", {}).get("taints")
        or ()
    )


def required_anti_affinity_beyond_hostname(document: Document, key: str) -> bool:
    """It has, or is selected by a pending pod's, required pod anti-affinity on a key other
    than the hostname, or its required pod affinity (on any key) selects a pod with such
    an anti-affinity: Joiner pins each owner's NodeClaim to one free domain, so the next
    owner still finds one, only that domain is closed to the pods it selects, and a pod
    drawn to an owner can join it there; upstream leaves the NodeClaim open over every
    free domain and closes them all (one owner per batch, the selected pods find no
    domain, and the owner counts in no domain for the pods drawn to it)."""
    pod = _pod(document, key)
    labels = _labels(pod)
    owners = [p for p in document.get("pods") or () if _terms(p, "podAntiAffinity")]
    for owner in owners:
        selects = any(_selects(term, labels) for term in _terms(owner, "podAntiAffinity"))
        if owner is pod or selects:
            return True
    return any(
        _selects(term, _labels(owner)) for term in _required(pod, "podAffinity") for owner in owners
    )


def affinity_to_pods_outside_its_domains(document: Document, key: str) -> bool:
    """It has a required pod affinity that selects itself, and every pod the term selects
    that is already bound runs in a domain its own node selection (with its first
    required node-affinity term) excludes: kube-scheduler (and Joiner) require it to join
    those pods, so it cannot run, or only by a later term; upstream looks for them only
    in the pod's own domains, finds none and bootstraps the affinity there."""
    pod = _pod(document, key)
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("podAffinity") or {}
    for term in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        if not _selects(term, _labels(pod)):
            continue
        domains = [
            _node_labels(node).get(term.get("topologyKey"))
            for node in document.get("existingNodes") or ()
            for bound in node.get("pods") or ()
            if _selects(term, _labels(bound))
        ]
        if domains and not any(_admits_domain(pod, term["topologyKey"], d) for d in domains):
            return True
    return False


def _admits_domain(pod: Mapping[str, Any], key: str, value: str | None) -> bool:
    """Whether the pod's node selection, with its first required node-affinity term
    (the one both schedulers try first), allows ``value`` for the label ``key``."""
    spec = pod.get("spec") or {}
    wanted = (spec.get("nodeSelector") or {}).get(key)
    if wanted is not None and wanted != value:
        return False
    first = (_required_terms(spec) or [[]])[0]
    return all(_matches(e, value) for e in first if e["key"] == key)


def _terms(pod: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    """The pod's required terms of ``kind`` on a key other than the hostname."""
    return [term for term in _required(pod, kind) if term.get("topologyKey") != wk.HOSTNAME]


def _required(pod: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    """The pod's required terms of ``kind`` (podAffinity or podAntiAffinity)."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _selects(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    wanted = (term.get("labelSelector") or {}).get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def spread_within_max_skew(document: Document, key: str) -> bool:
    """It spreads with DoNotSchedule and maxSkew 2 or more over zones or capacity types:
    kube-scheduler (and Joiner) accept any domain within maxSkew, Joiner the emptiest
    where a type with room is offered; upstream takes the emptiest domain alone and, when
    no type with room is offered there, leaves the pod pending."""
    spec = _pod(document, key).get("spec") or {}
    return any(
        c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        and c.get("topologyKey") in (wk.ZONE, wk.CAPACITY_TYPE)
        and int(c.get("maxSkew", 1)) >= 2
        for c in spec.get("topologySpreadConstraints") or ()
    )


def daemonset_its_selection_excludes(document: Document, key: str) -> bool:
    """Its nodeSelector and required node affinity exclude the nodes some DaemonSet
    selects (the DaemonSet's own selection contradicts it on a key): Joiner counts a
    DaemonSet only on the NodeClaims it can run on, after the pod's requirements narrow
    them; upstream counts it by the NodePool's requirements alone, so it may find no type
    with room where Joiner does."""
    spec = _pod(document, key).get("spec") or {}
    pod_terms = [[*_selector(spec), *term] for term in _required_terms(spec) or [[]]]
    for daemonset in document.get("daemonSets") or ():
        template = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
        daemon_terms = [[*_selector(template), *term] for term in _required_terms(template) or [[]]]
        if any(e for t in daemon_terms for e in t) and all(
            _contradicts([*ours, *theirs]) for ours in pod_terms for theirs in daemon_terms
        ):
            return True
    return False


def exists_beside_not_in(document: Document, key: str) -> bool:
    """Its heaviest preferred node-affinity term and its node selection (nodeSelector
    and a required term) have, on one key, Exists on one side and NotIn on the other:
    upstream's requirements keep only the NotIn (which a node without the label meets),
    so it may keep the preference by a term, or a NodePool, that Joiner rules out."""
    spec = _pod(document, key).get("spec") or {}
    preferred = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )
    if not preferred:
        return False
    heaviest = max(preferred, key=lambda weighted: int(weighted.get("weight") or 0))
    wanted = (heaviest.get("preference") or {}).get("matchExpressions") or ()
    operators = {(e["key"], e["operator"]) for e in wanted}
    folding = {("Exists", "NotIn"), ("NotIn", "Exists")}
    return any(
        (e["key"], other) in operators and (e["operator"], other) in folding
        for term in _required_terms(spec) or [[]]
        for e in [*_selector(spec), *term]
        for other in ("Exists", "NotIn")
    )


def _selector(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A nodeSelector as In expressions."""
    return [
        {"key": k, "operator": "In", "values": [v]}
        for k, v in (spec.get("nodeSelector") or {}).items()
    ]


DOCUMENTED: dict[str, Explanation] = {
    "required anti-affinity beyond the hostname": required_anti_affinity_beyond_hostname,
    "spread honoring taints, PreferNoSchedule": spread_honoring_prefer_no_schedule,
    RELAXED_SPREAD: spread_after_tolerating_prefer_no_schedule,
    RELAXED_TERM_SPREAD: spread_after_relaxing_a_term,
    "pod affinity beyond the hostname, PreferNoSchedule": (
        affinity_beyond_hostname_prefer_no_schedule
    ),
    "pod affinity to a NodePool of one domain": affinity_to_a_pool_of_one_domain,
    "contradictory node selection": contradictory_node_selection,
    "pod affinity to pods outside its domains": affinity_to_pods_outside_its_domains,
    "spread with nodeAffinityPolicy Ignore": spread_ignoring_node_affinity,
    "daemonsets a pod's node selection excludes": daemonset_its_selection_excludes,
    "spread within maxSkew": spread_within_max_skew,
    "Exists beside NotIn": exists_beside_not_in,
}


def explained(document: Document, key: str) -> str | None:
    return next((name for name, applies in DOCUMENTED.items() if applies(document, key)), None)


def _pod(document: Document, key: str) -> Mapping[str, Any]:
    return next(p for p in document.get("pods") or () if pod_key(p) == key)


def _required_terms(spec: Mapping[str, Any]) -> list[list[Mapping[str, Any]]]:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return [list(t.get("matchExpressions") or ()) for t in required.get("nodeSelectorTerms") or ()]


def _contradicts(expressions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether no label value (or its absence) meets all expressions on some key."""
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    for expression in expressions:
        by_key.setdefault(expression["key"], []).append(expression)
    for on_key in by_key.values():
        named = {v for e in on_key for v in e.get("values") or ()}
        options = [None, "<another value>", *named]
        if not any(all(_matches(e, value) for e in on_key) for value in options):
            return True
    return False


# --- the checks ----------------------------------------------------------------------


def divergences(document: Document, runs: Sequence[Outcome], plan: Plan) -> list[Divergence]:
    placed = set(plan.existing) | {key for claim in plan.nodeclaims for key in claim.pods}
    found = list(_pending(document, runs, plan))
    found += _extra(document, runs, plan, placed)
    found += _cost(document, runs, plan, placed)
    for claim in plan.nodeclaims:
        found += [
            Divergence("nodeclaim", f"{claim.hostname}: {why}") for why in admits(document, claim)
        ]
    return found


def _pending(document: Document, runs: Sequence[Outcome], plan: Plan) -> Iterator[Divergence]:
    always = frozenset.intersection(*(validly_placed(document, run) for run in runs))
    for key in sorted(always & plan.unplaceable.keys()):
        if explained(document, key) is None and not displaced(document, runs, plan, key):
            why = plan.unplaceable[key]
            yield Divergence(
                "pending", f"{key} placed by every upstream run, Joiner: {why.message}"
            )


def displaced(document: Document, runs: Sequence[Outcome], plan: Plan, key: str) -> bool:
    """Whether every upstream run put the pod where a pod of a documented difference
    took the room on one side only (``_room_differs``): on the same existing node, or on
    a NodeClaim of the same NodePool (its room, or the pool's limits); or on a NodeClaim
    it shares with a pod of a documented difference, whose NodeClaim Joiner decides
    otherwise (its domain, say). The pod is then pending by that difference, not by one
    of its own."""
    for run in runs:
        home = run.homes.get(key)
        if home is None:
            return False
        places = _existing_nodes(document) if key in run.on_nodes else {home.get(wk.NODEPOOL)}
        if not (
            _room_differs(document, run, plan, places)
            or _beside_a_documented_pod(document, run, key)
        ):
            return False
    return True


def _existing_nodes(document: Document) -> set[str | None]:
    """The existing nodes' names: a pod that fits several of them takes room from each,
    so room a documented pod takes on one shifts pods between all of them."""
    return {node["name"] for node in document.get("existingNodes") or ()}


def _beside_a_documented_pod(document: Document, run: Outcome, key: str) -> bool:
    """Whether the run put the pod on a NodeClaim with a pod of a documented difference."""
    return any(
        explained(document, other) is not None
        for claim in run.claims
        if key in (claim.get("pods") or ())
        for other in claim["pods"]
        if other != key
    )


def _room_differs(document: Document, run: Outcome, plan: Plan, places: set[str | None]) -> bool:
    """Whether, on the existing nodes or a NodePool (``places``), Joiner's plan puts a
    pod of a documented difference that the run left pending, or the run puts there,
    where Joiner left it pending, one such pod or one where kube-scheduler refuses it
    (``validly_placed``): the room the other pods there found is not the same."""
    ours = _places(plan)
    theirs = _run_places(run)
    refused = run.placed - validly_placed(document, run)
    return any(
        explained(document, other) is not None or other in refused
        for place in places
        if place is not None
        for other in (ours.get(place, set()) - run.placed)
        | (theirs.get(place, set()) & plan.unplaceable.keys())
    )


def _places(plan: Plan) -> dict[str, set[str]]:
    """Joiner's pods per existing node and per NodePool of their NodeClaim."""
    places: dict[str, set[str]] = {}
    for other, node in plan.existing.items():
        places.setdefault(node, set()).add(other)
    for claim in plan.nodeclaims:
        places.setdefault(claim.nodepool, set()).update(claim.pods)
    return places


def _run_places(run: Outcome) -> dict[str, set[str]]:
    """The run's pods per existing node and per NodePool of their NodeClaim."""
    places: dict[str, set[str]] = {}
    for other in run.on_nodes:
        places.setdefault(run.homes[other][wk.HOSTNAME], set()).add(other)
    for claim in run.claims:
        places.setdefault(claim["nodePool"], set()).update(claim.get("pods") or ())
    return places


def _placed_on_room_a_documented_pod_took(
    document: Document, runs: Sequence[Outcome], plan: Plan, key: str
) -> bool:
    """Whether Joiner put the pod where, in every upstream run (none placed it), a pod
    of a documented difference took the room on one side only (``_room_differs``)."""
    places = (
        _existing_nodes(document)
        if key in plan.existing
        else {next((c.nodepool for c in plan.nodeclaims if key in c.pods), None)}
    )
    return all(_room_differs(document, run, plan, places) for run in runs)


def _extra(
    document: Document, runs: Sequence[Outcome], plan: Plan, placed: set[str]
) -> list[Divergence]:
    never = placed - frozenset.union(*(run.placed for run in runs))
    found = []
    for key in sorted(never):
        if (
            explained(document, key) is None
            and not _placed_on_room_a_documented_pod_took(document, runs, plan, key)
            and not limits_reserved_as_candidates_narrow(document, plan, key)
        ):
            errors = {run.errors.get(key) for run in runs}
            found.append(Divergence("placed", f"{key} placed by no upstream run ({errors})"))
    return found


def limits_reserved_as_candidates_narrow(document: Document, plan: Plan, key: str) -> bool:
    """Whether Joiner put the pod on a NodeClaim of a NodePool with limits that its
    NodeClaims there would exceed if each reserved the largest capacity of any type the
    pool can launch, as upstream reserves when it opens a NodeClaim. Joiner reserves the
    largest of a NodeClaim's candidates as they narrow, so within the same limits it
    opens NodeClaims upstream does not (docs/compatibility.md, "NodePool limits")."""
    claim = next((c for c in plan.nodeclaims if key in c.pods), None)
    if claim is None:
        return False
    pool = next(p for p in document["nodePools"] if p["metadata"]["name"] == claim.nodepool)
    limits = res.parse_resource_list((pool.get("spec") or {}).get("limits"))
    limits.pop(res.NODES, None)
    template = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    requirements = template.get("requirements") or ()
    launchable = [
        instance_type(raw).capacity
        for raw in document["instanceTypes"]
        if any(_possible_nodes(document, claim.nodepool, requirements, [raw["name"]]))
    ]
    opened = sum(1 for c in plan.nodeclaims if c.nodepool == claim.nodepool)
    return any(
        opened * max((capacity.get(name, 0) for capacity in launchable), default=0) > limit
        for name, limit in limits.items()
    )


def _cost(
    document: Document, runs: Sequence[Outcome], plan: Plan, placed: set[str]
) -> list[Divergence]:
    """Against the upstream runs that placed every pod Joiner placed where
    kube-scheduler would bind it (``validly_placed``) and kept every preference Joiner
    kept (see ``broken_preferences``); not when a pod either side
    placed is a case of a documented difference (it changes which pods are placed, or
    which domains a spread must use, so the plans are not the same problem)."""
    homes = plan_homes(plan)
    kept = broken_preferences(document, homes)
    comparable = [
        run
        for run in runs
        if validly_placed(document, run) >= placed
        and broken_preferences(document, run.homes) <= kept
        and not spread_domain_by_chance(document, run, plan)
        and not spread_skewed_after_relaxing(document, run)
    ]
    differing = {key for run in comparable for key in run.placed - placed}
    if not comparable or any(
        explained(document, key) not in (None, RELAXED_SPREAD, RELAXED_TERM_SPREAD)
        for key in placed | differing
    ):
        return []
    cheapest = min(run.cost for run in comparable)
    found = []
    if plan.price > cheapest * (1 + COST_TOLERANCE) + 1e-9:
        found.append(
            Divergence("cost", f"Joiner {plan.price:.4f}/h, upstream's cheapest {cheapest:.4f}/h")
        )
    fewest = min(comparable, key=lambda run: (run.nodeclaims, run.cost))
    if len(plan.nodeclaims) > fewest.nodeclaims and plan.price >= fewest.cost - 1e-9:
        found.append(
            Divergence(
                "nodeclaims",
                f"Joiner {len(plan.nodeclaims)} at {plan.price:.4f}/h, upstream "
                f"{fewest.nodeclaims} at {fewest.cost:.4f}/h",
            )
        )
    return found


def spread_domain_by_chance(document: Document, run: Outcome, plan: Plan) -> bool:
    """Whether the run put a pod with a spread over zones or capacity types (or a pod
    affinity over them that selects it) in another domain than Joiner did, or left its
    NodeClaim's domain open where Joiner picked one, on a NodeClaim that either it shares with pods
    Joiner placed apart from it, or holds every pod of Joiner's NodeClaim for that pod
    and costs no more. Among equally counted domains upstream picks at random, Joiner the
    cheapest for the pods at hand; a later pod that can only use some other domain may
    then share upstream's NodeClaim, and pods that join the NodeClaim later may make
    another domain the cheaper one for it: upstream's pick is then cheaper by chance
    (docs/compatibility.md, "Spread domains by price"). Such a run is no baseline for
    Joiner's cost."""
    homes = plan_homes(plan)
    ours_by_host = {claim.hostname: claim for claim in plan.nodeclaims}
    spreads = {pod_key(p) for p in document.get("pods") or () if _spreads_over_domains(p)}
    for claim in run.claims:
        members = set(claim.get("pods") or ())
        for key in members & spreads:
            ours, theirs = homes.get(key), run.homes[key]
            if ours is None:
                continue
            # another domain, or one upstream left open where Joiner picked one
            moved = any(theirs.get(k) != ours.get(k) for k in (wk.ZONE, wk.CAPACITY_TYPE))
            apart = any(
                homes.get(m, {}).get(wk.HOSTNAME) != ours[wk.HOSTNAME] for m in members - {key}
            )
            mine = ours_by_host.get(ours[wk.HOSTNAME])
            same_or_cheaper = (
                mine is not None
                and members >= set(mine.pods)
                and float(claim["cheapest"]["price"]) <= mine.price + 1e-9
            )
            if moved and (apart or same_or_cheaper):
                return True
    return False


def _spreads_over_domains(pod: Mapping[str, Any]) -> bool:
    """Whether the pod spreads over zones or capacity types (a ScheduleAnyway spread
    picks its domain as a DoNotSchedule one does, as long as it is kept), or has a pod
    affinity over them that selects itself (its first pod picks the domain the others
    follow: Joiner by price, upstream at random)."""
    spec = pod.get("spec") or {}
    if any(
        c.get("topologyKey") in (wk.ZONE, wk.CAPACITY_TYPE)
        for c in spec.get("topologySpreadConstraints") or ()
    ):
        return True
    affinity = (spec.get("affinity") or {}).get("podAffinity") or {}
    terms = [
        *(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()),
        *(
            weighted.get("podAffinityTerm") or {}
            for weighted in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        ),
    ]
    return any(
        term.get("topologyKey") in (wk.ZONE, wk.CAPACITY_TYPE) and _selects(term, _labels(pod))
        for term in terms
    )


def spread_skewed_after_relaxing(document: Document, run: Outcome) -> bool:
    """Whether the run put a pod that upstream may relax to tolerate a PreferNoSchedule
    taint (``spread_after_tolerating_prefer_no_schedule``) or to a later node-affinity
    term (``spread_after_relaxing_a_term``) where one of its DoNotSchedule spreads
    exceeds maxSkew, counting every pod the run placed: the relaxed pod no longer
    counted the pods placed before it (docs/compatibility.md). Such a run is no baseline
    for Joiner's cost; a cheaper run without such a placement still is."""
    homes = _with_existing_labels(document, run.homes)
    for pod in document.get("pods") or ():
        key = pod_key(pod)
        if key not in run.homes or not (
            spread_after_tolerating_prefer_no_schedule(document, key)
            or spread_after_relaxing_a_term(document, key)
        ):
            continue
        spreads = (pod.get("spec") or {}).get("topologySpreadConstraints") or ()
        if any(
            c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
            and _skewed(document, homes, pod, c)
            for c in spreads
        ):
            return True
    return False


# --- preferences a plan breaks --------------------------------------------------------
#
# Upstream picks among equally good domains at random (Go map order); a pick no instance
# type offers fails the pod, which then relaxes a preference and may land somewhere
# cheaper. Joiner picks the cheapest domain that keeps the preference. A run that broke a
# preference Joiner's plan keeps is not a baseline for Joiner's cost (docs/compatibility.md,
# "preferences upstream drops by chance").

Homes = Mapping[str, Mapping[str, str]]  # pod -> labels its node is known to have


def plan_homes(plan: Plan) -> dict[str, Mapping[str, str]]:
    homes: dict[str, Mapping[str, str]] = {
        key: {wk.HOSTNAME: node} for key, node in plan.existing.items()
    }
    for claim in plan.nodeclaims:
        labels = {wk.HOSTNAME: claim.hostname, **pinned_labels(claim.requirements)}
        homes.update(dict.fromkeys(claim.pods, labels))
    return homes


def broken_preferences(document: Document, homes: Homes) -> set[tuple[str, str]]:
    """(pod, preference) for every ScheduleAnyway spread, preferred pod (anti-)affinity
    and preferred node-affinity term the placement does not keep, every required
    node-affinity term before the first its node may meet, and for a pod on a NodeClaim
    every NodePool before its own in Karpenter's order (Karpenter tries the ORed terms
    and the pools in order and moves on only when one fails), judged on the labels and
    domains it is known to have (all of an existing node's)."""
    nodes = _existing_node_labels(document)
    ranks = _nodepool_ranks(document)
    homes = _with_existing_labels(document, homes)
    broken = set()
    for pod in document.get("pods") or ():
        key = pod_key(pod)
        if key not in homes:
            continue
        spec = pod.get("spec") or {}
        labels = nodes.get(homes[key][wk.HOSTNAME], homes[key])
        for i in range(_first_term_kept(spec, labels)):
            broken.add((key, f"node affinity term {i}"))
        complete = labels is not homes[key]
        for i in _preferred_node_terms_broken(spec, labels, complete):
            broken.add((key, f"preferred node affinity {i}"))
        if not complete:  # a NodeClaim: its pool was chosen in Karpenter's order
            for i in range(ranks.get(labels.get(wk.NODEPOOL, ""), 0)):
                broken.add((key, f"nodepool order {i}"))
        for i, c in enumerate(spec.get("topologySpreadConstraints") or ()):
            if c.get("whenUnsatisfiable") == "ScheduleAnyway" and _skewed(document, homes, pod, c):
                broken.add((key, f"spread {i}"))
        affinity = spec.get("affinity") or {}
        for kind in ("podAffinity", "podAntiAffinity"):
            preferred = (affinity.get(kind) or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution"
            )
            for i, weighted in enumerate(preferred or ()):
                term = weighted.get("podAffinityTerm") or {}
                if not _keeps_affinity(document, homes, pod, term, kind == "podAffinity"):
                    broken.add((key, f"{kind} {i}"))
    return broken


def _nodepool_ranks(document: Document) -> dict[str, int]:
    """Each NodePool's place in Karpenter's order: weight descending, then name
    descending (``OrderByWeight``)."""
    pools = [
        (-int((pool.get("spec") or {}).get("weight") or 0), pool["metadata"]["name"])
        for pool in document.get("nodePools") or ()
    ]
    by_name = sorted(pools, key=lambda p: p[1], reverse=True)
    ordered = sorted(by_name, key=lambda p: p[0])
    return {name: rank for rank, (_, name) in enumerate(ordered)}


def _existing_node_labels(document: Document) -> dict[str, Mapping[str, str]]:
    """Every label of each existing node, by name."""
    types = {raw["name"]: instance_type(raw) for raw in document["instanceTypes"]}
    nodes = [existing_node(raw, types) for raw in document.get("existingNodes") or ()]
    return {node.name: node.labels for node in nodes}


def _preferred_node_terms_broken(
    spec: Mapping[str, Any], labels: Mapping[str, str], complete: bool
) -> list[int]:
    """The preferred node-affinity terms the node's labels contradict: any expression
    when the labels are all the node's, else only those on a label known."""
    preferred = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )
    return [
        index
        for index, weighted in enumerate(preferred or ())
        if any(
            (complete or e["key"] in labels) and not _matches(e, labels.get(e["key"]))
            for e in (weighted.get("preference") or {}).get("matchExpressions") or ()
        )
    ]


def _first_term_kept(spec: Mapping[str, Any], labels: Mapping[str, str]) -> int:
    """The first required node-affinity term no known label of the node contradicts."""
    terms = _required_terms(spec)
    for index, term in enumerate(terms):
        if all(_matches(e, labels[e["key"]]) for e in term if e["key"] in labels):
            return index
    return 0


def _with_existing_labels(document: Document, homes: Homes) -> dict[str, Mapping[str, str]]:
    """Homes, with the labels of existing nodes, and the existing nodes' bound pods."""
    nodes = {n["name"]: n for n in document.get("existingNodes") or ()}
    out: dict[str, Mapping[str, str]] = {}
    for key, labels in homes.items():
        node = nodes.get(labels[wk.HOSTNAME])
        out[key] = _node_labels(node) if node is not None else labels
    for node in nodes.values():
        for bound in node.get("pods") or ():
            out[pod_key(bound)] = _node_labels(node)
    return out


def _node_labels(node: Mapping[str, Any]) -> dict[str, str]:
    return {
        wk.HOSTNAME: node["name"],
        wk.ZONE: node["zone"],
        wk.CAPACITY_TYPE: node["capacityType"],
    }


def _selected(document: Document, homes: Homes, selector: Mapping[str, Any]) -> list[str]:
    """Placed (or bound) pods whose labels match a matchLabels selector."""
    term = {"labelSelector": selector}
    pods = [*(document.get("pods") or ())]
    pods += [b for n in document.get("existingNodes") or () for b in n.get("pods") or ()]
    return [pod_key(p) for p in pods if pod_key(p) in homes and _selects(term, _labels(p))]


def _skewed(
    document: Document, homes: Homes, pod: Mapping[str, Any], constraint: Mapping[str, Any]
) -> bool:
    key = constraint["topologyKey"]
    counts: dict[str, int] = {}
    for other in _selected(document, homes, constraint.get("labelSelector") or {}):
        domain = homes[other].get(key)
        if domain is not None:
            counts[domain] = counts.get(domain, 0) + 1
    if not counts:
        return False
    floor = 0
    if key != wk.HOSTNAME and not _short_of_min_domains(document, pod, constraint):
        floor = min(counts.get(d, 0) for d in _domains(document, pod, key))
    return max(counts.values()) - floor > int(constraint.get("maxSkew", 1))


def _short_of_min_domains(
    document: Document, pod: Mapping[str, Any], constraint: Mapping[str, Any]
) -> bool:
    """Whether a DoNotSchedule spread's minDomains exceeds the domains the pod may use at
    all: kube-scheduler then takes the global minimum as 0, so no domain may hold more
    than maxSkew of its pods."""
    return constraint.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule" and int(
        constraint.get("minDomains") or 1
    ) > len(_domains(document, pod, constraint["topologyKey"]))


def _domains(document: Document, pod: Mapping[str, Any], key: str) -> set[str]:
    """The zones or capacity types some available offering has that the pod may use."""
    spec = pod.get("spec") or {}
    wanted = (spec.get("nodeSelector") or {}).get(key)
    values = {
        o.zone if key == wk.ZONE else o.capacity_type
        for raw in document["instanceTypes"]
        for o in instance_type(raw).available_offerings()
    }
    return {v for v in values if wanted is None or v == wanted}


def _keeps_affinity(
    document: Document,
    homes: Homes,
    pod: Mapping[str, Any],
    term: Mapping[str, Any],
    affine: bool,
) -> bool:
    key, own = term.get("topologyKey"), pod_key(pod)
    mine = homes[own].get(key)
    if mine is None:
        return True  # its domain is not decided: nothing to judge
    others = [o for o in _selected(document, homes, term.get("labelSelector") or {}) if o != own]
    domains = {homes[o].get(key) for o in others}
    if affine:
        return not others or mine in domains or None in domains
    return mine not in domains


# --- does a NodeClaim admit its pods? (independent of Joiner's requirements code) ------


def validly_placed(document: Document, run: Outcome) -> frozenset[str]:
    """The pods an upstream run placed where their nodeSelector and required node
    affinity hold (upstream sometimes places a pod where they do not, which
    kube-scheduler would then refuse: docs/compatibility.md)."""
    pods = {pod_key(p): p for p in document.get("pods") or ()}
    valid = set()
    for claim in run.claims:
        nodes = list(
            _possible_nodes(
                document, claim["nodePool"], claim["requirements"], claim["instanceTypes"]
            )
        )
        valid |= {k for k in claim["pods"] if nodes and all(_pod_admits(pods[k], n) for n in nodes)}
    types = {raw["name"]: instance_type(raw) for raw in document["instanceTypes"]}
    existing = {n["name"]: n for n in document.get("existingNodes") or ()}
    for key in run.on_nodes:
        node = existing_node(existing[run.homes[key][wk.HOSTNAME]], types)
        if _pod_admits(pods[key], node.labels):
            valid.add(key)
    homes = _with_existing_labels(document, run.homes)
    return frozenset(k for k in valid if not _overcrowds_its_node(document, homes, pods[k]))


def _overcrowds_its_node(document: Document, homes: Homes, pod: Mapping[str, Any]) -> bool:
    """Whether a domain holds more pods of one of the pod's DoNotSchedule spreads than
    maxSkew allows, where kube-scheduler's global minimum is 0 whatever the other domains
    hold: a hostname spread (a new node is an empty domain), or a spread whose minDomains
    exceeds the domains the pod may use. Upstream restarts a spread's counts when a pod
    relaxes a required node-affinity term, and then overcrowds (docs/compatibility.md)."""
    spec = pod.get("spec") or {}
    return any(
        (c.get("topologyKey") == wk.HOSTNAME or _short_of_min_domains(document, pod, c))
        and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        and _skewed(document, homes, pod, c)
        for c in spec.get("topologySpreadConstraints") or ()
    )


def admits(document: Document, claim: NodeClaimPlan) -> list[str]:
    """What is wrong with the NodeClaim for its pods: some node it may launch as (a
    candidate type in an allowed offering, with any allowed value of its other labels)
    that a pod's nodeSelector or required node affinity rejects, an untolerated taint,
    candidates without room for the pods' requests, or no candidate at all."""
    pods = {pod_key(p): p for p in document.get("pods") or ()}
    members = [pods[key] for key in claim.pods]
    problems = [
        f"{pod_key(pod)} does not tolerate {taint}"
        for pod in members
        for taint in claim.taints
        if taint.get("effect") != "PreferNoSchedule" and not _tolerated(pod, taint)
    ]
    nodes = list(
        _possible_nodes(document, claim.nodepool, claim.requirements, claim.instance_types)
    )
    if not nodes:
        problems.append("no candidate type has an offering its requirements allow")
    for pod in members:
        for labels in nodes:
            if not _pod_admits(pod, labels):
                problems.append(f"{pod_key(pod)} rejects a node labelled {labels}")
                break
    requests = res.sum_lists(_requests(pod) for pod in members)
    if not res.fits(requests, claim.requests):
        problems.append(f"requests {claim.requests} below its pods' {requests}")
    types = {raw["name"]: instance_type(raw) for raw in document["instanceTypes"]}
    for name in claim.instance_types:
        if not res.fits(claim.requests, types[name].allocatable):
            problems.append(f"candidate {name} has no room for {claim.requests}")
    return problems


def _possible_nodes(
    document: Document,
    nodepool: str,
    requirements: Sequence[Mapping[str, Any]],
    instance_types: Sequence[str],
) -> Iterator[dict[str, str]]:
    """The labels of every node a NodeClaim with these requirements and candidate types
    may become (custom keys it does not pin take each allowed value)."""
    allowed = {r["key"]: r for r in requirements}
    types = {raw["name"]: instance_type(raw) for raw in document["instanceTypes"]}
    for name in instance_types:
        it = types[name]
        base = {**type_labels(it), wk.NODEPOOL: nodepool}
        custom = {
            key: _label_options(requirement)
            for key, requirement in allowed.items()
            if key not in base and key not in wk.WELL_KNOWN_LABELS
        }
        for offering in it.available_offerings():
            labels = {**base, wk.ZONE: offering.zone, wk.CAPACITY_TYPE: offering.capacity_type}
            if not all(_matches(r, labels.get(k)) for k, r in allowed.items() if k in labels):
                continue
            for values in itertools.product(*custom.values()):
                node = dict(labels)
                node.update({k: v for k, v in zip(custom, values, strict=True) if v is not None})
                yield node


def _label_options(requirement: Mapping[str, Any]) -> list[str | None]:
    operator = requirement["operator"]
    if operator == "In":
        return list(requirement["values"])
    if operator in ("NotIn", "DoesNotExist"):
        return [None]
    return ["<any value>"]


def _pod_admits(pod: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    spec = pod.get("spec") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    return any(
        all(_matches(e, labels.get(e["key"])) for e in term.get("matchExpressions") or ())
        for term in required.get("nodeSelectorTerms") or ()
    )


def _matches(expression: Mapping[str, Any], value: str | None) -> bool:
    operator, values = expression["operator"], expression.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and value.lstrip("-").isdigit():
        return int(value) > int(values[0]) if operator == "Gt" else int(value) < int(values[0])
    return False


def _tolerated(pod: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    for toleration in (pod.get("spec") or {}).get("tolerations") or ():
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists" and not toleration.get("key"):
            return True
        if toleration.get("key") != taint.get("key"):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def _requests(pod: Mapping[str, Any]) -> res.ResourceList:
    total = res.sum_lists(
        res.parse_resource_list((c.get("resources") or {}).get("requests"))
        for c in (pod.get("spec") or {}).get("containers") or ()
    )
    return res.add(total, {res.PODS: 1000})


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"
