"""The KubeAPI contract: every test runs, with the same assertions, against the memory
adapter, the http adapter over the in-memory server, and the http adapter over a real
kube-apiserver v1.36 with kube-controller-manager (``targets.py``). What a test asserts
is what the real server guarantees; what kube-controller-manager does after a write is
awaited with ``env.eventually``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from joiner import testing
from joiner.api import labels as wk
from joiner.kube.api import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    TooManyRequests,
    UnsupportedMediaType,
    WatchEvent,
)
from joiner.kube.reflector import list_and_watch
from kube_helpers import pod, take
from targets import Target

NOT_READY = "node.kubernetes.io/not-ready"


def nodepool(env: Target) -> dict[str, Any]:
    return testing.nodepool(env.name("pool"), requirements=[testing.capacity_types("spot")])


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


def configmap(env: Target, name: str, owners: list[dict[str, Any]] | None = None) -> dict:
    metadata: dict[str, Any] = {"name": name, "namespace": env.namespace}
    if owners:
        metadata["ownerReferences"] = [owner_ref(o) for o in owners]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {}}


def node(env: Target, name: str, **spec: Any) -> dict[str, Any]:
    """A Node as a kubelet registers it: not Ready yet."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"conditions": [ready_condition(env, "False")]},
    }


def ready_condition(env: Target, status: str) -> dict[str, str]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(env.now()))
    return {
        "type": "Ready",
        "status": status,
        "reason": "KubeletReady" if status == "True" else "KubeletNotReady",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def names(items: Any) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def ready_pod(env: Target, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A Running, Ready pod bound to a node (create, then status as the kubelet writes it)."""
    created = env.api.create(
        pod(name, env.namespace, labels=labels, spec={"nodeName": env.name("node-a")})
    )
    created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return env.api.update_status(created)


# ---------------------------------------------------------------- create / get


def test_create_sets_server_fields(env):
    start = env.now()
    created = env.api.create(pod("web-1", env.namespace))
    metadata = created["metadata"]
    assert metadata["name"] == "web-1"
    assert metadata["namespace"] == env.namespace
    assert env.stamped_within(metadata["creationTimestamp"], start, env.now())
    assert metadata["generation"] == 1
    assert len(metadata["uid"]) == 36
    assert int(metadata["resourceVersion"]) > 0
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert env.api.get("Pod", "web-1", env.namespace) == created


def test_pod_create_applies_the_defaults_and_admission(env):
    manifest = pod(
        "web-1",
        env.namespace,
        spec={
            "containers": [
                {
                    "name": "main",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
            "tolerations": [{"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"}],
        },
    )
    spec = env.api.create(manifest)["spec"]
    assert {
        k: spec[k] for k in ("terminationGracePeriodSeconds", "dnsPolicy", "restartPolicy")
    } == {
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
    }
    assert (spec["schedulerName"], spec["priority"], spec["enableServiceLinks"]) == (
        "default-scheduler",
        0,
        True,
    )
    assert spec["tolerations"] == [  # not-ready was tolerated already: only unreachable added
        {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    container = spec["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    created = env.api.get("Pod", "web-1", env.namespace)
    assert created["status"]["qosClass"] == "Guaranteed"


def test_unknown_priority_class_is_forbidden(env):
    with pytest.raises(Forbidden, match="no PriorityClass with name nope was found"):
        env.api.create(pod("web-1", env.namespace, spec={"priorityClassName": "nope"}))
    critical = env.api.create(
        pod("web-2", env.namespace, spec={"priorityClassName": "system-node-critical"})
    )
    assert critical["spec"]["priority"] == 2000001000


def test_generate_name_appends_five_characters(env):
    first = env.api.create(pod("", env.namespace, generateName="web-"))
    second = env.api.create(pod("", env.namespace, generateName="web-"))
    for created in (first, second):
        assert created["metadata"]["name"].startswith("web-")
        assert len(created["metadata"]["name"]) == len("web-") + 5
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_create_twice_is_already_exists(env):
    env.api.create(pod("web-1", env.namespace))
    with pytest.raises(AlreadyExists) as error:
        env.api.create(pod("web-1", env.namespace))
    assert error.value.code == 409


def test_get_missing_is_not_found(env):
    with pytest.raises(NotFound) as error:
        env.api.get("Pod", "nope", env.namespace)
    assert error.value.code == 404


def test_unknown_kind_is_not_found(env):
    with pytest.raises(NotFound):
        env.api.get("Gadget", "x")
    with pytest.raises(NotFound):
        env.api.create({"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "x"}})


def test_create_in_missing_namespace_is_not_found(env):
    with pytest.raises(NotFound, match="namespaces"):
        env.api.create(pod("web-1", namespace=env.name("nowhere")))


def test_cluster_scoped_kinds_have_no_namespace(env):
    created = env.api.create(node(env, env.name("node-a")))
    assert "namespace" not in created["metadata"]
    assert env.name("node-a") in names(env.api.list("Node"))
    assert env.api.get("Node", env.name("node-a"))["metadata"]["uid"] == created["metadata"]["uid"]


def test_a_new_node_is_tainted_not_ready_until_it_is_ready(env):
    name = env.name("node-a")
    created = env.api.create(node(env, name, taints=[{"key": "a", "effect": "NoSchedule"}]))
    assert created["spec"]["taints"] == [
        {"key": "a", "effect": "NoSchedule"},
        {"key": NOT_READY, "effect": "NoSchedule"},
    ]
    ready = {"status": {"conditions": [ready_condition(env, "True")]}}
    env.api.patch("Node", name, ready, subresource="status")
    untainted = env.eventually(
        lambda: len((n := env.api.get("Node", name))["spec"]["taints"]) == 1 and n,
        "the node lifecycle controller to remove the not-ready taint",
    )
    assert untainted["spec"]["taints"] == [{"key": "a", "effect": "NoSchedule"}]


def test_crd_kinds_are_served_with_defaults(env):
    created = env.api.create(nodepool(env))
    assert created["apiVersion"] == "karpenter.sh/v1"
    # The CRD schema default of spec.disruption is applied by the API server.
    assert created["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    claim = env.api.create(nodeclaim(env.name("claim"), owner=created))
    assert env.name("claim") in names(env.api.list("NodeClaim"))
    assert claim["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]


# ---------------------------------------------------------------- bad input


def test_missing_name_is_invalid_naming_the_field(env):
    with pytest.raises(Invalid) as error:
        env.api.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": env.namespace}}
        )
    assert error.value.code == 422
    assert [c.field for c in error.value.causes] == ["metadata.name"]


def test_bad_name_and_label_are_invalid(env):
    with pytest.raises(Invalid) as error:
        env.api.create(configmap(env, "Not_A_Name"))
    assert [c.field for c in error.value.causes] == ["metadata.name"]
    with pytest.raises(Invalid) as error:
        env.api.create(pod("web-1", env.namespace, labels={"app": "bad value!"}))
    assert [c.field for c in error.value.causes] == ["metadata.labels"]
    assert '"bad value!"' in error.value.causes[0].message


def test_pod_without_containers_is_invalid(env):
    bad = pod("web-1", env.namespace)
    bad["spec"]["containers"] = []
    with pytest.raises(Invalid) as error:
        env.api.create(bad)
    assert [c.field for c in error.value.causes] == ["spec.containers"]


def test_two_controller_owners_are_invalid(env):
    first = env.api.create(configmap(env, "first"))
    second = env.api.create(configmap(env, "second"))
    with pytest.raises(Invalid) as error:
        env.api.create(configmap(env, "child", owners=[first, second]))
    assert [c.field for c in error.value.causes] == ["metadata.ownerReferences"]
    assert "Only one reference can have Controller set to true" in error.value.causes[0].message


def test_crd_schema_errors_name_the_field(env):
    bad = nodepool(env)
    bad["spec"]["template"]["spec"]["requirements"] = [{"key": "example.com/a", "operator": "In"}]
    with pytest.raises(Invalid) as error:
        env.api.create(bad)
    assert [c.field for c in error.value.causes] == ["spec.template.spec.requirements"]


def test_crd_immutable_field_is_invalid_on_update(env):
    env.api.create(nodepool(env))
    claim = env.api.create(nodeclaim(env.name("claim")))
    claim["spec"]["requirements"][0]["values"] = ["m5.xlarge"]
    with pytest.raises(Invalid) as error:
        env.api.update(claim)
    assert error.value.causes and all(c.field.startswith("spec") for c in error.value.causes)


def test_bad_selector_is_bad_request(env):
    with pytest.raises(BadRequest):
        env.api.list("Pod", env.namespace, label_selector="app in (a")
    with pytest.raises(BadRequest):
        env.api.list("Pod", env.namespace, field_selector="spec.unknownField=x")


# ---------------------------------------------------------------- types and unknown fields


def test_a_wrong_json_type_is_a_bad_request_naming_the_field(env):
    bad = pod("web", env.namespace, spec={"terminationGracePeriodSeconds": "soon"})
    with pytest.raises(BadRequest) as error:
        env.api.create(bad)
    assert error.value.message == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into '
        "Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"
    )
    labelled = pod("web", env.namespace, labels={"size": 3})
    with pytest.raises(BadRequest, match=r"ObjectMeta\.metadata\.labels of type string"):
        env.api.create(labelled)
    quantity = pod("web", env.namespace, spec={"overhead": {"cpu": "lots"}})
    with pytest.raises(BadRequest, match="quantities must match the regular expression"):
        env.api.create(quantity)


def test_a_wrong_type_in_a_patch_is_invalid_on_the_patch(env):
    env.api.create(configmap(env, "cfg"))
    with pytest.raises(Invalid) as error:
        env.api.patch("ConfigMap", "cfg", {"data": {"size": 3}}, env.namespace)
    assert [c.field for c in error.value.causes] == ["patch"]
    assert error.value.causes[0].message.endswith(
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )


def test_a_wrong_type_in_a_custom_resource_is_invalid_naming_the_field(env):
    bad = nodepool(env)
    bad["spec"]["weight"] = "heavy"
    with pytest.raises(Invalid) as error:
        env.api.create(bad)
    assert [c.field for c in error.value.causes] == ["spec.weight", "<nil>"]


def test_a_value_of_another_json_type_is_refused_on_a_write_that_leaves_it_equal(env):
    # true == 1 in Python: the server compares JSON types, not Python equality, when it
    # decodes and validates a write that replaces a stored object.
    stored = env.api.create(pod("web", env.namespace, spec={"terminationGracePeriodSeconds": 1}))
    stored["spec"]["terminationGracePeriodSeconds"] = True
    stored["status"] = {"phase": "Pending"}
    with pytest.raises(BadRequest, match=r"cannot unmarshal bool into Go struct field Pod"):
        env.api.update_status(stored)
    pool = nodepool(env)
    pool["spec"]["weight"] = 1
    stored_pool = env.api.create(pool)
    stored_pool["spec"]["weight"] = True
    with pytest.raises(Invalid) as error:
        env.api.update(stored_pool)
    assert error.value.causes[0].field == "spec.weight"


def test_unknown_fields_are_refused_by_the_adapter_the_strict_way(env):
    bad = pod("web", env.namespace, spec={"bogus": 1})
    bad["spec"]["containers"][0]["imagex"] = "nginx"
    with pytest.raises(BadRequest) as error:
        env.api.create(bad)
    assert error.value.message == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagex", unknown field "spec.bogus"'
    )
    pool = nodepool(env)
    pool["spec"]["template"]["spec"]["typo"] = True
    with pytest.raises(BadRequest, match=r'unknown field "spec\.template\.spec\.typo"'):
        env.api.create(pool)
    env.api.create(configmap(env, "cfg"))
    with pytest.raises(Invalid) as patched:
        env.api.patch("ConfigMap", "cfg", {"bogus": 1}, env.namespace)
    assert [c.field for c in patched.value.causes] == ["patch"]
    assert patched.value.causes[0].message.endswith('strict decoding error: unknown field "bogus"')


@pytest.mark.parametrize(("validation", "warned"), [("Warn", True), ("Ignore", False)])
def test_unknown_fields_are_dropped_unless_strict(env, validation, warned):
    manifest = pod("web", env.namespace, spec={"bogus": 1})
    created, warnings = env.write_with_field_validation("create", manifest, validation)
    assert "bogus" not in created["spec"]
    assert warnings == (['unknown field "spec.bogus"'] if warned else [])
    pool = nodepool(env)
    pool["spec"]["typo"] = True
    created_pool, warnings = env.write_with_field_validation("create", pool, validation)
    assert "typo" not in created_pool["spec"]
    assert warnings == (['unknown field "spec.typo"'] if warned else [])
    patched, warnings = env.write_with_field_validation(
        "patch", created, validation, patch={"metadata": {"labels": {"a": "b"}}, "bogus": 2}
    )
    assert patched["metadata"]["labels"] == {"a": "b"} and "bogus" not in patched
    assert warnings == (['unknown field "bogus"'] if warned else [])


# ---------------------------------------------------------------- list and selectors


def _three_pods(env: Target) -> None:
    ns = env.namespace
    env.api.create(
        pod("a", ns, labels={"app": "web", "tier": "front"}, spec={"nodeName": "node-1"})
    )
    env.api.create(pod("b", ns, labels={"app": "web"}, spec={"nodeName": "node-2"}))
    env.api.create(pod("c", ns, labels={"app": "db"}))


def test_list_resource_version_is_the_collection_version(env):
    _three_pods(env)
    last = env.api.get("Pod", "c", env.namespace)["metadata"]["resourceVersion"]
    listed = env.api.list("Pod", env.namespace)
    assert names(listed) == ["a", "b", "c"]
    assert int(listed.resource_version) >= int(last)
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
    assert names(env.api.list("Pod", env.namespace, label_selector=selector)) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-1", ["a"]),
        ("spec.nodeName=", ["c"]),
        ("spec.nodeName!=", ["a", "b"]),
        ("metadata.name=b", ["b"]),
        ("spec.nodeName!=node-1", ["b", "c"]),
    ],
)
def test_field_selectors(env, selector, expected):
    _three_pods(env)
    assert names(env.api.list("Pod", env.namespace, field_selector=selector)) == expected


def test_list_by_namespace(env):
    team = env.name("team")
    env.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}})
    env.api.create(pod("a", env.namespace))
    env.api.create(pod("b", namespace=team))
    assert names(env.api.list("Pod", team)) == ["b"]
    everywhere = env.api.list("Pod").items
    assert [p["metadata"]["name"] for p in everywhere if p["metadata"]["namespace"] == team] == [
        "b"
    ]
    assert "a" in names(p for p in everywhere if p["metadata"]["namespace"] == env.namespace)


# ---------------------------------------------------------------- update / concurrency


def test_stale_update_is_conflict(env):
    created = env.api.create(configmap(env, "cfg") | {"data": {"key": "1"}})
    fresh = dict(created, data={"key": "2"})
    updated = env.api.update(fresh)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = dict(created, data={"key": "3"})
    with pytest.raises(Conflict) as error:
        env.api.update(stale)
    assert error.value.code == 409
    assert env.api.get("ConfigMap", "cfg", env.namespace)["data"] == {"key": "2"}


def test_stale_patch_with_resource_version_is_conflict(env):
    created = env.api.create(configmap(env, "cfg"))
    env.api.patch("ConfigMap", "cfg", {"data": {"key": "2"}}, env.namespace)
    with pytest.raises(Conflict):
        env.api.patch(
            "ConfigMap",
            "cfg",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {}},
            env.namespace,
        )


def test_crd_update_needs_resource_version(env):
    created = env.api.create(nodepool(env))
    del created["metadata"]["resourceVersion"]
    with pytest.raises(Invalid) as error:
        env.api.update(created)
    assert [c.field for c in error.value.causes] == ["metadata.resourceVersion"]


def test_noop_update_keeps_resource_version(env):
    created = env.api.create(configmap(env, "cfg"))
    assert (
        env.api.update(created)["metadata"]["resourceVersion"]
        == created["metadata"]["resourceVersion"]
    )


def test_spec_write_bumps_generation_status_write_does_not(env):
    name = env.api.create(nodepool(env))["metadata"]["name"]
    pool = env.api.get("NodePool", name)
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
    relabelled = env.api.patch("NodePool", name, {"metadata": {"labels": {"team": "a"}}})
    assert relabelled["metadata"]["generation"] == 2


def test_status_write_on_kind_without_status_is_not_found(env):
    created = env.api.create(configmap(env, "cfg"))
    with pytest.raises(NotFound):
        env.api.update_status(created)


# ---------------------------------------------------------------- patches


def test_merge_patch_null_deletes(env):
    env.api.create(pod("web", env.namespace, labels={"app": "web", "tier": "front"}))
    patched = env.api.patch("Pod", "web", {"metadata": {"labels": {"tier": None}}}, env.namespace)
    assert patched["metadata"]["labels"] == {"app": "web"}


def test_strategic_patch_merges_lists_by_key_patch_items_first(env):
    created = pod("web", env.namespace)
    created["metadata"]["finalizers"] = ["example.com/a"]
    created["spec"]["initContainers"] = [
        {"name": "one", "image": "busybox"},
        {"name": "two", "image": "busybox"},
    ]
    env.api.create(created)
    patched = env.api.patch(
        "Pod",
        "web",
        {
            "metadata": {"finalizers": ["example.com/b"]},
            "spec": {"initContainers": [{"name": "two", "image": "busybox:2"}]},
        },
        env.namespace,
        patch_type="strategic",
    )
    assert patched["metadata"]["finalizers"] == ["example.com/b", "example.com/a"]
    assert [(c["name"], c["image"]) for c in patched["spec"]["initContainers"]] == [
        ("one", "busybox"),
        ("two", "busybox:2"),
    ]
    env.api.patch("Pod", "web", {"metadata": {"finalizers": None}}, env.namespace)


def test_strategic_status_patch_merges_conditions_by_type(env):
    env.api.create(node(env, env.name("node-a")))
    env.api.patch(
        "Node",
        env.name("node-a"),
        {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}},
        patch_type="strategic",
        subresource="status",
    )
    patched = env.api.patch(
        "Node",
        env.name("node-a"),
        {
            "status": {
                "conditions": [
                    {"type": "DiskPressure", "status": "False"},
                    {"type": "MemoryPressure", "status": "True"},
                ]
            }
        },
        patch_type="strategic",
        subresource="status",
    )
    assert [(c["type"], c["status"]) for c in patched["status"]["conditions"]] == [
        ("DiskPressure", "False"),
        ("MemoryPressure", "True"),
        ("Ready", "False"),
    ]


def test_strategic_patch_on_crd_is_unsupported(env):
    name = env.api.create(nodepool(env))["metadata"]["name"]
    with pytest.raises(UnsupportedMediaType) as error:
        env.api.patch("NodePool", name, {"spec": {"weight": 5}}, patch_type="strategic")
    assert error.value.code == 415


def test_json_patch_with_test(env):
    name = env.name("node-a")
    env.api.create(node(env, name, taints=[{"key": "a", "effect": "NoSchedule"}]))
    patched = env.api.patch(
        "Node",
        name,
        [
            {"op": "test", "path": "/spec/taints/0/key", "value": "a"},
            {"op": "add", "path": "/spec/taints/-", "value": {"key": "b", "effect": "NoExecute"}},
            {"op": "add", "path": "/spec/unschedulable", "value": True},
            {"op": "replace", "path": "/spec/taints/0/effect", "value": "NoExecute"},
        ],
        patch_type="json",
    )
    assert [t["key"] for t in patched["spec"]["taints"]] == ["a", NOT_READY, "b"]
    assert patched["spec"]["unschedulable"] is True
    cordoned = env.eventually(
        lambda: len((n := env.api.get("Node", name))["spec"]["taints"]) == 4 and n,
        "the node lifecycle controller to taint the cordoned node",
    )
    assert cordoned["spec"]["taints"][3]["key"] == "node.kubernetes.io/unschedulable"
    with pytest.raises(Invalid) as error:
        env.api.patch(
            "Node",
            name,
            [
                {"op": "test", "path": "/spec/taints/0/key", "value": "zzz"},
                {"op": "remove", "path": "/spec/taints"},
            ],
            patch_type="json",
        )
    assert error.value.code == 422
    assert len(env.api.get("Node", name)["spec"]["taints"]) == 4


# ---------------------------------------------------------------- watch


def test_watch_without_version_lists_then_follows(env):
    env.api.create(pod("a", env.namespace))
    watch = env.api.watch("Pod", env.namespace, timeout_seconds=5)
    env.api.create(pod("b", env.namespace))
    events = take(watch, 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


def test_watch_resumes_from_resource_version(env):
    first = env.api.create(pod("a", env.namespace))
    env.api.patch("Pod", "a", {"metadata": {"labels": {"x": "1"}}}, env.namespace)
    env.api.create(configmap(env, "not-a-pod"))
    env.api.delete("Pod", "a", env.namespace)
    watch = env.api.watch(
        "Pod",
        env.namespace,
        resource_version=first["metadata"]["resourceVersion"],
        timeout_seconds=5,
    )
    events = take(watch, 3)
    assert [e.type for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    assert events[0].object["metadata"]["labels"] == {"x": "1"}
    assert events[1].object["metadata"]["deletionTimestamp"]
    versions = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)


def test_a_watch_from_a_compacted_version_is_served_from_the_watch_history(env):
    first = env.api.create(pod("a", env.namespace))
    second = env.api.create(pod("b", env.namespace))
    env.compact(second["metadata"]["resourceVersion"])
    watch = env.api.watch(
        "Pod",
        env.namespace,
        resource_version=first["metadata"]["resourceVersion"],
        timeout_seconds=2,
    )
    assert [(e.type, e.object["metadata"]["name"]) for e in take(watch, 1)] == [("ADDED", "b")]


def test_a_reflector_keeps_watching_across_a_storage_compaction(env):
    """No 410 for a version the watch history still has: the stream goes on without
    listing again."""
    env.api.create(pod("a", env.namespace))
    stream = list_and_watch(env.api, "Pod", env.namespace, watch_timeout_seconds=5)
    assert names(next(stream)) == ["a"]  # the list
    second = env.api.create(pod("b", env.namespace))
    env.compact(second["metadata"]["resourceVersion"])
    event = next(stream)  # the watch opens now, from the list's (compacted) version
    assert isinstance(event, WatchEvent)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")
    stream.close()


def test_watch_with_selector_sees_objects_leave_and_enter(env):
    env.api.create(pod("a", env.namespace, labels={"app": "web"}))
    rv = env.api.list("Pod", env.namespace).resource_version
    watch = env.api.watch(
        "Pod", env.namespace, resource_version=rv, label_selector="app=web", timeout_seconds=5
    )
    env.api.patch("Pod", "a", {"metadata": {"labels": {"app": "db"}}}, env.namespace)
    env.api.patch("Pod", "a", {"metadata": {"labels": {"app": "web"}}}, env.namespace)
    env.api.create(pod("b", env.namespace, labels={"app": "db"}))
    env.api.create(pod("c", env.namespace, labels={"app": "web"}))
    events = take(watch, 3)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"),
        ("ADDED", "a"),
        ("ADDED", "c"),
    ]


def test_watch_field_selector_by_node(env):
    rv = env.api.list("Pod", env.namespace).resource_version
    watch = env.api.watch(
        "Pod",
        env.namespace,
        field_selector="spec.nodeName=node-1",
        resource_version=rv,
        timeout_seconds=5,
    )
    env.api.create(pod("a", env.namespace, spec={"nodeName": "node-2"}))
    env.api.create(pod("b", env.namespace, spec={"nodeName": "node-1"}))
    assert [e.object["metadata"]["name"] for e in take(watch, 1)] == ["b"]


def test_a_watch_ends_at_its_timeout_with_no_more_than_bookmarks(env):
    env.api.create(pod("a", env.namespace))
    rv = env.api.list("Pod", env.namespace).resource_version
    opened = time.monotonic()
    events = list(
        env.api.watch(
            "Pod", env.namespace, resource_version=rv, timeout_seconds=1, allow_bookmarks=True
        )
    )
    assert time.monotonic() - opened < 3.0
    assert all(e.type == "BOOKMARK" for e in events)  # a bookmark may come; none is promised


# ---------------------------------------------------------------- finalizers and deletion


def test_finalizer_flow(env):
    env.api.create(configmap(env, "cfg"))
    env.api.patch(
        "ConfigMap", "cfg", {"metadata": {"finalizers": ["example.com/hold"]}}, env.namespace
    )
    rv = env.api.list("ConfigMap", env.namespace).resource_version
    watch = env.api.watch("ConfigMap", env.namespace, resource_version=rv, timeout_seconds=5)
    start = env.now()
    marked = env.api.delete("ConfigMap", "cfg", env.namespace)
    assert env.stamped_within(marked["metadata"]["deletionTimestamp"], start, env.now())
    assert env.api.get("ConfigMap", "cfg", env.namespace)["metadata"]["finalizers"] == [
        "example.com/hold"
    ]
    with pytest.raises(Invalid) as error:
        env.api.patch(
            "ConfigMap",
            "cfg",
            {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
            env.namespace,
        )
    assert {c.field for c in error.value.causes} == {"metadata.finalizers"}  # real: twice
    assert 'found new finalizers []string{"example.com/new"}' in error.value.causes[0].message
    env.api.patch("ConfigMap", "cfg", {"metadata": {"finalizers": None}}, env.namespace)
    with pytest.raises(NotFound):
        env.api.get("ConfigMap", "cfg", env.namespace)
    assert [e.type for e in take(watch, 2)] == ["MODIFIED", "DELETED"]


def test_delete_answers_a_status_for_what_goes_and_the_object_for_what_stays(env):
    gone = env.api.create(configmap(env, "gone"))
    answer = env.api.delete("ConfigMap", "gone", env.namespace)
    assert (answer["kind"], answer["status"]) == ("Status", "Success")
    assert answer["details"] == {
        "name": "gone",
        "kind": "configmaps",
        "uid": gone["metadata"]["uid"],
    }
    pool = env.api.create(nodepool(env))
    answer = env.api.delete("NodePool", pool["metadata"]["name"])
    assert answer["details"]["group"] == "karpenter.sh"
    env.api.create(pod("web", env.namespace))
    answer = env.api.delete("Pod", "web", env.namespace)
    assert (answer["kind"], answer["metadata"]["deletionGracePeriodSeconds"]) == ("Pod", 0)


def test_delete_preconditions(env):
    created = env.api.create(configmap(env, "cfg"))
    with pytest.raises(Conflict):
        env.api.delete("ConfigMap", "cfg", env.namespace, preconditions={"uid": "other"})
    env.api.delete(
        "ConfigMap", "cfg", env.namespace, preconditions={"uid": created["metadata"]["uid"]}
    )
    with pytest.raises(NotFound):
        env.api.delete("ConfigMap", "cfg", env.namespace)


def test_bound_pod_deletion_is_graceful(env):
    spec = {"nodeName": "node-a", "terminationGracePeriodSeconds": 20}
    created = env.api.create(pod("web", env.namespace, spec=spec))
    start = env.now()
    marked = env.api.delete("Pod", "web", env.namespace)
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 20
    assert marked["metadata"]["generation"] == created["metadata"]["generation"] + 1
    assert env.stamped_within(marked["metadata"]["deletionTimestamp"], start + 20, env.now() + 20)
    env.api.delete("Pod", "web", env.namespace, grace_period_seconds=0)  # as the kubelet does
    with pytest.raises(NotFound):
        env.api.get("Pod", "web", env.namespace)


def test_an_unbound_pod_is_marked_then_deleted_in_the_call(env):
    env.api.create(pod("web", env.namespace))
    rv = env.api.list("Pod", env.namespace).resource_version
    watch = env.api.watch("Pod", env.namespace, resource_version=rv, timeout_seconds=5)
    env.api.delete("Pod", "web", env.namespace)
    with pytest.raises(NotFound):
        env.api.get("Pod", "web", env.namespace)
    events = take(watch, 2)
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    assert events[0].object["metadata"]["deletionGracePeriodSeconds"] == 0


# ---------------------------------------------------------------- garbage collection


def test_background_gc_deletes_owned_objects(env):
    owner = env.api.create(configmap(env, "owner"))
    other = env.api.create(configmap(env, "other"))
    env.api.create(configmap(env, "only-owned", owners=[owner]))
    co_owned = configmap(env, "co-owned", owners=[other])
    co_owned["metadata"]["ownerReferences"].append(owner_ref(owner) | {"controller": False})
    env.api.create(co_owned)
    env.api.delete("ConfigMap", "owner", env.namespace)
    env.eventually(
        lambda: _without_root_ca(env) == ["co-owned", "other"], "the owned objects to go"
    )
    survivor = env.eventually(
        lambda: (
            (s := env.api.get("ConfigMap", "co-owned", env.namespace))
            and len(s["metadata"]["ownerReferences"]) == 1
            and s
        ),
        "the dangling reference to go",
    )
    assert [r["name"] for r in survivor["metadata"]["ownerReferences"]] == ["other"]


def _without_root_ca(env: Target) -> list[str]:
    """The namespace's ConfigMaps but the one kube-controller-manager publishes in each."""
    return [n for n in names(env.api.list("ConfigMap", env.namespace)) if n != "kube-root-ca.crt"]


def test_gc_cascades_across_kinds_and_respects_finalizers(env):
    pool = env.api.create(nodepool(env))
    claim_name = env.name("claim")
    env.api.create(nodeclaim(claim_name, owner=pool))
    env.api.delete("NodePool", pool["metadata"]["name"])
    env.eventually(
        lambda: env.api.get("NodeClaim", claim_name)["metadata"].get("deletionTimestamp"),
        "the NodeClaim to be deleted (the termination finalizer holds it)",
    )
    env.api.patch("NodeClaim", claim_name, {"metadata": {"finalizers": None}})
    assert claim_name not in names(env.api.list("NodeClaim"))


def test_foreground_deletion_waits_for_dependents(env):
    owner = env.api.create(configmap(env, "owner"))
    held = configmap(env, "held", owners=[owner])
    held["metadata"]["finalizers"] = ["example.com/hold"]
    env.api.create(held)
    env.api.delete("ConfigMap", "owner", env.namespace, propagation_policy="Foreground")
    waiting = env.api.get("ConfigMap", "owner", env.namespace)
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    env.eventually(
        lambda: env.api.get("ConfigMap", "held", env.namespace)["metadata"].get(
            "deletionTimestamp"
        ),
        "the dependent to be deleted",
    )
    assert env.api.get("ConfigMap", "owner", env.namespace)["metadata"]["finalizers"] == [
        "foregroundDeletion"
    ]
    env.api.patch("ConfigMap", "held", {"metadata": {"finalizers": None}}, env.namespace)
    env.eventually(lambda: _without_root_ca(env) == [], "the owner to go")


def test_orphan_deletion_keeps_dependents(env):
    owner = env.api.create(configmap(env, "owner"))
    env.api.create(configmap(env, "child", owners=[owner]))
    env.api.delete("ConfigMap", "owner", env.namespace, propagation_policy="Orphan")
    env.eventually(lambda: _without_root_ca(env) == ["child"], "the owner to go")
    assert "ownerReferences" not in env.api.get("ConfigMap", "child", env.namespace)["metadata"]


def test_dangling_owner_reference_is_collected(env):
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "00000000-0000-4000-8000-000000000000"},
    }
    env.api.create(configmap(env, "child", owners=[ghost]))
    env.eventually(lambda: _without_root_ca(env) == [], "the orphan to be collected")


