"""The KubeAPI contract: every test runs against the memory adapter and the http adapter."""

from __future__ import annotations

from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.kube.api import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    TooManyRequests,
    UnsupportedMediaType,
)
from kube_helpers import pod, ready_pod, take


def nodepool(name: str) -> dict[str, Any]:
    return testing.nodepool(name, requirements=[testing.capacity_types("spot")])


def nodeclaim(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    claim = testing.nodeclaim(
        name, requirements=[testing.requirement(wk.INSTANCE_TYPE, "In", ["m5.large"])]
    )
    claim["metadata"]["finalizers"] = [wk.TERMINATION_FINALIZER]
    if owner is not None:
        claim["metadata"]["ownerReferences"] = [owner_ref(owner)]
    return claim


def owner_ref(owner: dict[str, Any], block: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


def configmap(name: str, owners: list[dict[str, Any]] | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if owners:
        metadata["ownerReferences"] = [owner_ref(o) for o in owners]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def names(items: Any) -> list[str]:
    return [item["metadata"]["name"] for item in items]


# ---------------------------------------------------------------- create / get


def test_create_sets_server_fields(env):
    env.clock.advance(90)
    created = env.api.create(pod("web-1"))
    metadata = created["metadata"]
    assert metadata["name"] == "web-1"
    assert metadata["namespace"] == "default"
    assert metadata["creationTimestamp"] == "2026-01-01T00:01:30Z"
    assert metadata["generation"] == 1
    assert len(metadata["uid"]) == 36
    assert int(metadata["resourceVersion"]) > 0
    assert created["status"] == {"phase": "Pending"}
    assert env.api.get("Pod", "web-1", "default") == created


def test_generate_name_appends_five_characters(env):
    first = env.api.create(pod("", generateName="web-"))
    second = env.api.create(pod("", generateName="web-"))
    for created in (first, second):
        assert created["metadata"]["name"].startswith("web-")
        assert len(created["metadata"]["name"]) == len("web-") + 5
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_create_twice_is_already_exists(env):
    env.api.create(pod("web-1"))
    with pytest.raises(AlreadyExists) as error:
        env.api.create(pod("web-1"))
    assert error.value.code == 409


def test_get_missing_is_not_found(env):
    with pytest.raises(NotFound) as error:
        env.api.get("Pod", "nope", "default")
    assert error.value.code == 404


def test_unknown_kind_is_not_found(env):
    with pytest.raises(NotFound):
        env.api.get("Gadget", "x")
    with pytest.raises(NotFound):
        env.api.create({"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "x"}})


def test_create_in_missing_namespace_is_not_found(env):
    with pytest.raises(NotFound, match="namespaces"):
        env.api.create(pod("web-1", namespace="nowhere"))


def test_cluster_scoped_kinds_have_no_namespace(env):
    node = env.api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}})
    assert "namespace" not in node["metadata"]
    assert names(env.api.list("Node")) == ["node-a"]
    assert env.api.get("Node", "node-a")["metadata"]["uid"] == node["metadata"]["uid"]


def test_crd_kinds_are_served_with_defaults(env):
    created = env.api.create(nodepool("default"))
    assert created["apiVersion"] == "karpenter.sh/v1"
    # The CRD schema default of spec.disruption is applied by the API server.
    assert created["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    claim = env.api.create(nodeclaim("default-abcde", owner=created))
    assert names(env.api.list("NodeClaim")) == ["default-abcde"]
    assert claim["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]


# ---------------------------------------------------------------- bad input


def test_missing_name_is_invalid_naming_the_field(env):
    with pytest.raises(Invalid) as error:
        env.api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default"}}
        )
    assert error.value.code == 422
    assert [c.field for c in error.value.causes] == ["metadata.name"]


def test_bad_name_and_label_are_invalid(env):
    with pytest.raises(Invalid) as error:
        env.api.create(configmap("Not_A_Name"))
    assert [c.field for c in error.value.causes] == ["metadata.name"]
    with pytest.raises(Invalid) as error:
        env.api.create(pod("web-1", labels={"app": "bad value!"}))
    assert [c.field for c in error.value.causes] == ["metadata.labels.app"]


def test_pod_without_containers_is_invalid(env):
    bad = pod("web-1")
    bad["spec"]["containers"] = []
    with pytest.raises(Invalid) as error:
        env.api.create(bad)
    assert [c.field for c in error.value.causes] == ["spec.containers"]


def test_crd_schema_errors_name_the_field(env):
    bad = nodepool("default")
    bad["spec"]["template"]["spec"]["requirements"] = [{"key": "example.com/a", "operator": "In"}]
    with pytest.raises(Invalid) as error:
        env.api.create(bad)
    assert [c.field for c in error.value.causes] == ["spec.template.spec.requirements"]


def test_crd_immutable_field_is_invalid_on_update(env):
    env.api.create(nodepool("default"))
    claim = env.api.create(nodeclaim("default-abcde"))
    claim["spec"]["requirements"][0]["values"] = ["m5.xlarge"]
    with pytest.raises(Invalid) as error:
        env.api.update(claim)
    assert error.value.causes and all(c.field.startswith("spec") for c in error.value.causes)


def test_bad_selector_is_bad_request(env):
    with pytest.raises(BadRequest):
        env.api.list("Pod", label_selector="app in (a")
    with pytest.raises(BadRequest):
        env.api.list("Pod", field_selector="spec.unknownField=x")


# ---------------------------------------------------------------- list and selectors


def _three_pods(env) -> None:
    env.api.create(pod("a", labels={"app": "web", "tier": "front"}, spec={"nodeName": "node-1"}))
    env.api.create(pod("b", labels={"app": "web"}, spec={"nodeName": "node-2"}))
    env.api.create(pod("c", labels={"app": "db"}))


def test_list_resource_version_is_the_collection_version(env):
    _three_pods(env)
    listed = env.api.list("Pod", "default")
    assert names(listed) == ["a", "b", "c"]
    assert listed.resource_version == env.store.resource_version
    assert all(item["kind"] == "Pod" for item in listed)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web,tier=front", ["a"]),
        ("app!=web", ["c"]),
        ("app in (db, cache)", ["c"]),
        ("app notin (db)", ["a", "b"]),
        ("tier", ["a"]),
        ("!tier", ["b", "c"]),
    ],
)
def test_label_selectors(env, selector, expected):
    _three_pods(env)
    assert names(env.api.list("Pod", "default", label_selector=selector)) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-1", ["a"]),
        ("spec.nodeName=", ["c"]),
        ("spec.nodeName!=", ["a", "b"]),
        ("metadata.name=b", ["b"]),
        ("metadata.namespace=default,spec.nodeName!=node-1", ["b", "c"]),
    ],
)
def test_field_selectors(env, selector, expected):
    _three_pods(env)
    assert names(env.api.list("Pod", field_selector=selector)) == expected


