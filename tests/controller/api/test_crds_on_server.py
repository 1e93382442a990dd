"""Joiner's CRDs on the real kube-apiserver, against upstream Karpenter's.

Both sets of CRDs are installed on the session's control plane: Joiner's under their own
groups (as ``joiner render crds`` installs them), upstream's under renamed groups
(``upstream.parity.karpenter.sh``...), the only way both fit on one server. A CRD's group
takes no part in validating its objects, so the verdicts are upstream's; this saves a
second kube-apiserver on a small machine.

Every manifest of the parity corpus, and every object of upstream's examples, is sent as
a server-side dry-run create to both, and given to ``joiner validate``: the three verdicts
and field paths must be the corpus's. Every CEL rule of Joiner's CRDs must be seen on the
server both passing (an accepted manifest that reaches it) and failing (a refusal with its
message at its path); transition rules through dry-run updates of objects created for real.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import yaml
from joiner import testing
from joiner.api.capacitybuffer import WINDOWS_ANNOTATION
from joiner.api.crds import render_crds
from joiner.api.definitions import KINDS, Kind
from joiner.api.schema import Rule, Schema
from joiner.api.validation import apply_defaults, kind_of, validate_object, validate_update, walk
from joiner.cloudprovider.aws.capacityreservations import status_entry
from joiner.kube.http import tls_context
from joiner.testing.envtest import ControlPlane
from parity import (
    UPSTREAM_CRDS,
    UPSTREAM_EXAMPLES,
    Case,
    Update,
    Verdict,
    corpus,
    corpus_files,
    example_files,
    joiner_verdict,
    joiner_warnings,
    server_verdict,
    transitions,
    upstream_examples,
)

UPSTREAM_GROUP = "upstream.parity."  # prefix of the groups upstream's CRDs are installed under
ESTABLISHED_TIMEOUT = 30.0
EXAMPLES = "upstream-examples"


@dataclass(frozen=True)
class Response:
    code: int
    status: dict[str, Any]

    @property
    def verdict(self) -> Verdict:
        return server_verdict(self.code, self.status)

    def causes(self) -> list[dict[str, Any]]:
        return (self.status.get("details") or {}).get("causes") or []


class Servers:
    """Dry runs against Joiner's CRDs (``upstream=False``) or upstream's."""

    def __init__(self, plane: ControlPlane) -> None:
        self.http = httpx.Client(base_url=plane.url, verify=tls_context(plane.admin_config()))
        self._joiner: dict[str, Response] = {}

    def create(self, obj: Any, upstream: bool, dry_run: bool = True) -> Response:
        return self._send("POST", _collection(obj, upstream), _as(obj, upstream), dry_run)

    def update(self, obj: Any, upstream: bool) -> Response:
        path = f"{_collection(obj, upstream)}/{obj['metadata']['name']}"
        return self._send("PUT", path, _as(obj, upstream), dry_run=True)

    def get(self, obj: Any, upstream: bool) -> dict[str, Any]:
        path = f"{_collection(obj, upstream)}/{obj['metadata']['name']}"
        return dict(self.http.get(path).raise_for_status().json())

    def delete(self, obj: Any, upstream: bool) -> None:
        self.http.delete(f"{_collection(obj, upstream)}/{obj['metadata']['name']}")

    def joiner(self, case: Case) -> Response:
        """Joiner's CRDs' answer to a case, asked once per session."""
        if case.name not in self._joiner:
            self._joiner[case.name] = self.create(case.obj, upstream=False)
        return self._joiner[case.name]

    def _send(self, method: str, path: str, obj: Any, dry_run: bool) -> Response:
        params = {"fieldValidation": "Strict"} | ({"dryRun": "All"} if dry_run else {})
        response = self.http.request(method, path, params=params, json=obj)
        return Response(response.status_code, response.json())


def _kind(obj: Any) -> Kind:
    """The kind a case is sent as: its own, or NodePool for one that names none."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return next((k for k in KINDS if k.kind == kind), KINDS[0])


def _collection(obj: Any, upstream: bool) -> str:
    """A namespaced kind's cases go to the default namespace (they name none)."""
    kind = _kind(obj)
    namespace = "namespaces/default/" if kind.namespaced else ""
    group = f"{UPSTREAM_GROUP if upstream else ''}{kind.group}"
    return f"/apis/{group}/{kind.version}/{namespace}{kind.plural}"


def _as(obj: Any, upstream: bool) -> Any:
    if not upstream or not isinstance(obj, dict) or not isinstance(obj.get("apiVersion"), str):
        return obj
    return {**obj, "apiVersion": UPSTREAM_GROUP + obj["apiVersion"]}


