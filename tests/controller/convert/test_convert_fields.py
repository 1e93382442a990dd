"""The table of ``joiner.convert.fields`` against every field of the old kinds: each is
mapped to a v1 field or listed as having no equivalent, with a message, and the table
names no field the old kinds did not have."""

from __future__ import annotations

import pytest
import upstream_fields as upstream
from joiner.convert import fields

CASES = [
    (fields.PROVISIONER, upstream.PROVISIONER),
    (fields.AWS_NODE_TEMPLATE, upstream.AWS_NODE_TEMPLATE),
    (fields.NODEPOOL_V1BETA1, upstream.NODEPOOL),
    (fields.NODECLAIM_V1BETA1, upstream.NODECLAIM),
    (fields.EC2NODECLASS_V1BETA1, upstream.EC2NODECLASS),
]


def _covering(table: tuple[fields.Field, ...], path: str) -> fields.Field | None:
    """The entry for ``path``: its own, or that of an ancestor that carries its whole
    subtree (one with entries beneath it reports, and refuses, children it does not name,
    as ``joiner.convert.notes`` does)."""
    by_path = {entry.path: entry for entry in table}
    if path in by_path:
        return by_path[path]
    while "." in path:
        path = path.rpartition(".")[0].removesuffix("[]")
        beneath = any(p.startswith((f"{path}.", f"{path}[].")) for p in by_path)
        if path in by_path and not beneath:
            return by_path[path]
    return None


@pytest.mark.parametrize(("kind", "old_fields"), CASES, ids=[k[1] for k, _ in CASES])
def test_every_old_field_is_mapped_or_has_no_equivalent_with_a_message(
    kind: tuple[str, str], old_fields: tuple[str, ...]
) -> None:
    table = fields.TABLES[kind]
    for path in old_fields:
        entry = _covering(table, path)
        assert entry is not None, f"{kind[1]} {path} is in no entry of the table"
        if entry.target is None:
            assert entry.message, f"{kind[1]} {path}: no equivalent, but no message"


@pytest.mark.parametrize(("kind", "old_fields"), CASES, ids=[k[1] for k, _ in CASES])
def test_the_table_names_only_fields_of_the_old_kind(
    kind: tuple[str, str], old_fields: tuple[str, ...]
) -> None:
    def known(path: str) -> bool:
        return any(p == path or p.startswith((f"{path}.", f"{path}[].")) for p in old_fields)

    invented = [entry.path for entry in fields.TABLES[kind] if not known(entry.path)]
    assert invented == []


def test_the_fields_with_no_equivalent_are_these() -> None:
    """The list docs/convert.md gives; a change here is a change to that page."""
    no_equivalent = {
        (kind[1], entry.path)
        for kind, table in fields.TABLES.items()
        for entry in table
        if entry.target is None and entry.path != "status"
    }
    assert no_equivalent == {
        ("Provisioner", "spec.kubeletConfiguration.containerRuntime"),
        ("Provisioner", "spec.provider.blockDeviceMappings[].virtualName"),
        ("Provisioner", "spec.provider.launchTemplate"),
        ("Provisioner", "spec.provider.apiVersion"),
        ("Provisioner", "spec.provider.kind"),
        ("AWSNodeTemplate", "spec.blockDeviceMappings[].virtualName"),
        ("AWSNodeTemplate", "spec.launchTemplate"),
        ("NodePool", "spec.template.spec.resources"),
        ("NodeClaim", "spec.kubelet"),
    }