def test_list_by_namespace(env):
    env.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    env.api.create(pod("a"))
    env.api.create(pod("b", namespace="team"))
    assert names(env.api.list("Pod", "team")) == ["b"]
    assert names(env.api.list("Pod")) == ["a", "b"]


# ---------------------------------------------------------------- update / concurrency


def test_stale_update_is_conflict(env):
    created = env.api.create(configmap("cfg", key="1"))
    fresh = dict(created, data={"key": "2"})
    updated = env.api.update(fresh)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = dict(created, data={"key": "3"})
    with pytest.raises(Conflict) as error:
        env.api.update(stale)
    assert error.value.code == 409
    assert env.api.get("ConfigMap", "cfg", "default")["data"] == {"key": "2"}


def test_stale_patch_with_resource_version_is_conflict(env):
    created = env.api.create(configmap("cfg", key="1"))
    env.api.patch("ConfigMap", "cfg", {"data": {"key": "2"}}, "default")
    with pytest.raises(Conflict):
        env.api.patch(
            "ConfigMap",
            "cfg",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {}},
            "default",
        )


def test_crd_update_needs_resource_version(env):
    created = env.api.create(nodepool("default"))
    del created["metadata"]["resourceVersion"]
    with pytest.raises(Invalid) as error:
        env.api.update(created)
    assert [c.field for c in error.value.causes] == ["metadata.resourceVersion"]