# ---------------------------------------------------------------- eviction and binding


def _budget(env: Target, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": env.namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}},
    }


def _budget_status(env: Target, *fields: str) -> tuple[Any, ...]:
    status = env.api.get("PodDisruptionBudget", "web", env.namespace).get("status") or {}
    return tuple(status.get(f) for f in fields)


def test_eviction_blocked_by_pdb(env):
    env.api.create(_budget(env, 2))
    ready_pod(env, "web-1", {"app": "web"})
    ready_pod(env, "web-2", {"app": "web"})
    env.eventually(
        lambda: (
            _budget_status(env, "observedGeneration", "currentHealthy", "disruptionsAllowed")
            == (1, 2, 0)
        ),
        "the disruption controller",
    )
    with pytest.raises(TooManyRequests) as error:
        env.api.evict("web-1", env.namespace)
    assert error.value.code == 429
    assert error.value.causes[0].reason == "DisruptionBudget"
    assert env.api.get("Pod", "web-1", env.namespace)["metadata"].get("deletionTimestamp") is None


def test_eviction_admitted_updates_pdb_status(env):
    env.api.create(_budget(env, 2))
    for i in range(3):
        ready_pod(env, f"web-{i}", {"app": "web"})
    env.eventually(
        lambda: (
            _budget_status(env, "currentHealthy", "desiredHealthy", "disruptionsAllowed")
            == (3, 2, 1)
        ),
        "the disruption controller",
    )
    env.api.evict("web-0", env.namespace)
    evicted = env.api.get("Pod", "web-0", env.namespace)
    assert evicted["metadata"]["deletionTimestamp"]  # bound: terminating until the kubelet
    assert _budget_status(env, "disruptionsAllowed") == (0,)
    with pytest.raises(TooManyRequests):
        env.api.evict("web-1", env.namespace)
    env.eventually(
        lambda: _budget_status(env, "currentHealthy", "disruptionsAllowed") == (2, 0),
        "the disruption controller to count the evicted pod out",
    )


