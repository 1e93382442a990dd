"""Memory-adapter behaviour beyond the shared contract: simulator hooks, the emulated
controllers on the virtual clock, disruption-budget arithmetic, determinism and
threading."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from joiner.clock import FakeClock, RealClock
from joiner.kube.api import BadRequest, Gone, InternalError, Invalid, NotFound, TooManyRequests
from joiner.kube.controllermanager import GC_DELAY, POD_GC_QUARANTINE
from joiner.kube.memory import MemoryKube
from kube_helpers import pod, ready_pod, settle


def names(items: Any) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def replicaset(api: MemoryKube, name: str, replicas: int) -> dict[str, Any]:
    return api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
        }
    )


def owned_by(owner: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]


def budget(api: MemoryKube, spec: dict[str, Any], name: str = "web") -> None:
    api.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        }
    )


def pdb_status(api: MemoryKube, name: str = "web") -> dict[str, Any]:
    """The budget's status once the disruption controller has seen everything."""
    settle(api)
    return api.get("PodDisruptionBudget", name, "default")["status"]


@pytest.mark.parametrize("shared", [False, True])
def test_drained_objects_are_shared_between_watches_only_when_asked(shared: bool):
    store = MemoryKube(FakeClock(), share_watched_objects=shared)
    first, second = store.watch("Pod"), store.watch("Pod")
    store.create(pod("a"))
    [one], [other] = first.drain(), second.drain()
    assert one.object == other.object
    assert (one.object is other.object) is shared
    one.object["metadata"]["labels"] = {"edited": "by a reader"}  # never do this when shared
    assert "edited" not in store.get("Pod", "a", "default")["metadata"]["labels"]


def test_drain_is_non_blocking_and_incremental(store):
    watch = store.watch("Pod", "default")
    assert watch.drain() == []
    store.create(pod("a"))
    store.create(pod("b"))
    assert [(e.type, e.object["metadata"]["name"]) for e in watch.drain()] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]
    assert watch.drain() == []
    watch.stop()
    store.create(pod("c"))
    assert watch.drain() == []


def test_drained_objects_are_copies(store):
    watch = store.watch("Pod", "default")
    store.create(pod("a", labels={"app": "web"}))
    event = watch.drain()[0]
    event.object["metadata"]["labels"]["app"] = "changed"
    assert store.get("Pod", "a", "default")["metadata"]["labels"] == {"app": "web"}


def test_garbage_collection_happens_after_the_measured_delay(store, clock):
    owner = replicaset(store, "web", 1)
    store.create(pod("web-1", ownerReferences=owned_by(owner)))
    store.delete("ReplicaSet", "web", "default")
    assert names(store.list("Pod")) == ["web-1"]
    assert store.next_due() == clock.now() + GC_DELAY
    assert store.run_controllers() == 0  # not yet
    clock.advance(GC_DELAY)
    assert store.run_controllers() == 1
    assert names(store.list("Pod")) == []
    assert store.next_due() is None


def test_a_threaded_store_runs_its_controllers_on_the_wall_clock():
    store = MemoryKube(RealClock(), controllers="threaded")
    try:
        owner = replicaset(store, "web", 1)
        store.create(pod("web-1", ownerReferences=owned_by(owner)))
        store.delete("ReplicaSet", "web", "default")
        deadline = time.monotonic() + 5
        while store.list("Pod").items and time.monotonic() < deadline:
            time.sleep(0.01)
        assert names(store.list("Pod")) == []
    finally:
        store.close()


def test_pods_of_a_deleted_node_go_after_the_pod_gc_quarantine(store, clock):
    for name in ("node-a", "node-b"):
        store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    ready_pod(store, "web-1", {"app": "web"})
    store.create(pod("elsewhere", spec={"nodeName": "node-b"}))
    store.delete("Pod", "web-1", "default")  # graceful: stays Terminating
    store.delete("Node", "node-a")
    settle(store, POD_GC_QUARANTINE - 1)
    assert names(store.list("Pod")) == ["elsewhere", "web-1"]
    settle(store, 1)
    assert names(store.list("Pod")) == ["elsewhere"]


def test_same_seed_same_uids_and_names():
    def run() -> list[str]:
        api = MemoryKube(FakeClock(), seed=7)
        created = [api.create(pod("", generateName="web-")) for _ in range(3)]
        return [c["metadata"]["name"] + c["metadata"]["uid"] for c in created]

    assert run() == run()


def test_history_limit_compacts_old_versions(clock):
    """Beyond the history kept (the watch cache), a resourceVersion is Gone."""
    api = MemoryKube(clock, watch_history=3)
    first = api.create(pod("a"))
    for i in range(10):
        api.patch("Pod", "a", {"metadata": {"labels": {"n": str(i)}}}, "default")
    with pytest.raises(Gone):
        api.watch("Pod", resource_version=first["metadata"]["resourceVersion"])
    recent = str(int(api.resource_version) - 1)
    assert [e.type for e in api.watch("Pod", resource_version=recent).drain()] == ["MODIFIED"]


def test_bad_resource_version_is_bad_request(store):
    with pytest.raises(BadRequest):
        store.watch("Pod", resource_version="yesterday")