def test_noop_update_keeps_resource_version(env):
    created = env.api.create(configmap("cfg", key="1"))
    assert (
        env.api.update(created)["metadata"]["resourceVersion"]
        == created["metadata"]["resourceVersion"]
    )


def test_spec_write_bumps_generation_status_write_does_not(env):
    env.api.create(nodepool("default"))
    pool = env.api.get("NodePool", "default")
    pool["spec"]["weight"] = 10
    pool["status"] = {"nodes": 3}  # ignored: status has its own subresource
    updated = env.api.update(pool)
    assert updated["metadata"]["generation"] == 2
    assert "status" not in updated
    updated["status"] = {"nodes": 3}
    updated["spec"]["weight"] = 50  # ignored by a status write
    status_written = env.api.update_status(updated)
    assert status_written["status"] == {"nodes": 3}
    assert status_written["spec"]["weight"] == 10
    assert status_written["metadata"]["generation"] == 2
    relabelled = env.api.patch("NodePool", "default", {"metadata": {"labels": {"team": "a"}}})
    assert relabelled["metadata"]["generation"] == 2


def test_status_write_on_kind_without_status_is_not_found(env):
    created = env.api.create(configmap("cfg"))
    with pytest.raises(NotFound):
        env.api.update_status(created)


# ---------------------------------------------------------------- patches


def test_merge_patch_null_deletes(env):
    env.api.create(pod("web", labels={"app": "web", "tier": "front"}))
    patched = env.api.patch("Pod", "web", {"metadata": {"labels": {"tier": None}}}, "default")
    assert patched["metadata"]["labels"] == {"app": "web"}


def test_strategic_patch_merges_lists_by_key(env):
    created = pod("web")
    created["metadata"]["finalizers"] = ["example.com/a"]
    created["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})
    env.api.create(created)
    patched = env.api.patch(
        "Pod",
        "web",
        {
            "metadata": {"finalizers": ["example.com/b"]},
            "spec": {"containers": [{"name": "sidecar", "image": "envoy:2"}]},
        },
        "default",
        patch_type="strategic",
    )
    assert patched["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [
        ("main", "busybox"),
        ("sidecar", "envoy:2"),
    ]


def test_strategic_status_patch_merges_conditions_by_type(env):
    env.api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}})
    env.api.patch(
        "Node",
        "node-a",
        {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        patch_type="strategic",
        subresource="status",
    )
    patched = env.api.patch(
        "Node",
        "node-a",
        {
            "status": {
                "conditions": [
                    {"type": "MemoryPressure", "status": "False"},
                    {"type": "Ready", "status": "True"},
                ]
            }
        },
        patch_type="strategic",
        subresource="status",
    )
    assert [(c["type"], c["status"]) for c in patched["status"]["conditions"]] == [
        ("Ready", "True"),
        ("MemoryPressure", "False"),
    ]


def test_strategic_patch_on_crd_is_unsupported(env):
    env.api.create(nodepool("default"))
    with pytest.raises(UnsupportedMediaType) as error:
        env.api.patch("NodePool", "default", {"spec": {"weight": 5}}, patch_type="strategic")
    assert error.value.code == 415


def test_json_patch_with_test(env):
    env.api.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-a"},
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]},
        }
    )
    patched = env.api.patch(
        "Node",
        "node-a",
        [
            {"op": "test", "path": "/spec/taints/0/key", "value": "a"},
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "b", "effect": "NoExecute"}},
            {"op": "add", "path": "/spec/unschedulable", "value": True},
            {"op": "replace", "path": "/spec/taints/0/effect", "value": "NoExecute"},
        ],
        patch_type="json",
    )
    assert [t["key"] for t in patched["spec"]["taints"]] == ["a", "b"]
    assert patched["spec"]["unschedulable"] is True
    with pytest.raises(Invalid) as error:
        env.api.patch(
            "Node",
            "node-a",
            [
                {"op": "test", "path": "/spec/taints/0/key", "value": "zzz"},
                {"op": "remove", "path": "/spec/taints"},
            ],
            patch_type="json",
        )
    assert error.value.code == 422
    assert len(env.api.get("Node", "node-a")["spec"]["taints"]) == 2


