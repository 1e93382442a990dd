"""The memory store over HTTP: REST paths and errors as the API server has them, and
kubectl working against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from joiner.kube.memory import MemoryKube
from joiner.kube.server import KubeHTTPServer


def test_rest_errors_are_status_objects(server: KubeHTTPServer):
    missing = httpx.get(f"{server.url}/api/v1/namespaces/default/pods/nope")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"
    unknown = httpx.get(f"{server.url}/apis/example.com/v1/gadgets")
    assert unknown.status_code == 404
    mismatch = httpx.post(
        f"{server.url}/api/v1/namespaces/default/configmaps",
        json={"metadata": {"name": "x", "namespace": "other"}},
    )
    assert mismatch.status_code == 400
    not_json = httpx.post(f"{server.url}/api/v1/namespaces/default/configmaps", content=b"{")
    assert not_json.status_code == 400
    bad_patch = httpx.patch(
        f"{server.url}/api/v1/namespaces/default/configmaps/x",
        content=b"{}",
        headers={"Content-Type": "text/plain"},
    )
    assert bad_patch.status_code == 415


def test_discovery_lists_the_served_kinds(server: KubeHTTPServer):
    groups = httpx.get(f"{server.url}/apis").json()
    assert {g["name"] for g in groups["groups"]} >= {"apps", "karpenter.sh", "karpenter.k8s.aws"}
    resources = httpx.get(f"{server.url}/apis/karpenter.sh/v1").json()["resources"]
    assert {r["name"] for r in resources} == {
        "nodepools",
        "nodepools/status",
        "nodeclaims",
        "nodeclaims/status",
    }


def test_put_name_must_match_url(server: KubeHTTPServer, store: MemoryKube):
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    answer = httpx.put(
        f"{server.url}/api/v1/namespaces/default/configmaps/a",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
    )
    assert answer.status_code == 400


@pytest.fixture
def kubectl(server: KubeHTTPServer, tmp_path: Path):
    binary = shutil.which("kubectl") or str(Path(sys.executable).parent / "kubectl")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "memory", "cluster": {"server": server.url}}],
        "users": [{"name": "me", "user": {"token": "unused"}}],
        "contexts": [{"name": "sim", "context": {"cluster": "memory", "user": "me"}}],
        "current-context": "sim",
    }
    (tmp_path / "config").write_text(json.dumps(config))
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "config"), "HOME": str(tmp_path)}

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [binary, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    return run


def test_kubectl_against_the_memory_store(kubectl, store: MemoryKube):
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    }
    assert (
        kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(manifest))
        == "pod/web created"
    )
    assert kubectl("get", "pods", "-o", "name") == "pod/web"
    assert kubectl("label", "pod", "web", "tier=front") == "pod/web labeled"
    assert store.get("Pod", "web", "default")["metadata"]["labels"] == {
        "app": "web",
        "tier": "front",
    }
    kubectl("delete", "pod", "web")
    assert store.list("Pod").items == []
