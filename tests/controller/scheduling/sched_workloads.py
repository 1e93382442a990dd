"""Random workloads within what the Karpenter oracle models, as its input documents.

A workload is written once, as the oracle's JSON document (``joiner.testing.workload``
reads the same document into Joiner's ``solve`` inputs). It draws: instance types with
their offerings, overhead, extra resources and labels; NodePools with requirements
(incl. minValues), template labels, taints, weights and limits; apps of identical pod
replicas with requests, node selectors, required and preferred node affinity, pod
(anti-)affinity, topology spread and tolerations; DaemonSets; existing nodes with bound
pods. Vocabulary stays small so that constraints meet: three zones, two capacity types,
one custom NodePool label (``example.com/team``), one custom instance-type label
(``example.com/family``), one extended resource (``example.com/accel``). The fake's own
labels (``size``, ``special``, ``integer``) are never selected: upstream registers them as
well-known for its tests only.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from joiner.api import labels as wk

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
CAPACITY_TYPES = (wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND)
TEAM = "example.com/team"
FAMILY = "example.com/family"
ACCEL = "example.com/accel"
TAINT_KEY = "dedicated"
CREATED = "2026-01-01T00:00:00Z"
CPUS = ("100m", "250m", "500m", "1", "1500m", "2", "3", "5")
MEMORIES = ("128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "6Gi")
HUGE_MEMORY_LIMIT = "10000000Gi"  # what upstream's own benchmark sets

Document = dict[str, Any]


# --- instance types ------------------------------------------------------------------


@st.composite
def instance_types(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 6))
    return [draw(_instance_type(f"t{i}")) for i in range(count)]


@st.composite
def _instance_type(draw: st.DrawFn, name: str) -> dict[str, Any]:
    cpu = draw(st.sampled_from((1, 2, 4, 8, 16)))
    memory_gi = cpu * draw(st.sampled_from((1, 2, 4, 8)))
    raw: dict[str, Any] = {"name": name, "cpu": str(cpu), "memory": f"{memory_gi}Gi", "os": "linux"}
    if draw(st.integers(0, 9)) == 0:
        raw["pods"] = draw(st.integers(2, 8))
    if draw(st.integers(0, 4)) == 0:
        raw["arch"] = "arm64"
    overhead = draw(st.integers(0, 6))
    if overhead == 0:
        raw["overhead"] = {}
    elif overhead == 1:
        raw["overhead"] = {"cpu": "300m", "memory": "500Mi"}
    if draw(st.integers(0, 9)) == 0:
        raw["resources"] = {ACCEL: draw(st.sampled_from(("1", "2")))}
    if draw(st.integers(0, 2)) == 0:
        raw["labels"] = {FAMILY: draw(st.sampled_from(("f1", "f2")))}
    if draw(st.booleans()):
        raw["offerings"] = draw(_offerings(cpu, memory_gi))
    return raw


@st.composite
def _offerings(draw: st.DrawFn, cpu: int, memory_gi: int) -> list[dict[str, Any]]:
    base = 0.1 * cpu + 0.1 * memory_gi * 2**30 / 1e9
    chosen = draw(
        st.lists(
            st.tuples(st.sampled_from(ZONES), st.sampled_from(CAPACITY_TYPES)),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    offerings = []
    for zone, capacity_type in chosen:
        factor = draw(st.sampled_from((0.8, 1.0, 1.25)))
        if capacity_type == wk.CAPACITY_TYPE_SPOT:
            factor *= 0.5
        offering = {"zone": zone, "capacityType": capacity_type, "price": round(base * factor, 4)}
        if draw(st.integers(0, 7)) == 0:
            offering["available"] = False
        offerings.append(offering)
    return offerings


# --- node pools ----------------------------------------------------------------------


@st.composite
def nodepools(draw: st.DrawFn, type_names: list[str]) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 3))
    return [draw(_nodepool(name, type_names)) for name in ("np-a", "np-b", "np-c")[:count]]


@st.composite
def _nodepool(draw: st.DrawFn, name: str, type_names: list[str]) -> dict[str, Any]:
    requirements = draw(
        st.lists(_pool_requirement(type_names), max_size=3, unique_by=lambda r: r["key"])
    )
    template: dict[str, Any] = {
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.test.sh",
                "kind": "TestNodeClass",
                "name": "default",
            },
            "requirements": requirements,
        }
    }
    if draw(st.integers(0, 4)) == 0 and all(r["key"] != TEAM for r in requirements):
        template["metadata"] = {"labels": {TEAM: draw(st.sampled_from(("a", "b")))}}
    if draw(st.integers(0, 3)) == 0:
        effect = draw(st.sampled_from(("NoSchedule", "NoSchedule", "PreferNoSchedule")))
        template["spec"]["taints"] = [{"key": TAINT_KEY, "value": name, "effect": effect}]
    spec: dict[str, Any] = {"template": template}
    weight = draw(st.sampled_from((None, None, 1, 2, 10)))
    if weight is not None:
        spec["weight"] = weight
    limits = draw(
        st.sampled_from(
            (
                None,
                None,
                None,
                {"cpu": "8"},
                {"cpu": "20"},
                {"memory": "32Gi"},
                {"memory": HUGE_MEMORY_LIMIT},
                {"cpu": "1000", "memory": HUGE_MEMORY_LIMIT},
            )
        )
    )
    if limits is not None:
        spec["limits"] = limits
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
    }


@st.composite
def _pool_requirement(draw: st.DrawFn, type_names: list[str]) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(("capacity", "zone", "arch", "types", "minvalues", "team", "family"))
    )
    if kind == "capacity":
        values = draw(st.lists(st.sampled_from(CAPACITY_TYPES), min_size=1, unique=True))
        return {"key": wk.CAPACITY_TYPE, "operator": "In", "values": sorted(values)}
    if kind == "zone":
        operator = draw(st.sampled_from(("In", "NotIn")))
        values = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True))
        return {"key": wk.ZONE, "operator": operator, "values": sorted(values)}
    if kind == "arch":
        return {"key": wk.ARCH, "operator": "In", "values": ["amd64"]}
    if kind == "types":
        operator = draw(st.sampled_from(("In", "NotIn")))
        values = draw(st.lists(st.sampled_from(type_names), min_size=1, unique=True))
        return {"key": wk.INSTANCE_TYPE, "operator": operator, "values": sorted(values)}
    if kind == "minvalues":
        key = draw(st.sampled_from((wk.INSTANCE_TYPE, wk.INSTANCE_TYPE, FAMILY)))
        return {"key": key, "operator": "Exists", "minValues": draw(st.integers(2, 3))}
    if kind == "team":
        values = draw(st.lists(st.sampled_from(("a", "b")), min_size=1, unique=True))
        return {"key": TEAM, "operator": "In", "values": sorted(values)}
    return {"key": FAMILY, "operator": draw(st.sampled_from(("In", "Exists"))), "values": ["f1"]}


# --- pods ----------------------------------------------------------------------------


@st.composite
def apps(draw: st.DrawFn, type_names: list[str]) -> list[dict[str, Any]]:
    """Pods of 1-5 apps, each 1-5 identical replicas."""
    count = draw(st.integers(1, 5))
    names = [f"app{i}" for i in range(count)]
    pods: list[dict[str, Any]] = []
    for name in names:
        template = draw(_pod_spec(name, names, type_names))
        for replica in range(draw(st.integers(1, 5))):
            pods.append(_pod(f"{name}-{replica}", {"app": name}, template))
    return pods


def _pod(name: str, labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": dict(labels),
            "creationTimestamp": CREATED,
        },
        "spec": spec,
    }


def _container(cpu: str, memory: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": "main",
        "resources": {"requests": {"cpu": cpu, "memory": memory, **(extra or {})}},
    }


@st.composite
def _pod_spec(draw: st.DrawFn, app: str, apps_: list[str], type_names: list[str]) -> dict[str, Any]:
    extra = {ACCEL: "1"} if draw(st.integers(0, 9)) == 0 else None
    spec: dict[str, Any] = {
        "containers": [
            _container(draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMORIES)), extra)
        ]
    }
    if draw(st.integers(0, 3)) == 0:
        spec["nodeSelector"] = draw(_node_selector(type_names))
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 4)) == 0:
        terms = draw(st.lists(_node_selector_term(type_names), min_size=1, max_size=2))
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    if draw(st.integers(0, 5)) == 0:
        preferred = [
            {
                "weight": draw(st.integers(1, 100)),
                "preference": draw(_node_selector_term(type_names)),
            }
        ]
        affinity.setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"
        ] = preferred
    # One kind of topology constraint per app: upstream's outcome on combinations (self
    # affinity with a spread, say) varies from run to run too much to compare with.
    topology = draw(st.sampled_from(("none", "none", "none", "spread", "affinity", "anti")))
    if topology == "affinity":
        affinity["podAffinity"] = draw(_pod_affinity(app, apps_))
    elif topology == "anti":
        affinity["podAntiAffinity"] = draw(_pod_affinity(app, apps_))
    elif topology == "spread":
        spec["topologySpreadConstraints"] = draw(
            st.lists(_spread(app), min_size=1, max_size=2, unique_by=lambda c: c["topologyKey"])
        )
    if affinity:
        spec["affinity"] = affinity
    if draw(st.integers(0, 3)) == 0:
        spec["tolerations"] = [draw(_toleration())]
    return spec


@st.composite
def _node_selector(draw: st.DrawFn, type_names: list[str]) -> dict[str, str]:
    key = draw(
        st.sampled_from((wk.ZONE, wk.CAPACITY_TYPE, wk.ARCH, TEAM, wk.INSTANCE_TYPE, FAMILY))
    )
    value = {
        wk.ZONE: st.sampled_from(ZONES),
        wk.CAPACITY_TYPE: st.sampled_from(CAPACITY_TYPES),
        wk.ARCH: st.sampled_from(("amd64", "arm64")),
        TEAM: st.sampled_from(("a", "b")),
        wk.INSTANCE_TYPE: st.sampled_from(type_names),
        FAMILY: st.sampled_from(("f1", "f2")),
    }[key]
    return {key: draw(value)}


@st.composite
def _node_selector_term(draw: st.DrawFn, type_names: list[str]) -> dict[str, Any]:
    expressions = draw(
        st.lists(_expression(type_names), min_size=1, max_size=2, unique_by=lambda e: e["key"])
    )
    return {"matchExpressions": expressions}


@st.composite
def _expression(draw: st.DrawFn, type_names: list[str]) -> dict[str, Any]:
    key = draw(st.sampled_from((wk.ZONE, wk.CAPACITY_TYPE, wk.INSTANCE_TYPE, TEAM, FAMILY)))
    if key in (TEAM, FAMILY):
        operator = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
    else:
        operator = draw(st.sampled_from(("In", "In", "NotIn")))
    if operator in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": operator}
    pool = {
        wk.ZONE: ZONES,
        wk.CAPACITY_TYPE: CAPACITY_TYPES,
        wk.INSTANCE_TYPE: tuple(type_names),
        TEAM: ("a", "b"),
        FAMILY: ("f1", "f2"),
    }[key]
    values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
    return {"key": key, "operator": operator, "values": sorted(values)}


@st.composite
def _pod_affinity(draw: st.DrawFn, app: str, apps_: list[str]) -> dict[str, Any]:
    target = draw(st.sampled_from([app, app, *apps_]))
    term = {
        "labelSelector": {"matchLabels": {"app": target}},
        "topologyKey": draw(st.sampled_from((wk.HOSTNAME, wk.ZONE))),
    }
    if draw(st.booleans()):
        return {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    weighted = {"weight": draw(st.integers(1, 100)), "podAffinityTerm": term}
    return {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}


@st.composite
def _spread(draw: st.DrawFn, app: str) -> dict[str, Any]:
    """A spread of the app's own pods (as deployments spread): upstream counts another
    app's pods only where their NodeClaim's domain was decided before, so its outcome on
    spreads over other apps depends on the order of its random domain choices."""
    constraint: dict[str, Any] = {
        "maxSkew": draw(st.sampled_from((1, 1, 2))),
        "topologyKey": draw(st.sampled_from((wk.ZONE, wk.ZONE, wk.HOSTNAME, wk.CAPACITY_TYPE))),
        "whenUnsatisfiable": draw(
            st.sampled_from(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"))
        ),
        "labelSelector": {"matchLabels": {"app": app}},
    }
    if constraint["whenUnsatisfiable"] == "DoNotSchedule" and draw(st.integers(0, 4)) == 0:
        constraint["minDomains"] = draw(st.integers(2, 3))
    if draw(st.integers(0, 5)) == 0:
        constraint["nodeTaintsPolicy"] = "Honor"
    if draw(st.integers(0, 5)) == 0:
        constraint["nodeAffinityPolicy"] = "Ignore"
    return constraint


@st.composite
def _toleration(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return {"operator": "Exists"}
    if kind == 1:
        return {"key": TAINT_KEY, "operator": "Exists"}
    return {"key": TAINT_KEY, "operator": "Equal", "value": draw(st.sampled_from(("np-a", "np-b")))}


# --- daemonsets and existing nodes ---------------------------------------------------


@st.composite
def daemonsets(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 2))):
        spec: dict[str, Any] = {
            "containers": [_container(draw(st.sampled_from(("100m", "250m", "500m"))), "128Mi")]
        }
        if draw(st.integers(0, 2)) == 0:
            spec["nodeSelector"] = {wk.CAPACITY_TYPE: draw(st.sampled_from(CAPACITY_TYPES))}
        if draw(st.booleans()):
            spec["tolerations"] = [{"operator": "Exists"}]
        labels = {"app": f"ds{i}"}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": f"ds{i}", "namespace": "kube-system"},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": spec},
                },
            }
        )
    return out


@st.composite
def existing_nodes(
    draw: st.DrawFn, types: list[dict[str, Any]], pools: list[str], app_names: list[str]
) -> list[dict[str, Any]]:
    nodes = []
    for i in range(draw(st.integers(0, 3))):
        it = draw(st.sampled_from(types))
        zone, capacity_type = draw(st.sampled_from(_offered(it)))
        node: dict[str, Any] = {
            "name": f"node-{i}",
            "instanceType": it["name"],
            "zone": zone,
            "capacityType": capacity_type,
        }
        if draw(st.booleans()):
            node["nodePool"] = draw(st.sampled_from(pools))
        if draw(st.integers(0, 4)) == 0:
            node["taints"] = [{"key": TAINT_KEY, "value": "np-a", "effect": "NoSchedule"}]
        bound = []
        for j in range(draw(st.integers(0, 2))):
            app = draw(st.sampled_from([*app_names, "old"]))
            pod = _pod(
                f"bound-{i}-{j}", {"app": app}, {"containers": [_container("250m", "256Mi")]}
            )
            pod["spec"]["nodeName"] = node["name"]
            pod["status"] = {"phase": "Running"}
            bound.append(pod)
        node["pods"] = bound
        nodes.append(node)
    return nodes


def _offered(it: dict[str, Any]) -> list[tuple[str, str]]:
    offerings = it.get("offerings")
    if not offerings:
        return [(z, ct) for z in ZONES for ct in CAPACITY_TYPES if (z, ct) != (ZONES[2], "spot")]
    available = [(o["zone"], o["capacityType"]) for o in offerings if o.get("available", True)]
    return available or [(o["zone"], o["capacityType"]) for o in offerings]


# --- the whole document --------------------------------------------------------------


@st.composite
def workloads(draw: st.DrawFn) -> Document:
    types = draw(instance_types())
    type_names = [t["name"] for t in types]
    pools = draw(nodepools(type_names))
    pods = draw(apps(type_names))
    app_names = sorted({p["metadata"]["labels"]["app"] for p in pods})
    document: Document = {"instanceTypes": types, "nodePools": pools, "pods": pods}
    found = draw(daemonsets())
    if found:
        document["daemonSets"] = found
    nodes = draw(existing_nodes(types, [p["metadata"]["name"] for p in pools], app_names))
    if nodes:
        document["existingNodes"] = nodes
    return document