# ---------------------------------------------------------------- watch


def test_watch_without_version_lists_then_follows(env):
    env.api.create(pod("a"))
    watch = env.api.watch("Pod", "default", timeout_seconds=5)
    env.api.create(pod("b"))
    events = take(watch, 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


def test_watch_resumes_from_resource_version(env):
    first = env.api.create(pod("a"))
    env.api.patch("Pod", "a", {"metadata": {"labels": {"x": "1"}}}, "default")
    env.api.create(configmap("not-a-pod"))
    env.api.delete("Pod", "a", "default")
    watch = env.api.watch(
        "Pod", "default", resource_version=first["metadata"]["resourceVersion"], timeout_seconds=5
    )
    events = take(watch, 2)
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    assert events[0].object["metadata"]["labels"] == {"x": "1"}
    assert int(events[1].object["metadata"]["resourceVersion"]) > int(
        events[0].object["metadata"]["resourceVersion"]
    )


def test_watch_from_compacted_version_is_gone(env):
    first = env.api.create(pod("a"))
    env.api.create(pod("b"))
    env.store.compact()
    with pytest.raises(Gone) as error:
        take(
            env.api.watch(
                "Pod",
                "default",
                resource_version=first["metadata"]["resourceVersion"],
                timeout_seconds=2,
            ),
            1,
        )
    assert error.value.code == 410


def test_watch_with_selector_sees_objects_leave_and_enter(env):
    env.api.create(pod("a", labels={"app": "web"}))
    rv = env.api.list("Pod").resource_version
    watch = env.api.watch(
        "Pod", "default", resource_version=rv, label_selector="app=web", timeout_seconds=5
    )
    env.api.patch("Pod", "a", {"metadata": {"labels": {"app": "db"}}}, "default")
    env.api.patch("Pod", "a", {"metadata": {"labels": {"app": "web"}}}, "default")
    env.api.create(pod("b", labels={"app": "db"}))
    env.api.create(pod("c", labels={"app": "web"}))
    events = take(watch, 3)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"),
        ("ADDED", "a"),
        ("ADDED", "c"),
    ]


def test_watch_field_selector_by_node(env):
    rv = env.api.list("Pod").resource_version
    watch = env.api.watch(
        "Pod", field_selector="spec.nodeName=node-1", resource_version=rv, timeout_seconds=5
    )
    env.api.create(pod("a", spec={"nodeName": "node-2"}))
    env.api.create(pod("b", spec={"nodeName": "node-1"}))
    assert [e.object["metadata"]["name"] for e in take(watch, 1)] == ["b"]


def test_watch_ends_at_timeout_with_bookmark(env):
    env.api.create(pod("a"))
    rv = env.api.list("Pod").resource_version
    events = list(
        env.api.watch("Pod", resource_version=rv, timeout_seconds=1, allow_bookmarks=True)
    )
    assert [e.type for e in events] == ["BOOKMARK"]
    assert events[0].object["metadata"]["resourceVersion"] == rv


# ---------------------------------------------------------------- finalizers and deletion