def test_blocking_watch_across_threads(store):
    watch = store.watch("Pod", "default", timeout_seconds=10)
    seen: list[str] = []

    def consume() -> None:
        for event in watch:
            seen.append(event.object["metadata"]["name"])
            break

    thread = threading.Thread(target=consume)
    thread.start()
    store.create(pod("a"))
    thread.join(timeout=10)
    watch.stop()
    assert seen == ["a"]


def test_stop_wakes_a_blocked_watch(store):
    watch = store.watch("Pod", "default", timeout_seconds=30)
    done = threading.Event()

    def consume() -> None:
        list(watch)
        done.set()

    thread = threading.Thread(target=consume)
    thread.start()
    watch.stop()
    thread.join(timeout=10)
    assert done.is_set()


def test_max_unavailable_uses_controller_scale(store):
    owner = replicaset(store, "web", 4)
    budget(store, {"maxUnavailable": "25%"})
    for i in range(3):  # one replica missing: 3 of 4 healthy
        ready_pod(store, f"web-{i}", {"app": "web"}, ownerReferences=owned_by(owner))
    status = pdb_status(store)
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"]) == (4, 3, 3)
    assert status["disruptionsAllowed"] == 0
    assert status["conditions"][0]["reason"] == "InsufficientPods"


def test_percentage_budget_without_controller_allows_nothing(store):
    budget(store, {"minAvailable": "50%"})
    ready_pod(store, "web-0", {"app": "web"})
    ready_pod(store, "web-1", {"app": "web"})
    status = pdb_status(store)
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (0, 0)


def test_unhealthy_pod_evictable_while_budget_is_met(store):
    budget(store, {"minAvailable": 1})
    ready_pod(store, "web-0", {"app": "web"})
    sick = ready_pod(store, "web-1", {"app": "web"})
    sick["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    store.update_status(sick)
    assert pdb_status(store)["disruptionsAllowed"] == 0
    store.evict("web-1", "default")  # not healthy, and the budget is met without it
    assert store.get("Pod", "web-1", "default")["metadata"]["deletionTimestamp"]
    with pytest.raises(TooManyRequests):
        store.evict("web-0", "default")


def test_pending_pod_eviction_ignores_budget(store):
    budget(store, {"minAvailable": 5})
    store.create(pod("web-0", labels={"app": "web"}))
    store.evict("web-0", "default")
    with pytest.raises(NotFound):
        store.get("Pod", "web-0", "default")


def test_two_budgets_for_one_pod_is_an_error(store):
    budget(store, {"minAvailable": 0}, name="one")
    budget(store, {"minAvailable": 0}, name="two")
    ready_pod(store, "web-0", {"app": "web"})
    with pytest.raises(InternalError) as error:
        store.evict("web-0", "default")
    assert error.value.code == 500


def test_budget_status_reaches_watchers_when_the_disruption_controller_writes_it(store):
    budget(store, {"minAvailable": 1})
    watch = store.watch("PodDisruptionBudget", "default")
    assert [e.object.get("status") for e in watch.drain()] == [None]
    settle(store)
    assert [e.object["status"]["disruptionsAllowed"] for e in watch.drain()] == [0]
    ready_pod(store, "web-0", {"app": "web"})
    ready_pod(store, "web-1", {"app": "web"})
    assert watch.drain() == []  # the controller has not acted yet
    settle(store)
    assert [e.object["status"]["disruptionsAllowed"] for e in watch.drain()] == [1]


def test_the_disruption_controller_forgets_an_evicted_pod_once_it_is_deleting(store):
    budget(store, {"minAvailable": 1})
    ready_pod(store, "web-0", {"app": "web"})
    ready_pod(store, "web-1", {"app": "web"})
    settle(store)
    store.evict("web-0", "default")  # bound: marked, terminating
    assert "web-0" in store.get("PodDisruptionBudget", "web", "default")["status"]["disruptedPods"]
    assert "disruptedPods" not in pdb_status(store)


def test_malformed_objects_are_bad_requests(store):
    with pytest.raises(BadRequest, match="not a JSON object"):
        store.create(["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(BadRequest, match="Kind' is missing"):
        store.create({"apiVersion": "v1", "metadata": {"name": "x"}})
    with pytest.raises(
        BadRequest, match=r"Go struct field ConfigMap\.metadata of type v1\.ObjectMeta"
    ):
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}})
    with pytest.raises(Invalid):
        store.patch(
            "ConfigMap",
            "cfg",
            [{"op": "replace", "path": "", "value": 3}],
            "default",
            patch_type="json",
        )


def test_namespaced_get_needs_a_namespace(store):
    with pytest.raises(BadRequest):
        store.get("Pod", "a")


def test_returned_objects_do_not_alias_the_store(store):
    created = store.create(pod("a", labels={"app": "web"}))
    created["metadata"]["labels"]["app"] = "changed"
    store.list("Pod").items[0]["metadata"]["labels"]["app"] = "changed"
    assert store.get("Pod", "a", "default")["metadata"]["labels"] == {"app": "web"}


def test_values_that_are_not_json_data_are_invalid(store):
    odd = pod("a")
    odd["metadata"]["annotations"] = {"when": object()}
    with pytest.raises(Invalid) as error:
        store.create(odd)
    assert error.value.code == 422