# -- installing the CRDs ----------------------------------------------------------------------


_NAMES = ("kind", "listKind", "plural", "singular")


def _upstream_crds() -> list[dict[str, Any]]:
    crds = []
    for path in UPSTREAM_CRDS:
        crd = yaml.safe_load(path.read_text())
        spec = crd["spec"]
        spec["group"] = UPSTREAM_GROUP + spec["group"]
        # no short names or categories: `kubectl get ec2nc` still means Joiner's kind
        spec["names"] = {k: v for k, v in spec["names"].items() if k in _NAMES}
        crd["metadata"] = {"name": f"{spec['names']['plural']}.{spec['group']}"}
        crds.append(crd)
    return crds


def _install(http: httpx.Client, crds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Create or replace each CRD; the CRDs as the server holds them once Established."""
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for crd in crds:
        current = http.get(f"{base}/{crd['metadata']['name']}")
        if current.status_code == 404:
            http.post(base, json=crd).raise_for_status()
        else:
            crd = copy.deepcopy(crd)
            crd["metadata"]["resourceVersion"] = current.json()["metadata"]["resourceVersion"]
            http.put(f"{base}/{crd['metadata']['name']}", json=crd).raise_for_status()
    return [_established(http, f"{base}/{crd['metadata']['name']}") for crd in crds]


def _established(http: httpx.Client, path: str) -> dict[str, Any]:
    deadline = time.monotonic() + ESTABLISHED_TIMEOUT
    while True:
        crd = http.get(path).raise_for_status().json()
        conditions = {
            c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []
        }
        if conditions.get("Established") == "True" or time.monotonic() > deadline:
            return dict(crd)
        time.sleep(0.05)


@pytest.fixture(scope="session")
def installed(control_plane: ControlPlane) -> Iterator[Servers]:
    servers = Servers(control_plane)
    servers.joiner_crds = _install(servers.http, render_crds())  # type: ignore[attr-defined]
    servers.upstream_crds = _install(  # type: ignore[attr-defined]
        servers.http, _upstream_crds()
    )
    yield servers
    servers.http.close()


# -- the tests --------------------------------------------------------------------------------


def test_both_sets_of_crds_are_established(installed: Servers) -> None:
    for crd in installed.joiner_crds + installed.upstream_crds:  # type: ignore[attr-defined]
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["Established"] == "True", crd["metadata"]["name"]
    names = [crd["metadata"]["name"] for crd in installed.joiner_crds]  # type: ignore[attr-defined]
    assert names == [crd["metadata"]["name"] for crd in render_crds()]


def _fields(schema: dict[str, Any], path: str = "") -> Iterator[str]:
    """Every field path a structural schema defines ("spec.taints[].key", "x{*}" where it
    keeps anything)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        yield f"{path}{{*}}"
        return
    for name, child in (schema.get("properties") or {}).items():
        yield f"{path}.{name}".removeprefix(".")
        yield from _fields(child, f"{path}.{name}".removeprefix("."))
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _fields(schema["additionalProperties"], f"{path}.*")
    if isinstance(schema.get("items"), dict):
        yield from _fields(schema["items"], f"{path}[]")


def test_joiner_crds_define_exactly_upstreams_fields(installed: Servers) -> None:
    """An unknown field is refused: a field only one side defines would split verdicts."""

    def by_kind(crds: list[dict[str, Any]]) -> dict[str, set[str]]:
        return {
            crd["spec"]["names"]["kind"]: set(
                _fields(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
            )
            for crd in crds
        }

    joiner = by_kind(installed.joiner_crds)  # type: ignore[attr-defined]
    upstream = by_kind(installed.upstream_crds)  # type: ignore[attr-defined]
    assert joiner == upstream


def _cases(name: str) -> list[Case]:
    return upstream_examples() if name == EXAMPLES else corpus(name)


def _disagreement(case: Case, installed: Servers) -> str | None:
    """What differs between upstream's CRDs, Joiner's, ``joiner validate`` and the corpus."""
    seen = {
        "upstream's CRDs": installed.create(case.obj, upstream=True).verdict,
        "Joiner's CRDs": installed.joiner(case).verdict,
        "joiner validate": joiner_verdict(validate_object(case.obj)),
    }
    if all(verdict == case.expected for verdict in seen.values()):
        warnings = joiner_warnings(case.obj)
        if warnings == case.warnings:
            return None
        return f"{case.name}: warnings {sorted(warnings)}, corpus {sorted(case.warnings)}"
    found = "; ".join(f"{who} {verdict}" for who, verdict in seen.items())
    return f"{case.name}: corpus {case.expected}; {found}"


@pytest.mark.parametrize("name", [*corpus_files(), EXAMPLES])
def test_verdicts_agree_with_upstreams_crds_on_the_server(
    name: str,
    installed: Servers,
    parity_summary: dict[str, tuple[int, int]],
) -> None:
    cases = _cases(name)
    wrong = [d for case in cases if (d := _disagreement(case, installed)) is not None]
    parity_summary[name] = (len(cases) - len(wrong), len(cases))
    agreement = 100 * (len(cases) - len(wrong)) / len(cases)
    assert not wrong, f"{name}: {agreement:.1f}% of {len(cases)} cases agree:\n" + "\n".join(wrong)


def test_upstreams_examples_are_all_there() -> None:
    files = example_files(UPSTREAM_EXAMPLES)
    assert len(files) == 22
    refused = [c.id for c in upstream_examples()]
    assert "windows-custom-userdata.yaml NodePool/windows2022" in refused


# -- every CEL rule, passing and failing --------------------------------------------------------


def _nodes(schema: Schema) -> Iterator[Schema]:
    yield schema
    for child in (*schema.properties.values(), schema.values, schema.items):
        if child is not None:
            yield from _nodes(child)


def _rules(transition: bool) -> dict[int, tuple[Kind, Rule]]:
    return {
        id(rule): (kind, rule)
        for kind in KINDS
        for node in _nodes(kind.schema)
        for rule in node.rules
        if rule.transition == transition
    }


def _evaluations(obj: Any) -> Iterator[tuple[Rule, Any, str, bool]]:
    """(rule, value, path, holds) of every rule the server evaluates on ``obj``: all of
    them, when no error blocks them."""
    kind, _ = kind_of(obj)
    if kind is None or any(e.blocking or e.decoding for e in validate_object(obj)):
        return
    body = {k: v for k, v in apply_defaults(obj).items() if k not in ("metadata", "status")}
    for node, value, path in walk(kind.schema, body):
        for rule in node.rules:
            if not rule.transition:
                yield rule, value, path, _holds(rule, value)


def _holds(rule: Rule, *values: Any) -> bool:
    try:
        return bool(rule.holds(*values))
    except (KeyError, IndexError, TypeError, ValueError):
        return False


def _reported(response: Response, rule: Rule, path: str, value: Any) -> bool:
    """The server refused naming the rule's path, with its message (or the message its
    messageExpression gives, which the Python ``describe`` must equal)."""
    at = path + rule.field_path if path else rule.field_path.removeprefix(".")
    texts = {rule.message} | ({rule.describe(value)} if rule.describe else set())
    return any(
        cause.get("field") == at and any(text in cause.get("message", "") for text in texts)
        for cause in response.causes()
    )


def test_every_cel_rule_passes_and_fails_on_the_server(installed: Servers) -> None:
    rules = _rules(transition=False)
    passed: set[int] = set()
    failed: set[int] = set()
    for name in [*corpus_files(), EXAMPLES]:
        for case in _cases(name):
            response = installed.joiner(case)
            for rule, value, path, holds in _evaluations(case.obj):
                if holds and response.verdict.accepted:
                    passed.add(id(rule))
                elif not holds:
                    assert _reported(response, rule, path, value), (case.name, rule.message)
                    failed.add(id(rule))
    missing = [
        f"{kind.kind}: {rule.message} ({'no passing' if i not in passed else 'no failing'} case)"
        for i, (kind, rule) in rules.items()
        if i not in passed or i not in failed
    ]
    assert not missing, "CEL rules without a passing and a failing manifest:\n" + "\n".join(missing)


def _update(installed: Servers, update: Update, upstream: bool) -> Response:
    old = installed.create(update.old, upstream, dry_run=False)
    assert old.code == 201, old.status
    try:
        new = copy.deepcopy(update.case.obj)
        stored = installed.get(update.old, upstream)
        new["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        return installed.update(new, upstream)
    finally:
        installed.delete(update.old, upstream)


def test_transition_rules_on_the_server(installed: Servers) -> None:
    rules = _rules(transition=True)
    passed: set[int] = set()
    failed: set[int] = set()
    wrong = []
    for update in transitions():
        case = update.case
        for upstream in (True, False):
            verdict = _update(installed, update, upstream).verdict
            if verdict != case.expected:
                wrong.append(f"{case.id}: {'upstream' if upstream else 'Joiner'}'s CRDs {verdict}")
        old, new = apply_defaults(update.old), apply_defaults(case.obj)
        verdict = joiner_verdict(validate_update(old, new))
        if verdict != case.expected:
            wrong.append(f"{case.id}: validate_update {verdict}, corpus {case.expected}")
        for rule, holds in _transition_evaluations(old, new):
            (passed if holds else failed).add(id(rule))
    assert not wrong, "\n".join(wrong)
    missing = [rule.message for i, (_, rule) in rules.items() if i not in passed & failed]
    assert not missing, f"transition rules without a passing and a failing update: {missing}"


def _transition_evaluations(old: Any, new: Any) -> Iterator[tuple[Rule, bool]]:
    kind, _ = kind_of(new)
    assert kind is not None
    olds = {path: value for _, value, path in walk(kind.schema, old)}
    for node, value, path in walk(kind.schema, new):
        for rule in node.rules:
            if rule.transition and path in olds:
                yield rule, _holds(rule, olds[path], value)


def test_the_dry_runs_changed_nothing(installed: Servers) -> None:
    for kind in KINDS:
        for upstream in (True, False):
            prefix = UPSTREAM_GROUP if upstream else ""
            listed = installed.http.get(
                f"/apis/{prefix}{kind.group}/{kind.version}/{kind.plural}"
            ).json()
            names = [item["metadata"]["name"] for item in listed["items"]]
            assert not [n for n in names if n.startswith("parity")], json.dumps(names)


def test_the_capacity_reservations_joiner_writes_are_a_valid_status(installed: Servers) -> None:
    """What the resolver writes into status.capacityReservations, as the server stores it
    on Joiner's CRD; an entry without one of upstream's required fields is refused there."""
    described = {
        "CapacityReservationId": "cr-0a1b2c3d4e5f60718",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "OwnerId": "123456789012",
        "InstanceMatchCriteria": "targeted",
        "ReservationType": "capacity-block",
        "EndDate": datetime(2030, 1, 1, tzinfo=UTC),
    }
    # 30 minutes before the block's end: the resolver writes it expiring
    entry = status_entry(described, described["EndDate"].timestamp() - 1800)
    assert entry["state"] == "expiring"
    nodeclass = testing.ec2nodeclass(
        "status-capacity-reservations",
        capacityReservationSelectorTerms=[{"id": described["CapacityReservationId"]}],
    )
    created = installed.create(nodeclass, upstream=False, dry_run=False)
    assert created.code == 201, created.status
    path = f"{_collection(nodeclass, False)}/{nodeclass['metadata']['name']}/status"
    try:
        stored = {**created.status, "status": {"capacityReservations": [entry]}}
        answer = installed.http.put(path, json=stored)
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"]["capacityReservations"] == [entry]
        incomplete = {k: v for k, v in entry.items() if k != "instanceType"}
        stored = {**answer.json(), "status": {"capacityReservations": [incomplete]}}
        refused = installed.http.put(path, json=stored)
        assert refused.status_code == 422
        causes = {c["field"] for c in refused.json()["details"]["causes"]} - {"<nil>"}
        assert causes == {"status.capacityReservations[0].instanceType"}
    finally:
        installed.delete(nodeclass, upstream=False)


def test_a_buffers_time_windows_survive_upstreams_crd_where_a_spec_field_would_not(
    installed: Servers,
) -> None:
    """Why a CapacityBuffer's time windows are an annotation (docs/headroom.md): on
    upstream's CRD, as on Joiner's, the annotation is stored as written; a spec field is
    refused (strict field validation) or silently pruned (kubectl's default)."""
    windows = "- {schedule: '0 8 * * 1-5', timeZone: Europe/Paris, duration: 10h, percentage: 20}\n"
    buffer = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "windows", "annotations": {WINDOWS_ANNOTATION: windows}},
        "spec": {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}},
    }
    as_field = {**buffer, "spec": {**buffer["spec"], "windows": yaml.safe_load(windows)}}
    for upstream in (True, False):
        created = installed.create(buffer, upstream)
        assert created.code == 201, created.status
        assert created.status["metadata"]["annotations"] == {WINDOWS_ANNOTATION: windows}
        refused = installed.create(as_field, upstream)
        assert (refused.code, refused.status["message"]) == (
            400,
            'CapacityBuffer in version "v1beta1" cannot be handled as a CapacityBuffer: '
            'strict decoding error: unknown field "spec.windows"',
        )
        pruned = installed.http.post(
            _collection(as_field, upstream), params={"dryRun": "All"}, json=_as(as_field, upstream)
        )
        assert pruned.status_code == 201, pruned.text
        assert pruned.json()["spec"] == created.status["spec"]  # defaulted, no windows