def test_finalizer_flow(env):
    env.api.create(configmap("cfg"))
    env.api.patch("ConfigMap", "cfg", {"metadata": {"finalizers": ["example.com/hold"]}}, "default")
    env.clock.advance(10)
    rv = env.api.list("ConfigMap").resource_version
    watch = env.api.watch("ConfigMap", "default", resource_version=rv, timeout_seconds=5)
    marked = env.api.delete("ConfigMap", "cfg", "default")
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:10Z"
    assert env.api.get("ConfigMap", "cfg", "default")["metadata"]["finalizers"] == [
        "example.com/hold"
    ]
    with pytest.raises(Invalid) as error:
        env.api.patch(
            "ConfigMap",
            "cfg",
            {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
            "default",
        )
    assert [c.field for c in error.value.causes] == ["metadata.finalizers"]
    env.api.patch("ConfigMap", "cfg", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(NotFound):
        env.api.get("ConfigMap", "cfg", "default")
    assert [e.type for e in take(watch, 2)] == ["MODIFIED", "DELETED"]


def test_delete_preconditions(env):
    created = env.api.create(configmap("cfg"))
    with pytest.raises(Conflict):
        env.api.delete("ConfigMap", "cfg", "default", preconditions={"uid": "other"})
    env.api.delete("ConfigMap", "cfg", "default", preconditions={"uid": created["metadata"]["uid"]})
    with pytest.raises(NotFound):
        env.api.delete("ConfigMap", "cfg", "default")


def test_bound_pod_deletion_is_graceful(env):
    env.api.create(pod("web", spec={"nodeName": "node-a", "terminationGracePeriodSeconds": 20}))
    marked = env.api.delete("Pod", "web", "default")
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 20
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:20Z"
    env.api.delete("Pod", "web", "default", grace_period_seconds=0)  # as the kubelet does
    with pytest.raises(NotFound):
        env.api.get("Pod", "web", "default")


def test_unbound_pod_goes_at_once(env):
    env.api.create(pod("web"))
    env.api.delete("Pod", "web", "default")
    with pytest.raises(NotFound):
        env.api.get("Pod", "web", "default")


# ---------------------------------------------------------------- garbage collection


def test_background_gc_deletes_owned_objects(env):
    owner = env.api.create(configmap("owner"))
    other = env.api.create(configmap("other"))
    env.api.create(configmap("only-owned", owners=[owner]))
    env.api.create(configmap("co-owned", owners=[owner, other]))
    env.api.delete("ConfigMap", "owner", "default")
    assert names(env.api.list("ConfigMap")) == ["co-owned", "other"]
    survivor = env.api.get("ConfigMap", "co-owned", "default")
    assert [r["name"] for r in survivor["metadata"]["ownerReferences"]] == ["other"]


def test_gc_cascades_across_kinds_and_respects_finalizers(env):
    pool = env.api.create(nodepool("default"))
    env.api.create(nodeclaim("default-abcde", owner=pool))
    env.api.delete("NodePool", "default")
    claim = env.api.get("NodeClaim", "default-abcde")
    assert claim["metadata"]["deletionTimestamp"]  # the termination finalizer holds it
    env.api.patch("NodeClaim", "default-abcde", {"metadata": {"finalizers": None}})
    assert names(env.api.list("NodeClaim")) == []


def test_foreground_deletion_waits_for_dependents(env):
    owner = env.api.create(configmap("owner"))
    held = configmap("held", owners=[owner])
    held["metadata"]["finalizers"] = ["example.com/hold"]
    env.api.create(held)
    env.api.delete("ConfigMap", "owner", "default", propagation_policy="Foreground")
    waiting = env.api.get("ConfigMap", "owner", "default")
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert env.api.get("ConfigMap", "held", "default")["metadata"]["deletionTimestamp"]
    env.api.patch("ConfigMap", "held", {"metadata": {"finalizers": None}}, "default")
    assert names(env.api.list("ConfigMap")) == []


def test_orphan_deletion_keeps_dependents(env):
    owner = env.api.create(configmap("owner"))
    env.api.create(configmap("child", owners=[owner]))
    env.api.delete("ConfigMap", "owner", "default", propagation_policy="Orphan")
    assert names(env.api.list("ConfigMap")) == ["child"]
    assert "ownerReferences" not in env.api.get("ConfigMap", "child", "default")["metadata"]


def test_dangling_owner_reference_is_collected(env):
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "00000000-0000-4000-8000-000000000000"},
    }
    env.api.create(configmap("child", owners=[ghost]))
    assert names(env.api.list("ConfigMap")) == []


# ---------------------------------------------------------------- eviction and binding


def _budget(min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}},
    }