def test_eviction_of_pod_without_budget_deletes_it(env):
    env.api.create(pod("lonely", env.namespace))
    env.api.evict("lonely", env.namespace)
    with pytest.raises(NotFound):
        env.api.get("Pod", "lonely", env.namespace)
    with pytest.raises(NotFound):
        env.api.evict("lonely", env.namespace)


def test_binding_sets_node_once(env):
    env.api.create(pod("web", env.namespace))
    env.api.bind("web", env.namespace, "node-a")
    bound = env.api.get("Pod", "web", env.namespace)
    assert bound["spec"]["nodeName"] == "node-a"
    assert [(c["type"], c["status"]) for c in bound["status"]["conditions"]] == [
        ("PodScheduled", "True")
    ]
    with pytest.raises(Conflict):
        env.api.bind("web", env.namespace, "node-b")


# ---------------------------------------------------------------- namespaces


def test_deleting_a_namespace_deletes_its_pods_first_then_the_rest(env):
    team = env.name("team")
    env.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}})
    env.api.create(pod("web", team, spec={"nodeName": "node-a"}))
    env.api.create(configmap(env, "cfg") | {"metadata": {"name": "cfg", "namespace": team}})
    env.api.delete("Namespace", team)
    terminating = env.api.get("Namespace", team)
    assert terminating["status"]["phase"] == "Terminating"
    with pytest.raises(Forbidden):
        env.api.create(pod("late", team))
    env.eventually(
        lambda: env.api.get("Pod", "web", team)["metadata"].get("deletionTimestamp"),
        "the namespace controller to delete the pod",
    )
    assert "cfg" in names(env.api.list("ConfigMap", team))  # the rest waits for the pods
    env.api.delete("Pod", "web", team, grace_period_seconds=0)  # as the kubelet does
    env.eventually(lambda: "cfg" not in names(env.api.list("ConfigMap", team)), "the rest")
    env.eventually(lambda: team not in names(env.api.list("Namespace")), "the namespace to go")


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
    budget = _budget(env, 1)
    budget["spec"] = spec
    with pytest.raises(Invalid) as error:
        env.api.create(budget)
    assert [c.field for c in error.value.causes] == fields


def test_crd_status_is_validated(env):
    name = env.api.create(nodepool(env))["metadata"]["name"]
    with pytest.raises(Invalid) as error:
        env.api.patch("NodePool", name, {"status": {"nodes": "three"}}, subresource="status")
    # the schema's type check, then the scale subresource's read of its replicas path
    assert [c.field for c in error.value.causes] == ["status.nodes", ".status.nodes", "<nil>"]
    assert error.value.causes[0].reason == "FieldValueTypeInvalid"
    assert "some validation rules were not checked" in error.value.causes[2].message


def test_scale_subresource_reads_status_replicas_as_int32(env):
    name = env.api.create(nodepool(env))["metadata"]["name"]
    with pytest.raises(Invalid) as error:
        env.api.patch("NodePool", name, {"status": {"nodes": -1}}, subresource="status")
    assert [c.field for c in error.value.causes] == ["status.nodes", ".status.nodes"]
    with pytest.raises(Invalid) as error:
        env.api.patch("NodePool", name, {"status": {"nodes": 2**31}}, subresource="status")
    assert [c.field for c in error.value.causes] == [".status.nodes"]
