"""The field types of the built-in kinds the in-memory API server serves, as
kube-apiserver v1.36 decodes them.

``coreschema.json`` beside this module is generated from the real server's OpenAPI v3
documents (``python -m joiner.kube.coreschema`` starts an envtest control plane and
rewrites it; a test in the envtest tier checks it is what the server serves). It keeps
only what decoding needs: for each type its fields and their types, and for lists the
strategic-merge-patch strategy and merge key.

A field type is one of:

* a scalar: ``string``, ``int64``, ``int32``, ``float64``, ``bool``, ``bytes`` (base64),
  ``time`` (RFC 3339), ``quantity`` (a string or a number), ``int-or-string``, or ``any``
  (raw JSON, kept as sent);
* the name of another type (``core.v1.PodSpec``);
* ``["list", item, merge_key, strategy]`` (merge key and strategy may be null);
* ``["map", value]`` (string keys).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).with_name("coreschema.json")
# The group-versions of the built-in kinds of ``joiner.kube.resources``.
GROUP_VERSIONS = (
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/policy/v1",
    "apis/storage.k8s.io/v1",
    "apis/coordination.k8s.io/v1",
)
SCALARS = frozenset(
    {"string", "int64", "int32", "float64", "bool", "bytes", "time", "quantity", "int-or-string"}
)
ANY = "any"
_REF = "#/components/schemas/"
# OpenAPI names of types that decode as scalars.
_SCALAR_TYPES = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "time",
}
_PREFIXES = ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis.", "io.k8s.apimachinery.pkg.")


@dataclass(frozen=True)
class CoreSchema:
    """The kinds (``apiVersion/Kind`` -> type name) and the fields of every type."""

    kinds: dict[str, str]
    types: dict[str, dict[str, Any]]

    def kind_type(self, api_version: str, kind: str) -> str | None:
        return self.kinds.get(f"{api_version}/{kind}")


@cache
def core_schema() -> CoreSchema:
    """The shipped schema (read once)."""
    document = json.loads(SCHEMA_FILE.read_text())
    return CoreSchema(document["kinds"], document["types"])


def go_type(field_type: Any) -> str:
    """How Go names a field type in a decoding error (``int64``, ``v1.PodSpec``,
    ``[]v1.Container``, ``map[string]string``)."""
    if isinstance(field_type, list):
        if field_type[0] == "list":
            return "[]" + go_type(field_type[1])
        return "map[string]" + go_type(field_type[1])
    named = {
        "float64": "float64",
        "bool": "bool",
        "bytes": "[]uint8",
        "time": "v1.Time",
        "quantity": "resource.Quantity",
        "int-or-string": "intstr.IntOrString",
        ANY: "interface {}",
    }
    if field_type in named:
        return named[field_type]
    if field_type in SCALARS:
        return str(field_type)
    version, name = str(field_type).split(".")[-2:]
    return f"{version}.{name}"


# -- generation from the server's OpenAPI ---------------------------------------------------


def from_openapi(documents: Iterable[dict[str, Any]], kinds: Iterable[tuple[str, str]]) -> dict:
    """The JSON document of ``coreschema.json``: the types reachable from ``kinds``
    ((apiVersion, Kind) pairs) in the OpenAPI v3 ``documents``."""
    schemas: dict[str, dict[str, Any]] = {}
    for document in documents:
        schemas.update(document["components"]["schemas"])
    by_kind = {
        (_api_version(gvk), gvk["kind"]): name
        for name, schema in schemas.items()
        for gvk in schema.get("x-kubernetes-group-version-kind") or []
    }
    wanted = {f"{api_version}/{kind}": by_kind[(api_version, kind)] for api_version, kind in kinds}
    types: dict[str, dict[str, Any]] = {}
    pending = list(wanted.values())
    while pending:
        name = pending.pop()
        short = _short(name)
        if short in types or name in _SCALAR_TYPES:
            continue
        fields = {
            field: _field_type(spec, pending)
            for field, spec in sorted((schemas[name].get("properties") or {}).items())
        }
        types[short] = fields
    return {
        "source": "kube-apiserver /openapi/v3 (" + ", ".join(GROUP_VERSIONS) + ")",
        "kinds": {key: _short(name) for key, name in sorted(wanted.items())},
        "types": dict(sorted(types.items())),
    }


def _api_version(gvk: dict[str, str]) -> str:
    return f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]


def _short(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _field_type(spec: dict[str, Any], pending: list[str]) -> Any:
    ref = spec.get("$ref") or next(
        (part["$ref"] for part in spec.get("allOf") or [] if "$ref" in part), None
    )
    if ref is not None:
        name = ref.removeprefix(_REF)
        if name in _SCALAR_TYPES:
            return _SCALAR_TYPES[name]
        pending.append(name)
        return _short(name)
    kind = spec.get("type")
    if kind == "array":
        return [
            "list",
            _field_type(spec["items"], pending),
            spec.get("x-kubernetes-patch-merge-key"),
            spec.get("x-kubernetes-patch-strategy"),
        ]
    if kind == "object":
        values = spec.get("additionalProperties")
        return ["map", _field_type(values, pending)] if isinstance(values, dict) else ANY
    if kind == "integer":
        return "int32" if spec.get("format") == "int32" else "int64"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "string":
        return {"byte": "bytes", "date-time": "time"}.get(spec.get("format") or "", "string")
    return ANY


def dump(document: dict[str, Any]) -> str:
    """The text of ``coreschema.json``: one line per kind and per type, so that a
    regeneration shows as a readable diff."""

    def lines(section: dict[str, Any]) -> str:
        return ",\n".join(
            f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in section.items()
        )

    return (
        f'{{"source": {json.dumps(document["source"])},\n'
        f'"kinds": {{\n{lines(document["kinds"])}\n}},\n'
        f'"types": {{\n{lines(document["types"])}\n}}}}\n'
    )


def main() -> None:
    """Rewrite ``coreschema.json`` from a fresh envtest control plane's OpenAPI."""
    import tempfile

    from joiner.kube.resources import default_registry
    from joiner.testing.assets import find_envtest
    from joiner.testing.envtest import ControlPlane

    kinds = [(k.api_version, k.kind) for k in default_registry() if not k.custom]
    with (
        tempfile.TemporaryDirectory() as workdir,
        ControlPlane(find_envtest(), Path(workdir)) as plane,
    ):
        documents = plane.openapi(GROUP_VERSIONS)
    SCHEMA_FILE.write_text(dump(from_openapi(documents, kinds)))
    print(f"wrote {SCHEMA_FILE}", file=sys.stderr)


if __name__ == "__main__":
    main()
