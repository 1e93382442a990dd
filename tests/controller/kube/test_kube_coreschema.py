"""The field types the in-memory server decodes with are what kube-apiserver serves."""

from __future__ import annotations

import json

from joiner.kube.coreschema import GROUP_VERSIONS, SCHEMA_FILE, core_schema, dump, from_openapi
from joiner.kube.resources import default_registry
from joiner.testing.envtest import ControlPlane


def test_the_shipped_schema_is_the_real_servers(control_plane: ControlPlane) -> None:
    """Regenerate with ``python -m joiner.kube.coreschema`` when this fails."""
    kinds = [(k.api_version, k.kind) for k in default_registry() if not k.custom]
    served = from_openapi(control_plane.openapi(GROUP_VERSIONS), kinds)
    assert json.loads(SCHEMA_FILE.read_text()) == served
    assert SCHEMA_FILE.read_text() == dump(served)


def test_every_built_in_kind_of_the_registry_has_its_fields() -> None:
    schema = core_schema()
    for kind in default_registry():
        if not kind.custom:
            type_name = schema.kind_type(kind.api_version, kind.kind)
            assert type_name in schema.types, kind.kind
    pod_spec = schema.types["core.v1.PodSpec"]
    assert pod_spec["containers"] == ["list", "core.v1.Container", "name", "merge"]
    assert pod_spec["terminationGracePeriodSeconds"] == "int64"
