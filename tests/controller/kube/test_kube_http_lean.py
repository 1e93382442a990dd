"""The http adapter as the controller uses it, on a real kube-apiserver: lists read a page
at a time are one snapshot of every item, and no object it returns (got, listed,
written, watched) carries metadata.managedFields, which the server sends with each."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from joiner.kube.http import HttpKube
from joiner.testing import pod
from joiner.testing.envtest import ControlPlane
from kube_helpers import take


@pytest.fixture
def lean(control_plane: ControlPlane) -> Iterator[HttpKube]:
    kube = control_plane.admin_kube(managed_fields=False, page_size=3)
    yield kube
    kube.close()


def _lists(kube: HttpKube) -> list[httpx.URL]:
    """The URLs of the pod lists the client sends from now on."""
    sent: list[httpx.URL] = []
    kube._client.event_hooks["request"].append(  # the adapter's own httpx client
        lambda request: sent.append(request.url) if request.url.path.endswith("/pods") else None
    )
    return sent


def test_a_list_read_in_pages_is_every_item_of_one_snapshot(
    control_plane: ControlPlane, namespace: str, lean: HttpKube
) -> None:
    admin = control_plane.admin_kube()
    names = [f"p{i}" for i in range(7)]
    for name in names:
        admin.create(pod(name, "10m", namespace=namespace))
    whole = admin.list("Pod", namespace)
    sent = _lists(lean)
    paged = lean.list("Pod", namespace)
    admin.close()
    assert sorted(p["metadata"]["name"] for p in paged.items) == names
    assert {p["kind"] for p in paged.items} == {"Pod"}
    assert [url.params.get("limit") for url in sent] == ["3", "3", "3"]
    assert [bool(url.params.get("continue")) for url in sent] == [False, True, True]
    assert int(paged.resource_version) >= int(whole.resource_version)  # the first page's


def test_no_object_comes_back_with_managed_fields(
    control_plane: ControlPlane, namespace: str, lean: HttpKube
) -> None:
    admin = control_plane.admin_kube()
    assert admin.create(pod("full", "10m", namespace=namespace))["metadata"]["managedFields"]
    admin.close()
    before = lean.list("Pod", namespace)
    created = lean.create(pod("lean", "10m", namespace=namespace))
    patched = lean.patch("Pod", "lean", {"metadata": {"labels": {"a": "b"}}}, namespace)
    watch = lean.watch(
        "Pod", namespace, resource_version=before.resource_version, timeout_seconds=30
    )
    watched = [event.object for event in take(watch, 2)]  # lean added, then modified
    objects = [
        *before.items,
        created,
        patched,
        lean.get("Pod", "lean", namespace),
        *lean.list("Pod", namespace).items,
        *watched,
    ]
    assert [o["metadata"]["name"] for o in objects] == ["full"] + ["lean"] * 3 + [
        "full",
        "lean",
        "lean",
        "lean",
    ]
    assert [o for o in objects if "managedFields" in o["metadata"]] == []


def test_objects_read_separately_share_their_strings(
    control_plane: ControlPlane, namespace: str
) -> None:
    """As the controller's client reads them: two pods from two watch events (each
    decoded on its own) hold the same key and value strings, not copies."""
    kube = control_plane.admin_kube(managed_fields=False, shared_strings=True)
    before = kube.list("Pod", namespace)
    watch = kube.watch(
        "Pod", namespace, resource_version=before.resource_version, timeout_seconds=30
    )
    admin = control_plane.admin_kube(managed_fields=False)
    created = [admin.create(pod(name, "10m", namespace=namespace)) for name in ("a", "b")]
    admin.close()
    first, second = (event.object for event in take(watch, 2))
    kube.close()
    assert [first, second] == created  # the same objects as another client reads them
    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]
    assert first["spec"]["tolerations"][0]["key"] is second["spec"]["tolerations"][0]["key"]
    assert all(a is b for a, b in zip(first["spec"], second["spec"], strict=True))  # keys too