def test_eviction_blocked_by_pdb(env):
    env.api.create(_budget(2))
    ready_pod(env.api, "web-1", {"app": "web"})
    ready_pod(env.api, "web-2", {"app": "web"})
    assert env.api.get("PodDisruptionBudget", "web", "default")["status"]["disruptionsAllowed"] == 0
    with pytest.raises(TooManyRequests) as error:
        env.api.evict("web-1", "default")
    assert error.value.code == 429
    assert error.value.causes[0].reason == "DisruptionBudget"
    assert env.api.get("Pod", "web-1", "default")["metadata"].get("deletionTimestamp") is None


def test_eviction_admitted_updates_pdb_status(env):
    env.api.create(_budget(2))
    for i in range(3):
        ready_pod(env.api, f"web-{i}", {"app": "web"})
    status = env.api.get("PodDisruptionBudget", "web", "default")["status"]
    assert (status["currentHealthy"], status["desiredHealthy"], status["disruptionsAllowed"]) == (
        3,
        2,
        1,
    )
    env.api.evict("web-0", "default")
    evicted = env.api.get("Pod", "web-0", "default")
    assert evicted["metadata"]["deletionTimestamp"]  # bound: terminating until the kubelet
    status = env.api.get("PodDisruptionBudget", "web", "default")["status"]
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 0)
    with pytest.raises(TooManyRequests):
        env.api.evict("web-1", "default")


def test_eviction_of_pod_without_budget_deletes_it(env):
    env.api.create(pod("lonely"))
    env.api.evict("lonely", "default")
    with pytest.raises(NotFound):
        env.api.get("Pod", "lonely", "default")
    with pytest.raises(NotFound):
        env.api.evict("lonely", "default")


def test_binding_sets_node_once(env):
    env.api.create(pod("web"))
    env.api.bind("web", "default", "node-a")
    bound = env.api.get("Pod", "web", "default")
    assert bound["spec"]["nodeName"] == "node-a"
    assert [(c["type"], c["status"]) for c in bound["status"]["conditions"]] == [
        ("PodScheduled", "True")
    ]
    with pytest.raises(Conflict):
        env.api.bind("web", "default", "node-b")


# ---------------------------------------------------------------- namespaces


def test_deleting_a_namespace_deletes_its_contents(env):
    env.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    env.api.create(pod("web", namespace="team", spec={"nodeName": "node-a"}))
    env.api.create(configmap("cfg") | {"metadata": {"name": "cfg", "namespace": "team"}})
    env.api.delete("Namespace", "team")
    terminating = env.api.get("Namespace", "team")
    assert terminating["status"]["phase"] == "Terminating"
    assert names(env.api.list("ConfigMap", "team")) == []
    assert env.api.get("Pod", "web", "team")["metadata"]["deletionTimestamp"]  # graceful
    with pytest.raises(Forbidden):
        env.api.create(pod("late", namespace="team"))
    env.api.delete("Pod", "web", "team", grace_period_seconds=0)
    with pytest.raises(NotFound):
        env.api.get("Namespace", "team")


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        ({"maxUnavailable": "half"}, ["spec.maxUnavailable"]),
        ({"minAvailable": -1}, ["spec.minAvailable"]),
        ({"minAvailable": 1, "maxUnavailable": 1}, ["spec"]),
        (
            {"minAvailable": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
            ["spec.selector.matchExpressions[0].values"],
        ),
    ],
)
def test_malformed_budget_is_invalid(env, spec, fields):
    budget = _budget(1)
    budget["spec"] = spec
    with pytest.raises(Invalid) as error:
        env.api.create(budget)
    assert [c.field for c in error.value.causes] == fields


def test_pod_with_bad_grace_period_is_invalid(env):
    bad = pod("web", spec={"terminationGracePeriodSeconds": "soon"})
    with pytest.raises(Invalid) as error:
        env.api.create(bad)
    assert [c.field for c in error.value.causes] == ["spec.terminationGracePeriodSeconds"]


def test_crd_status_is_validated(env):
    env.api.create(nodepool("default"))
    with pytest.raises(Invalid) as error:
        env.api.patch("NodePool", "default", {"status": {"nodeName": "x"}}, subresource="status")
    assert [c.field for c in error.value.causes] == ["status.nodeName"]
