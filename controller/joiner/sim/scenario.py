"""Scenario files (``apiVersion: joiner.sim/v1``, ``kind: Scenario``): load and validate.

``load_scenario`` turns a file (or its text) into typed dataclasses or raises
``ScenarioError`` whose message names the field, e.g.
``spec.steps[3].advance: invalid duration '5x' (expected e.g. 30s, 5m, 1h)``.
The command line maps ``ScenarioError`` to exit code 2 (``ScenarioError.exit_code``).
``evaluate_expect`` checks an ``expect`` step against a result snapshot.
The format is documented for users in docs/scenario.md; keep the two in step.
"""

from __future__ import annotations

import copy
import json
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from joiner import yamlio
from joiner.api import labels as wk
from joiner.api.duration import DurationError, format_duration, parse_duration
from joiner.api.ec2nodeclass import (
    RESERVATION_TYPE_CAPACITY_BLOCK,
    RESERVATION_TYPE_DEFAULT,
    RESERVATION_TYPES,
)
from joiner.api.quantity import QuantityError, parse_quantity
from joiner.cloudprovider.aws.capacityreservations import CAPACITY_BLOCK_EXPIRING_SECONDS
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import InstanceType, Offering
from joiner.convert import ConversionError, conversion_warnings, convert_objects, is_old_kind
from joiner.convert import Options as ConvertOptions
from joiner.sim.bounds import MAX_PODS, MAX_STEPS, MAX_WALL_SECONDS, Limits, too_many_pods
from joiner.sim.manifests import ManifestError, ObjectRef, check_manifest, identify, pods_asked
from joiner.sim.result import NodeClaimRecord, NodeView, Snapshot
from joiner.state.cluster import WATCHED_KINDS

API_VERSION = "joiner.sim/v1"
KIND = "Scenario"
PROVIDERS = ("aws", "fake")
DEFAULT_LAUNCH_DELAY = 30.0
DEFAULT_READY_DELAY = 10.0
DEFAULT_PODS = 110
# advance + settle bounds of all steps together: a week of virtual time at most, so a
# typo like `settle: 3000h` fails fast instead of simulating for hours.
MAX_VIRTUAL_SECONDS = 7 * 24 * 3600.0
# Bounds of a fake catalogue, far beyond any EC2 instance (the largest have 1,920 vCPUs,
# 32 TiB and cost about $400/h): more is a typo, and sums of such amounts in the
# scheduler's int64 milli-units would overflow.
MAX_INSTANCE_CPU = "10000"
MAX_INSTANCE_MEMORY = "64Ti"
MAX_INSTANCE_PODS = 10_000
MAX_EXTENDED_RESOURCE = "64Ti"  # GPUs count in ones, hugepages in bytes
MAX_PRICE = 10_000.0  # USD per hour
MAX_RESERVED = 10_000  # instances in one capacity reservation
ARCHITECTURES = ("amd64", "arm64")
OPERATING_SYSTEMS = ("linux", "windows")
OFFERING_CAPACITY_TYPES = (wk.CAPACITY_TYPE_SPOT, wk.CAPACITY_TYPE_ON_DEMAND)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
INTERRUPT_KINDS = (
    "spot-interruption",
    "rebalance",
    "scheduled-change",
    "stopping",
    "stopped",
    "shutting-down",
    "terminated",
    "capacity-reservation-interruption",
)
SCALABLE_KINDS = ("Deployment", "ReplicaSet", "NodePool")  # a NodePool: a static one
CONDITION_STATUSES = ("True", "False", "Unknown")
_SETTING_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class ScenarioError(ValueError):
    """A scenario that cannot be run; the message names the file location and field."""

    exit_code = 2


# --- the model -------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    region: str
    zones: tuple[str, ...]


@dataclass(frozen=True)
class OfferingSpec:
    zone: str
    capacity_type: str
    price: float
    available: bool = True


@dataclass(frozen=True)
class InstanceTypeSpec:
    """One type of a ``provider: fake`` catalogue (quantities as written)."""

    name: str
    cpu: str
    memory: str
    offerings: tuple[OfferingSpec, ...]
    pods: int = DEFAULT_PODS
    arch: str = "amd64"
    os: str = "linux"
    resources: Mapping[str, str] = field(default_factory=dict)
    overhead: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_instance_type(self) -> InstanceType:
        """The InstanceType the fake cloud provider serves for this entry."""
        return new_instance_type(
            self.name,
            cpu=self.cpu,
            memory=self.memory,
            pods=self.pods,
            arch=self.arch,
            os=self.os,
            offerings=[
                Offering(o.zone, o.capacity_type, o.price, o.available) for o in self.offerings
            ],
            resources=self.resources,
            overhead=self.overhead,
            labels=self.labels,
        )


@dataclass(frozen=True)
class ReservationSpec:
    """A capacity reservation of the embedded AWS account (aws only), active from t=0."""

    id: str | None  # None: EC2 chooses one
    instance_type: str
    zone: str
    count: int
    type: str = RESERVATION_TYPE_DEFAULT
    match_criteria: str = "open"
    tags: Mapping[str, str] = field(default_factory=dict)
    ends_after: float | None = None  # virtual seconds from the start; None: never ends

    @property
    def ending_block(self) -> bool:
        """A Capacity Block with an end: EC2 warns, then takes its instances back."""
        return self.type == RESERVATION_TYPE_CAPACITY_BLOCK and self.ends_after is not None


@dataclass(frozen=True)
class CloudSpec:
    provider: str  # "aws" or "fake"
    prices: Mapping[str, float] | None = None  # on-demand USD/hour by type (aws only)
    prices_path: Path | None = None
    instance_types: tuple[InstanceTypeSpec, ...] = ()  # fake only
    launch_delay: float = DEFAULT_LAUNCH_DELAY  # seconds: instance running -> Node registered
    ready_delay: float = DEFAULT_READY_DELAY  # seconds: Node registered -> Ready
    # aws only: the provider runs as a principal holding the controller policy, moto
    # enforcing it and every call checked (joiner.sim.moto_iam, joiner.infra.callaudit)
    enforce_iam: bool = False
    capacity_reservations: tuple[ReservationSpec, ...] = ()

    def offering_zones(self) -> set[str]:
        return {o.zone for it in self.instance_types for o in it.offerings}


@dataclass(frozen=True)
class StaticNode:
    """An unmanaged node present from t=0 (e.g. a managed node group's)."""

    name: str
    instance_type: str
    zone: str
    capacity_type: str = wk.CAPACITY_TYPE_ON_DEMAND
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Step:
    """One entry of ``spec.steps``; ``action`` is the key that selected the subclass."""

    action: ClassVar[str]
    index: int
    name: str | None = None

    @property
    def location(self) -> str:
        """``spec.steps[3]``, plus the step's name when it has one (for messages)."""
        return f"spec.steps[{self.index}]" + (f" ({self.name})" if self.name else "")


@dataclass(frozen=True, kw_only=True)
class ApplyStep(Step):
    action: ClassVar[str] = "apply"
    manifests: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, kw_only=True)
class DeleteStep(Step):
    action: ClassVar[str] = "delete"
    targets: tuple[ObjectRef, ...]


@dataclass(frozen=True, kw_only=True)
class ScaleStep(Step):
    action: ClassVar[str] = "scale"
    target: ObjectRef
    replicas: int


@dataclass(frozen=True, kw_only=True)
class AdvanceStep(Step):
    action: ClassVar[str] = "advance"
    seconds: float


@dataclass(frozen=True, kw_only=True)
class SettleStep(Step):
    """Run until nothing is pending or in flight, at most ``max_seconds``."""

    action: ClassVar[str] = "settle"
    max_seconds: float


@dataclass(frozen=True, kw_only=True)
class NodeTargetStep(Step):
    """A step that acts on managed nodes: either one node by name, or the first ``count``
    managed nodes (by name) whose labels match ``node_selector`` (all of them when count
    is None)."""

    node: str | None = None
    node_selector: Mapping[str, str] | None = None
    count: int | None = None


@dataclass(frozen=True, kw_only=True)
class InterruptStep(NodeTargetStep):
    action: ClassVar[str] = "interrupt"
    kind: str


@dataclass(frozen=True, kw_only=True)
class UnhealthyStep(NodeTargetStep):
    """The nodes report ``condition`` with ``status`` from this step on, for ``duration``
    seconds (then the healthy status again) or to the end of the run when None."""

    action: ClassVar[str] = "unhealthy"
    condition: str
    status: str
    reason: str = "SimulatedFailure"
    duration: float | None = None


@dataclass(frozen=True)
class CapacityKey:
    """Offerings to make unavailable; None matches every zone / capacity type."""

    instance_type: str
    zone: str | None = None
    capacity_type: str | None = None


@dataclass(frozen=True, kw_only=True)
class CapacityStep(Step):
    action: ClassVar[str] = "capacity"
    unavailable: tuple[CapacityKey, ...]
    duration: float | None = None  # seconds; None: until the end of the run


@dataclass(frozen=True, kw_only=True)
class ControllerLossStep(Step):
    """A loss of the controller: at once (no option), ``at`` seconds after this step,
    every ``every`` seconds from here to the end of the run, or right after the
    controller's ``after_reconciles``-th reconcile counted from this step (between two
    reconciles, wherever that falls)."""

    at: float | None = None
    every: float | None = None
    after_reconciles: int | None = None


@dataclass(frozen=True, kw_only=True)
class RestartStep(ControllerLossStep):
    """Drop the operator and start a fresh one against the same objects and cloud."""

    action: ClassVar[str] = "restart"


LEADER_LOSSES = ("crash", "pause")
DEFAULT_PAUSE = 30.0  # twice the Lease duration: the other replica takes over


@dataclass(frozen=True, kw_only=True)
class LeaderStep(ControllerLossStep):
    """From this step on the controller runs as two replicas with leader election; the
    leader is lost: it ``crash``es (a fresh replica takes its place) or it ``pause``s
    for ``pause_for`` seconds and then resumes."""

    action: ClassVar[str] = "leader"
    loss: str = "crash"
    pause_for: float = DEFAULT_PAUSE


@dataclass(frozen=True)
class CallFault:
    """Calls of the controller that fail with ``error``: those of ``calls`` (verbs, or
    cloud operations; every one when empty) on ``kinds`` (Kubernetes only; every kind
    when empty). Either the ``times`` calls in a row after letting ``after`` through,
    or, with ``rate``, each with that probability (from the run's seed) to the end."""

    error: str
    calls: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    after: int = 0
    times: int = 1
    rate: float | None = None


@dataclass(frozen=True, kw_only=True)
class FaultStep(Step):
    """One fault where the world can fail; exactly one field is set."""

    action: ClassVar[str] = "fault"
    kube: CallFault | None = None
    watch: tuple[str, str] | None = None  # (kind, "drop" | "410")
    cloud: CallFault | None = None
    insufficient_capacity: tuple[CapacityKey, ...] = ()
    never_register: int = 0  # the next N instances launched never register a Node
    never_ready: int = 0  # the next N Nodes registered never become Ready


@dataclass(frozen=True)
class CountCheck:
    """An expected count: exactly ``value``, or compared with ``op`` (>=, <=, >, <)."""

    op: str
    value: int

    _OPS: ClassVar[dict[str, Callable[[int, int], bool]]] = {
        "==": operator.eq,
        ">=": operator.ge,
        "<=": operator.le,
        ">": operator.gt,
        "<": operator.lt,
    }

    def holds(self, actual: int) -> bool:
        return self._OPS[self.op](actual, self.value)

    def __str__(self) -> str:
        return str(self.value) if self.op == "==" else f"{self.op}{self.value}"


@dataclass(frozen=True, kw_only=True)
class ExpectStep(Step):
    """Assertions on the state when the step runs; unset checks are skipped."""

    action: ClassVar[str] = "expect"
    pending_pods: CountCheck | None = None
    pods_running: CountCheck | None = None
    nodes: Mapping[str, CountCheck] = field(default_factory=dict)  # total, managed, ...
    nodeclaims: CountCheck | None = None
    nodes_by_pool: Mapping[str, CountCheck] = field(default_factory=dict)
    nodes_by_instance_type: Mapping[str, CountCheck] = field(default_factory=dict)
    nodes_by_zone: Mapping[str, CountCheck] = field(default_factory=dict)
    nodes_by_capacity_type: Mapping[str, CountCheck] = field(default_factory=dict)
    cost_per_hour_at_most: float | None = None
    pending_reason: str | None = None
    unclaimed_instances: CountCheck | None = None  # cloud instances no NodeClaim names


@dataclass(frozen=True)
class Scenario:
    name: str
    cluster: ClusterSpec
    cloud: CloudSpec
    settings: Mapping[str, str]  # upper-cased names -> values as strings (like the env)
    nodes: tuple[StaticNode, ...]
    objects: tuple[Mapping[str, Any], ...]
    steps: tuple[Step, ...]
    source: Path | None = None  # the file it came from, when it came from one
    limits: Limits = field(default_factory=Limits)
    # one line per object of an old Karpenter kind that was converted to v1
    conversion_warnings: tuple[str, ...] = ()

    @property
    def max_virtual_seconds(self) -> float:
        """Upper bound of the run's virtual time: advances plus settle bounds."""
        return _time_bound(self.steps)


# --- loading ---------------------------------------------------------------------


def load_scenario(path_or_text: str | Path) -> Scenario:
    """A Scenario from a file path (``Path``, or a ``str`` without a newline) or from YAML
    text (a ``str`` with one). Relative paths inside resolve against the file's folder
    (the working directory for text). Messages do not repeat the file's name: the
    caller, who named it, puts it in front."""
    if isinstance(path_or_text, Path) or "\n" not in path_or_text:
        source: Path | None = Path(path_or_text)
        text = _read_text(source)
        base_dir = source.parent
    else:
        source, text, base_dir = None, path_or_text, Path.cwd()
    document = _parse_yaml(text)
    if document is None:
        raise ScenarioError("empty (expected a Scenario document)")
    return _scenario(document, base_dir, source)


def scenario_from_document(document: Mapping[str, Any]) -> Scenario:
    """A Scenario from a document already read (generated by a program, say), checked
    as a file's would be; relative paths inside resolve against the working directory."""
    return _scenario(copy.deepcopy(dict(document)), Path.cwd(), None)


def _read_text(path: Path) -> str:
    try:
        return yamlio.read_text(path)
    except OSError as error:
        raise ScenarioError(f"cannot read the scenario: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ScenarioError("not a text file (expected UTF-8 YAML)") from None
    except yamlio.InputTooLarge as error:
        raise ScenarioError(f"cannot read the scenario: {error}") from None


def _parse_yaml(text: str) -> Any:
    try:
        return yamlio.load(text)
    except yamlio.YAMLInputError as error:
        raise ScenarioError(str(error)) from None


def _scenario(document: Any, base_dir: Path, source: Path | None) -> Scenario:
    root = _mapping(document, "scenario")
    _keys(root, "scenario", ("apiVersion", "kind", "metadata", "spec"))
    if root.get("apiVersion") != API_VERSION:
        raise ScenarioError(
            f"apiVersion: unsupported {root.get('apiVersion')!r} (expected {API_VERSION})"
        )
    if root.get("kind") != KIND:
        raise ScenarioError(f"kind: expected {KIND}, got {root.get('kind')!r}")
    metadata = _mapping(root.get("metadata"), "metadata")
    _keys(metadata, "metadata", ("name", "labels", "annotations"))
    name = _string(metadata.get("name"), "metadata.name")
    spec = _mapping(root.get("spec"), "spec")
    _keys(spec, "spec", ("cluster", "cloud", "settings", "nodes", "objects", "steps", "limits"))
    cluster = _cluster(spec.get("cluster"))
    cloud = _cloud(spec.get("cloud"), base_dir, cluster)
    settings = _settings(spec.get("settings"))
    nodes = _static_nodes(spec.get("nodes"), cluster, cloud)
    known: dict[ObjectRef, int] = {}
    raw_objects, conversion_warnings = _converted(spec.get("objects") or [], cluster)
    objects = _manifests(raw_objects, "spec.objects", known, allow_empty=True)
    _check_pods_asked(known, "spec.objects")
    steps = _steps(spec.get("steps"), cluster, cloud, known)
    _check_node_lifetimes(objects, steps, cloud)
    limits = _limits(spec.get("limits"))
    _check_event_sources(cloud, steps)
    return Scenario(
        name, cluster, cloud, settings, nodes, objects, steps, source, limits, conversion_warnings
    )


def _check_event_sources(cloud: CloudSpec, steps: Sequence[Step]) -> None:
    """Interrupt steps and ending capacity blocks send EC2's events through the simulated
    interruption queue, whose calls are not principals of the account: not with
    ``enforceIAM``."""
    if not cloud.enforce_iam:
        return
    interrupt = next((s for s in steps if isinstance(s, InterruptStep)), None)
    if interrupt is not None:
        where = f"spec.steps[{interrupt.index}].interrupt"
    else:
        ending = [i for i, r in enumerate(cloud.capacity_reservations) if r.ending_block]
        if not ending:
            return
        where = f"spec.cloud.capacityReservations[{ending[0]}].endsAfter"
    raise ScenarioError(
        f"{where}: not with spec.cloud.enforceIAM (the simulated interruption queue and its "
        "events are not principals of the account)"
    )


def _converted(raw: Any, cluster: ClusterSpec) -> tuple[Any, tuple[str, ...]]:
    """``spec.objects`` with the old Karpenter kinds converted to v1 (the node role is
    the getting-started guides' ``KarpenterNodeRole-<cluster>``), and a warning line per
    converted object."""
    if not isinstance(raw, list) or not any(is_old_kind(entry) for entry in raw):
        return raw, ()
    try:
        result = convert_objects(raw, ConvertOptions(role=f"KarpenterNodeRole-{cluster.name}"))
    except ConversionError as error:
        raise ScenarioError(f"spec.objects: {error}") from None
    return result.objects, tuple(conversion_warnings(result))


def _limits(raw: Any) -> Limits:
    where = "spec.limits"
    entry = _mapping(raw if raw is not None else {}, where)
    _keys(entry, where, ("wallTime", "steps"))
    limits = Limits()
    wall = limits.wall_seconds
    if entry.get("wallTime") is not None:
        wall = _duration(entry["wallTime"], f"{where}.wallTime")
        if wall > MAX_WALL_SECONDS:
            raise ScenarioError(
                f"{where}.wallTime: must be at most {format_duration(MAX_WALL_SECONDS)}, "
                f"got {entry['wallTime']!r}"
            )
    steps = limits.steps
    if entry.get("steps") is not None:
        steps = _count(entry["steps"], f"{where}.steps", minimum=1, maximum=MAX_STEPS)
    return Limits(wall_seconds=wall, steps=steps)


def _check_node_lifetimes(
    objects: Sequence[Mapping[str, Any]], steps: Sequence[Step], cloud: CloudSpec
) -> None:
    """A node that expires before it is Ready never runs a pod, and its replacement
    expires too: the run would replace nodes for ever. Refuse such an expireAfter."""
    startup = cloud.launch_delay + cloud.ready_delay
    located = [(f"spec.objects[{i}]", m) for i, m in enumerate(objects)]
    for step in steps:
        if isinstance(step, ApplyStep):
            located += [(f"{step.location}.apply[{i}]", m) for i, m in enumerate(step.manifests)]
    for where, manifest in located:
        path, spec = _expiry_of(manifest)
        expire_after = spec.get("expireAfter") if isinstance(spec, Mapping) else None
        if not isinstance(expire_after, str):
            continue
        seconds = parse_duration(expire_after)  # checked with the manifest
        if seconds is not None and seconds <= startup:
            raise ScenarioError(
                f"{where} ({manifest['kind']}/{manifest['metadata']['name']}): {path}: "
                f"{expire_after} is not longer than a node takes to start here "
                f"(spec.cloud.launchDelay + readyDelay = {format_duration(startup)}): every "
                "node would expire before it runs a pod, and be replaced for ever"
            )


def _expiry_of(manifest: Mapping[str, Any]) -> tuple[str, Any]:
    """Where a NodePool or NodeClaim keeps expireAfter, and the mapping holding it."""
    spec = manifest.get("spec") or {}
    if manifest["kind"] == "NodePool":
        template = (spec.get("template") or {}) if isinstance(spec, Mapping) else {}
        return "spec.template.spec.expireAfter", (template.get("spec") or {})
    if manifest["kind"] == "NodeClaim":
        return "spec.expireAfter", spec
    return "", {}


def _cluster(raw: Any) -> ClusterSpec:
    where = "spec.cluster"
    cluster = _mapping(raw, where)
    _keys(cluster, where, ("name", "region", "zones"))
    zones = _string_list(cluster.get("zones"), f"{where}.zones")
    if not zones:
        raise ScenarioError(f"{where}.zones: at least one zone is required")
    return ClusterSpec(
        name=_string(cluster.get("name"), f"{where}.name"),
        region=_string(cluster.get("region"), f"{where}.region"),
        zones=tuple(zones),
    )


def _cloud(raw: Any, base_dir: Path, cluster: ClusterSpec) -> CloudSpec:
    where = "spec.cloud"
    cloud = _mapping(raw, where)
    _keys(
        cloud,
        where,
        (
            "provider",
            "prices",
            "instanceTypes",
            "launchDelay",
            "readyDelay",
            "enforceIAM",
            "capacityReservations",
        ),
    )
    provider = cloud.get("provider")
    if provider is None:
        raise ScenarioError(f"{where}.provider: required (aws or fake)")
    if provider not in PROVIDERS:
        raise ScenarioError(f"{where}.provider: must be aws or fake")
    prices, prices_path = None, None
    if cloud.get("prices") is not None:
        if provider == "fake":
            raise ScenarioError(
                f"{where}.prices: only used with provider aws "
                "(fake offerings carry their own prices)"
            )
        prices_path = base_dir / _string(cloud["prices"], f"{where}.prices")
        prices = _price_table(prices_path)
    enforce_iam = cloud.get("enforceIAM", False)
    if not isinstance(enforce_iam, bool):
        raise ScenarioError(f"{where}.enforceIAM: must be true or false")
    if enforce_iam and provider == "fake":
        raise ScenarioError(f"{where}.enforceIAM: only used with provider aws")
    return CloudSpec(
        provider=provider,
        prices=prices,
        prices_path=prices_path,
        instance_types=_instance_types(cloud.get("instanceTypes"), provider),
        launch_delay=_delay(cloud, "launchDelay", DEFAULT_LAUNCH_DELAY),
        ready_delay=_delay(cloud, "readyDelay", DEFAULT_READY_DELAY),
        enforce_iam=enforce_iam,
        capacity_reservations=_capacity_reservations(
            cloud.get("capacityReservations"), provider, cluster
        ),
    )


def _capacity_reservations(
    raw: Any, provider: str, cluster: ClusterSpec
) -> tuple[ReservationSpec, ...]:
    where = "spec.cloud.capacityReservations"
    if raw is None:
        return ()
    if provider != "aws":
        raise ScenarioError(f"{where}: only used with provider aws")
    specs = tuple(
        _reservation(item, f"{where}[{i}]", cluster) for i, item in enumerate(_list(raw, where))
    )
    _unique([s.id for s in specs if s.id], where, "id")
    return specs


def _reservation(raw: Any, where: str, cluster: ClusterSpec) -> ReservationSpec:
    entry = _mapping(raw, where)
    _keys(
        entry,
        where,
        (
            "id",
            "instanceType",
            "zone",
            "count",
            "type",
            "instanceMatchCriteria",
            "tags",
            "endsAfter",
        ),
    )
    reservation_id = None
    if entry.get("id") is not None:
        reservation_id = _string(entry["id"], f"{where}.id")
        if not re.fullmatch(r"cr-[0-9a-z]+", reservation_id):
            raise ScenarioError(f"{where}.id: expected cr- and lowercase letters or digits")
    zone = _string(entry.get("zone"), f"{where}.zone")
    if zone not in cluster.zones:
        raise ScenarioError(f"{where}.zone: {zone!r} is not a zone of the cluster")
    reservation_type = _choice(entry.get("type", "default"), f"{where}.type", RESERVATION_TYPES)
    return ReservationSpec(
        id=reservation_id,
        instance_type=_string(entry.get("instanceType"), f"{where}.instanceType"),
        zone=zone,
        count=_count(entry.get("count"), f"{where}.count", minimum=1, maximum=MAX_RESERVED),
        type=reservation_type,
        match_criteria=_choice(
            entry.get("instanceMatchCriteria", "open"),
            f"{where}.instanceMatchCriteria",
            ("open", "targeted"),
        ),
        tags=_string_map(entry.get("tags"), f"{where}.tags"),
        ends_after=_ends_after(entry.get("endsAfter"), f"{where}.endsAfter", reservation_type),
    )


def _ends_after(raw: Any, where: str, reservation_type: str) -> float | None:
    if raw is None:
        return None
    seconds = _duration(raw, where)
    warned = CAPACITY_BLOCK_EXPIRING_SECONDS  # a block lasts longer than EC2's warning
    if reservation_type == RESERVATION_TYPE_CAPACITY_BLOCK and seconds <= warned:
        raise ScenarioError(
            f"{where}: a capacity block must last more than 40m (EC2 warns 40 minutes "
            f"before its end), got {raw!r}"
        )
    return seconds


def _price_table(path: Path) -> dict[str, float]:
    where = "spec.cloud.prices"
    try:
        document = json.loads(yamlio.read_text(path), object_pairs_hook=_unique_keys)
    except OSError as error:
        raise ScenarioError(f"{where}: cannot read {str(path)!r}: {error.strerror}") from None
    except yamlio.InputTooLarge as error:
        raise ScenarioError(f"{where}: cannot read {str(path)!r}: {error}") from None
    except RecursionError:
        raise ScenarioError(f"{where}: {str(path)!r} is nested too deeply") from None
    except ValueError as error:  # UnicodeDecodeError too
        raise ScenarioError(f"{where}: {str(path)!r} is not valid JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("prices"), dict):
        raise ScenarioError(f'{where}: {str(path)!r} has no "prices" object {{type: usd_per_hour}}')
    table = {}
    for instance_type, price in document["prices"].items():
        table[instance_type] = _price(
            price, f"{where}: {str(path)!r} prices.{instance_type}", MAX_PRICE
        )
    return table


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json.loads would keep the last)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _delay(cloud: Mapping[str, Any], key: str, default: float) -> float:
    if cloud.get(key) is None:
        return default
    return _duration(cloud[key], f"spec.cloud.{key}", allow_zero=True)


def _instance_types(raw: Any, provider: str) -> tuple[InstanceTypeSpec, ...]:
    where = "spec.cloud.instanceTypes"
    if provider == "aws":
        if raw is not None:
            raise ScenarioError(
                f"{where}: only allowed when provider is fake (aws uses the real catalogue)"
            )
        return ()
    if raw is None:
        raise ScenarioError(f"{where}: required when provider is fake")
    entries = _list(raw, where)
    if not entries:
        raise ScenarioError(f"{where}: list at least one instance type")
    types = tuple(_instance_type(entry, f"{where}[{i}]") for i, entry in enumerate(entries))
    _unique([t.name for t in types], where, "instance type")
    return types


def _instance_type(raw: Any, where: str) -> InstanceTypeSpec:
    entry = _mapping(raw, where)
    allowed = ("name", "cpu", "memory", "pods", "arch", "os", "resources", "overhead")
    _keys(entry, where, (*allowed, "labels", "offerings"))
    arch = entry.get("arch", "amd64")
    if arch not in ARCHITECTURES:
        raise ScenarioError(f"{where}.arch: must be one of {', '.join(ARCHITECTURES)}")
    os_name = entry.get("os", "linux")
    if os_name not in OPERATING_SYSTEMS:
        raise ScenarioError(f"{where}.os: must be one of {', '.join(OPERATING_SYSTEMS)}")
    name = _string(entry.get("name"), f"{where}.name")
    cpu = _amount(entry.get("cpu"), f"{where}.cpu", MAX_INSTANCE_CPU, positive=True)
    memory = _amount(entry.get("memory"), f"{where}.memory", MAX_INSTANCE_MEMORY, positive=True)
    pods = _count(entry.get("pods", DEFAULT_PODS), f"{where}.pods", 1, MAX_INSTANCE_PODS)
    resources = _amounts(entry.get("resources"), f"{where}.resources")
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods), **resources}
    return InstanceTypeSpec(
        name=name,
        cpu=cpu,
        memory=memory,
        pods=pods,
        arch=arch,
        os=os_name,
        resources=resources,
        overhead=_amounts(entry.get("overhead"), f"{where}.overhead", capacity),
        labels=_string_map(entry.get("labels"), f"{where}.labels"),
        offerings=_offerings(entry.get("offerings"), f"{where}.offerings"),
    )


def _offerings(raw: Any, where: str) -> tuple[OfferingSpec, ...]:
    entries = _list(raw, where)
    if not entries:
        raise ScenarioError(f"{where}: list at least one offering")
    offerings = []
    for index, item in enumerate(entries):
        at = f"{where}[{index}]"
        offering = _mapping(item, at)
        _keys(offering, at, ("zone", "capacityType", "price", "available"))
        available = offering.get("available", True)
        if not isinstance(available, bool):
            raise ScenarioError(f"{at}.available: must be true or false")
        offerings.append(
            OfferingSpec(
                zone=_string(offering.get("zone"), f"{at}.zone"),
                capacity_type=_capacity_type(offering.get("capacityType"), f"{at}.capacityType"),
                price=_price(offering.get("price"), f"{at}.price", MAX_PRICE),
                available=available,
            )
        )
    _unique([f"{o.zone}/{o.capacity_type}" for o in offerings], where, "offering")
    return tuple(offerings)


def _settings(raw: Any) -> dict[str, str]:
    where = "spec.settings"
    settings: dict[str, str] = {}
    for key, value in _mapping(raw or {}, where).items():
        name = str(key).upper()
        if not _SETTING_NAME.match(name):
            raise ScenarioError(
                f"{where}: invalid name {key!r} (settings are environment names such as "
                "BATCH_IDLE_DURATION)"
            )
        if name in settings:
            raise ScenarioError(f"{where}.{name}: set twice (names are case-insensitive)")
        if name == "CLUSTER_NAME":
            raise ScenarioError(f"{where}.CLUSTER_NAME: comes from spec.cluster.name")
        settings[name] = _setting_value(value, f"{where}.{key}")
    return settings


def _setting_value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ScenarioError(f"{where}: expected a string, number or boolean")


def _static_nodes(raw: Any, cluster: ClusterSpec, cloud: CloudSpec) -> tuple[StaticNode, ...]:
    where = "spec.nodes"
    catalogue = {t.name for t in cloud.instance_types}
    zones = set(cluster.zones) | cloud.offering_zones()
    nodes = []
    for index, item in enumerate(_list(raw or [], where)):
        at = f"{where}[{index}]"
        entry = _mapping(item, at)
        _keys(entry, at, ("name", "instanceType", "zone", "capacityType", "labels", "taints"))
        instance_type = _string(entry.get("instanceType"), f"{at}.instanceType")
        if cloud.provider == "fake" and instance_type not in catalogue:
            raise ScenarioError(
                f"{at}.instanceType: {instance_type!r} is not in spec.cloud.instanceTypes"
            )
        zone = _string(entry.get("zone"), f"{at}.zone")
        if zone not in zones:
            raise ScenarioError(f"{at}.zone: {zone!r} is not a zone of the cluster or catalogue")
        nodes.append(
            StaticNode(
                name=_string(entry.get("name"), f"{at}.name"),
                instance_type=instance_type,
                zone=zone,
                capacity_type=_capacity_type(
                    entry.get("capacityType", wk.CAPACITY_TYPE_ON_DEMAND), f"{at}.capacityType"
                ),
                labels=_string_map(entry.get("labels"), f"{at}.labels"),
                taints=_taints(entry.get("taints"), f"{at}.taints"),
            )
        )
    _unique([n.name for n in nodes], where, "node")
    return tuple(nodes)


def _taints(raw: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    taints = []
    for index, item in enumerate(_list(raw or [], where)):
        at = f"{where}[{index}]"
        taint = _mapping(item, at)
        _keys(taint, at, ("key", "value", "effect"))
        _string(taint.get("key"), f"{at}.key")
        if taint.get("effect") not in TAINT_EFFECTS:
            raise ScenarioError(f"{at}.effect: must be one of {', '.join(TAINT_EFFECTS)}")
        if "value" in taint:
            _string(taint["value"], f"{at}.value", allow_empty=True)
        taints.append(dict(taint))
    return tuple(taints)


def _manifests(
    raw: Any, where: str, known: dict[ObjectRef, int], allow_empty: bool = False
) -> tuple[Mapping[str, Any], ...]:
    """Check every manifest and add what it creates to ``known`` (with the pods it asks
    for). The manifests come back
    with their namespace, defaulted as the API server does."""
    entries = _list(raw, where)
    if not entries and not allow_empty:
        raise ScenarioError(f"{where}: list at least one manifest")
    seen: dict[ObjectRef, int] = {}
    manifests = []
    for index, manifest in enumerate(entries):
        at = f"{where}[{index}]"
        try:
            ref = identify(manifest)
        except ManifestError as error:
            raise ScenarioError(f"{at}: {error}") from None
        named = f"{at} ({ref.kind}/{ref.name})"
        if ref in seen:
            raise ScenarioError(f"{named}: {ref} appears twice in this list")
        try:
            check_manifest(manifest)
        except ManifestError as error:
            raise ScenarioError(f"{named}: {error}") from None
        seen[ref] = pods_asked(manifest)
        manifests.append(_in_namespace(manifest, ref.namespace))
    known.update(seen)
    return tuple(manifests)


def _in_namespace(manifest: Mapping[str, Any], namespace: str | None) -> Mapping[str, Any]:
    """``manifest`` with ``metadata.namespace`` set (a copy) when its kind is namespaced
    and it has none: the simulator looks objects up by namespace and name."""
    metadata = manifest["metadata"]
    if namespace is None or metadata.get("namespace") == namespace:
        return manifest
    return {**manifest, "metadata": {**metadata, "namespace": namespace}}


# --- steps -----------------------------------------------------------------------


@dataclass
class _StepContext:
    """What a step parser needs besides its own value."""

    index: int
    name: str | None
    cluster: ClusterSpec
    cloud: CloudSpec
    # objects that exist at this step and the pods each asks for; steps update it
    known: dict[ObjectRef, int]

    def common(self) -> dict[str, Any]:
        """The fields every Step has."""
        return {"index": self.index, "name": self.name}


_StepParser = Callable[[Any, str, _StepContext], Step]


def _steps(
    raw: Any, cluster: ClusterSpec, cloud: CloudSpec, known: dict[ObjectRef, int]
) -> tuple[Step, ...]:
    where = "spec.steps"
    entries = _list(raw, where)
    if not entries:
        raise ScenarioError(f"{where}: list at least one step")
    steps = tuple(_step(item, index, cluster, cloud, known) for index, item in enumerate(entries))
    bound = _time_bound(steps)
    if bound > MAX_VIRTUAL_SECONDS:
        raise ScenarioError(
            f"{where}: advance and settle steps add up to {format_duration(bound)}, more than "
            f"the {format_duration(MAX_VIRTUAL_SECONDS)} (7 days) cap on virtual time"
        )
    return steps


def _step(
    raw: Any, index: int, cluster: ClusterSpec, cloud: CloudSpec, known: dict[ObjectRef, int]
) -> Step:
    where = f"spec.steps[{index}]"
    entry = _mapping(raw, where)
    actions = [key for key in entry if key != "name"]
    if len(actions) != 1:
        found = f"found {len(actions)}" + (f" ({', '.join(map(str, actions))})" if actions else "")
        raise ScenarioError(f"{where}: a step has exactly one action, {found}")
    action = actions[0]
    if action not in _STEP_PARSERS:
        raise ScenarioError(
            f"{where}: unknown action {action!r} (expected one of {', '.join(_STEP_PARSERS)})"
        )
    context = _StepContext(index, _step_name(entry, where), cluster, cloud, known)
    step = _STEP_PARSERS[action](entry[action], f"{where}.{action}", context)
    _check_pods_asked(known, f"{where}.{action}")
    return step


def _check_pods_asked(known: Mapping[ObjectRef, int], where: str) -> None:
    """The simulator's cap on pods, over every workload that exists after ``where``."""
    total = sum(known.values())
    if total > MAX_PODS:
        raise ScenarioError(
            f"{where}: the workloads would ask for {total:,} pods at this point, more than "
            f"the simulator's limit of {MAX_PODS:,}"
        )


def _step_name(entry: Mapping[str, Any], where: str) -> str | None:
    if "name" not in entry:
        return None
    return _string(entry["name"], f"{where}.name")


def _apply(raw: Any, where: str, context: _StepContext) -> Step:
    manifests = _manifests(raw, where, context.known)
    return ApplyStep(manifests=manifests, **context.common())


def _delete(raw: Any, where: str, context: _StepContext) -> Step:
    entries = _list(raw, where)
    if not entries:
        raise ScenarioError(f"{where}: list at least one object")
    targets = []
    for index, item in enumerate(entries):
        target = _object_ref(item, f"{where}[{index}]", context.known, kinds=None)
        context.known.pop(target, None)
        targets.append(target)
    return DeleteStep(targets=tuple(targets), **context.common())


def _scale(raw: Any, where: str, context: _StepContext) -> Step:
    target = _object_ref(raw, where, context.known, kinds=SCALABLE_KINDS, extra=("replicas",))
    replicas = _count(_mapping(raw, where).get("replicas"), f"{where}.replicas")
    if target.kind == "NodePool":  # nodes, not pods; the API server checks the pool
        return ScaleStep(target=target, replicas=replicas, **context.common())
    if replicas > MAX_PODS:
        raise ScenarioError(f"{where}.replicas: {too_many_pods(replicas)}")
    context.known[target] = replicas
    return ScaleStep(target=target, replicas=replicas, **context.common())


def _object_ref(
    raw: Any,
    where: str,
    known: Mapping[ObjectRef, int],
    kinds: Sequence[str] | None,
    extra: tuple[str, ...] = (),
) -> ObjectRef:
    """A reference {kind, name, namespace} to an object that exists at this step."""
    entry = _mapping(raw, where)
    _keys(entry, where, ("kind", "name", "namespace", *extra))
    kind = _string(entry.get("kind"), f"{where}.kind")
    if kinds is not None and kind not in kinds:
        raise ScenarioError(f"{where}.kind: must be one of {', '.join(kinds)}")
    name = _string(entry.get("name"), f"{where}.name")
    namespace = entry.get("namespace", "default")
    candidates = {r for r in known if r.kind == kind and r.name == name}
    ref = next((r for r in candidates if r.namespace in (namespace, None)), None)
    if ref is None:
        shown = f"{kind} {namespace}/{name}" if not candidates else f"{kind} {name}"
        raise ScenarioError(
            f"{where}: {shown} does not exist at this step "
            "(create it in spec.objects or an earlier apply)"
        )
    return ref


def _advance(raw: Any, where: str, context: _StepContext) -> Step:
    return AdvanceStep(seconds=_duration(raw, where), **context.common())


def _settle(raw: Any, where: str, context: _StepContext) -> Step:
    return SettleStep(max_seconds=_duration(raw, where), **context.common())


_NODE_TARGET_KEYS = ("node", "nodeSelector", "count")


def _interrupt(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, (*_NODE_TARGET_KEYS, "kind"))
    kind = entry.get("kind")
    if kind not in INTERRUPT_KINDS:
        raise ScenarioError(f"{where}.kind: must be one of {', '.join(INTERRUPT_KINDS)}")
    return InterruptStep(kind=kind, **_node_target(entry, where), **context.common())


def _unhealthy(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, (*_NODE_TARGET_KEYS, "condition", "status", "reason", "for"))
    condition = _string(entry.get("condition"), f"{where}.condition")
    status = _condition_status(entry.get("status"), f"{where}.status")
    reason = entry.get("reason", UnhealthyStep.reason)
    duration = _duration(entry["for"], f"{where}.for") if entry.get("for") is not None else None
    return UnhealthyStep(
        condition=condition,
        status=status,
        reason=_string(reason, f"{where}.reason"),
        duration=duration,
        **_node_target(entry, where),
        **context.common(),
    )


def _condition_status(value: Any, where: str) -> str:
    """True, False or Unknown; YAML's unquoted true/false are taken as written."""
    text = str(value) if isinstance(value, bool) else value
    if text not in CONDITION_STATUSES:
        raise ScenarioError(
            f"{where}: must be one of {', '.join(CONDITION_STATUSES)}, got {value!r}"
        )
    return text


def _node_target(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The node, or the nodeSelector and count, of a step that acts on nodes."""
    if ("node" in entry) == ("nodeSelector" in entry):
        raise ScenarioError(f"{where}: give either node or nodeSelector")
    if "node" in entry:
        if "count" in entry:
            raise ScenarioError(f"{where}.count: only with nodeSelector")
        return {"node": _string(entry["node"], f"{where}.node")}
    selector = _string_map(entry["nodeSelector"], f"{where}.nodeSelector")
    if not selector:
        raise ScenarioError(f"{where}.nodeSelector: give at least one label")
    count = _count(entry["count"], f"{where}.count", minimum=1) if "count" in entry else None
    return {"node_selector": selector, "count": count}


def _capacity(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, ("unavailable", "for"))
    entries = _list(entry.get("unavailable"), f"{where}.unavailable")
    if not entries:
        raise ScenarioError(f"{where}.unavailable: list at least one offering")
    keys = tuple(
        _capacity_key(item, f"{where}.unavailable[{i}]", context.cluster, context.cloud)
        for i, item in enumerate(entries)
    )
    duration = _duration(entry["for"], f"{where}.for") if entry.get("for") is not None else None
    return CapacityStep(unavailable=keys, duration=duration, **context.common())


def _capacity_key(raw: Any, where: str, cluster: ClusterSpec, cloud: CloudSpec) -> CapacityKey:
    entry = _mapping(raw, where)
    _keys(entry, where, ("instanceType", "zone", "capacityType"))
    instance_type = _string(entry.get("instanceType"), f"{where}.instanceType")
    if cloud.provider == "fake" and instance_type not in {t.name for t in cloud.instance_types}:
        raise ScenarioError(
            f"{where}.instanceType: {instance_type!r} is not in spec.cloud.instanceTypes"
        )
    zone = None
    if entry.get("zone") is not None:
        zone = _string(entry["zone"], f"{where}.zone")
        if zone not in set(cluster.zones) | cloud.offering_zones():
            raise ScenarioError(f"{where}.zone: {zone!r} is not a zone of the cluster or catalogue")
    capacity_type = None
    if entry.get("capacityType") == wk.CAPACITY_TYPE_RESERVED and cloud.provider == "aws":
        capacity_type = wk.CAPACITY_TYPE_RESERVED  # the type's reservations fill up
    elif entry.get("capacityType") is not None:
        capacity_type = _capacity_type(entry["capacityType"], f"{where}.capacityType")
    return CapacityKey(instance_type, zone, capacity_type)


RESTART_OPTIONS = ("at", "every", "afterReconciles")
FAULT_TARGETS = ("kube", "watch", "cloud", "insufficientCapacity", "kubelet")
KUBE_ERRORS = ("409", "429", "500", "timeout")
KUBE_VERBS = ("get", "list", "create", "update", "updateStatus", "patch", "delete", "evict")
WATCH_ERRORS = ("drop", "410")
CLOUD_ERRORS = ("throttled", "failed")
CLOUD_CALLS = ("create", "delete", "get", "list")
KUBELET_FAULTS = ("neverRegister", "neverReady")


def _fault(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, FAULT_TARGETS)
    if len(entry) != 1:
        raise ScenarioError(f"{where}: give exactly one of {', '.join(FAULT_TARGETS)}")
    target, value = next(iter(entry.items()))
    at = f"{where}.{target}"
    if target == "kube":
        fault = _call_fault(value, at, KUBE_ERRORS, KUBE_VERBS, kube=True)
        return FaultStep(kube=fault, **context.common())
    if target == "cloud":
        fault = _call_fault(value, at, CLOUD_ERRORS, CLOUD_CALLS, kube=False)
        return FaultStep(cloud=fault, **context.common())
    if target == "watch":
        watch = _mapping(value, at)
        _keys(watch, at, ("kind", "error"))
        kind = _string(watch.get("kind"), f"{at}.kind")
        if kind not in WATCHED_KINDS:
            raise ScenarioError(f"{at}.kind: must be one of {', '.join(WATCHED_KINDS)}")
        error = _choice(_text(watch.get("error")), f"{at}.error", WATCH_ERRORS)
        return FaultStep(watch=(kind, error), **context.common())
    if target == "insufficientCapacity":
        entries = _list(value, at)
        if not entries:
            raise ScenarioError(f"{at}: list at least one offering")
        keys = tuple(
            _capacity_key(item, f"{at}[{i}]", context.cluster, context.cloud)
            for i, item in enumerate(entries)
        )
        return FaultStep(insufficient_capacity=keys, **context.common())
    kubelet = _mapping(value, at)
    _keys(kubelet, at, KUBELET_FAULTS)
    if len(kubelet) != 1:
        raise ScenarioError(f"{at}: give exactly one of {', '.join(KUBELET_FAULTS)}")
    ((name, count),) = kubelet.items()
    count = _count(count, f"{at}.{name}", minimum=1)
    if name == "neverRegister":
        return FaultStep(never_register=count, **context.common())
    return FaultStep(never_ready=count, **context.common())


def _call_fault(
    raw: Any, where: str, errors: Sequence[str], calls: Sequence[str], kube: bool
) -> CallFault:
    entry = _mapping(raw, where)
    fields = ("error", "calls", *(("kinds",) if kube else ()), "after", "times", "rate")
    _keys(entry, where, fields)
    error = _choice(_text(entry.get("error")), f"{where}.error", errors)
    names = _string_list(entry.get("calls", []), f"{where}.calls")
    chosen = frozenset(_choice(c, f"{where}.calls[{i}]", calls) for i, c in enumerate(names))
    kinds = frozenset(_string_list(entry.get("kinds", []), f"{where}.kinds"))
    if "rate" in entry:
        if "after" in entry or "times" in entry:
            raise ScenarioError(f"{where}: rate goes without after and times")
        return CallFault(error, chosen, kinds, rate=_rate(entry["rate"], f"{where}.rate"))
    after = _count(entry.get("after", 0), f"{where}.after")
    times = _count(entry.get("times", 1), f"{where}.times", minimum=1)
    return CallFault(error, chosen, kinds, after=after, times=times)


def _restart(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, RESTART_OPTIONS)
    return RestartStep(**_loss_timing(entry, where), **context.common())


def _leader(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, ("loss", "for", *RESTART_OPTIONS))
    loss = _choice(entry.get("loss", "crash"), f"{where}.loss", LEADER_LOSSES)
    if "for" in entry and loss != "pause":
        raise ScenarioError(f"{where}.for: only a pause lasts a while (loss: pause)")
    pause_for = _duration(entry["for"], f"{where}.for") if "for" in entry else DEFAULT_PAUSE
    timing = {k: v for k, v in entry.items() if k in RESTART_OPTIONS}
    return LeaderStep(
        loss=loss, pause_for=pause_for, **_loss_timing(timing, where), **context.common()
    )


def _loss_timing(entry: dict[str, Any], where: str) -> dict[str, Any]:
    """When a restart or a leader loss happens: at most one of RESTART_OPTIONS."""
    if len(entry) > 1:
        raise ScenarioError(f"{where}: give at most one of {', '.join(RESTART_OPTIONS)}")
    at = _duration(entry["at"], f"{where}.at") if "at" in entry else None
    every = _duration(entry["every"], f"{where}.every") if "every" in entry else None
    after = None
    if "afterReconciles" in entry:
        after = _count(entry["afterReconciles"], f"{where}.afterReconciles", minimum=1)
    return {"at": at, "every": every, "after_reconciles": after}


# --- expect ------------------------------------------------------------------------

NODE_COUNTS = ("total", "managed", "unmanaged", "ready")
_EXPECT_COUNTS = {"pendingPods": "pending_pods", "podsRunning": "pods_running"}
_EXPECT_GROUPS = {
    "nodesByPool": "nodes_by_pool",
    "nodesByInstanceType": "nodes_by_instance_type",
    "nodesByZone": "nodes_by_zone",
    "nodesByCapacityType": "nodes_by_capacity_type",
}
EXPECT_KEYS = (
    *_EXPECT_COUNTS,
    "nodes",
    "nodeclaims",
    *_EXPECT_GROUPS,
    "costPerHourAtMost",
    "pendingReason",
    "unclaimedInstances",
)
_COUNT_TEXT = re.compile(r"^\s*(==|>=|<=|>|<)?\s*([0-9]+)\s*$")


def _expect(raw: Any, where: str, context: _StepContext) -> Step:
    entry = _mapping(raw, where)
    _keys(entry, where, EXPECT_KEYS)
    if not entry:
        raise ScenarioError(f"{where}: give at least one of {', '.join(EXPECT_KEYS)}")
    fields: dict[str, Any] = {}
    for key, attr in _EXPECT_COUNTS.items():
        if key in entry:
            fields[attr] = _count_check(entry[key], f"{where}.{key}")
    if "nodes" in entry:
        fields["nodes"] = _node_counts(entry["nodes"], f"{where}.nodes")
    if "nodeclaims" in entry:
        fields["nodeclaims"] = _count_check(entry["nodeclaims"], f"{where}.nodeclaims")
    for key, attr in _EXPECT_GROUPS.items():
        if key in entry:
            group = _mapping(entry[key], f"{where}.{key}")
            fields[attr] = {str(k): _count_check(v, f"{where}.{key}.{k}") for k, v in group.items()}
    if "costPerHourAtMost" in entry:
        fields["cost_per_hour_at_most"] = _price(
            entry["costPerHourAtMost"], f"{where}.costPerHourAtMost"
        )
    if "pendingReason" in entry:
        fields["pending_reason"] = _string(entry["pendingReason"], f"{where}.pendingReason")
    if "unclaimedInstances" in entry:
        fields["unclaimed_instances"] = _count_check(
            entry["unclaimedInstances"], f"{where}.unclaimedInstances"
        )
    return ExpectStep(**fields, **context.common())


def _node_counts(raw: Any, where: str) -> dict[str, CountCheck]:
    if not isinstance(raw, Mapping):
        return {"total": _count_check(raw, where)}
    _keys(raw, where, NODE_COUNTS)
    return {key: _count_check(value, f"{where}.{key}") for key, value in raw.items()}


def _count_check(raw: Any, where: str) -> CountCheck:
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return CountCheck("==", raw)
    match = _COUNT_TEXT.match(raw) if isinstance(raw, str) else None
    if not match:
        raise ScenarioError(
            f"{where}: invalid count {raw!r} (expected a number, or a comparison such as "
            "'>=2' or '<5')"
        )
    return CountCheck(match[1] or "==", int(match[2]))


def evaluate_expect(
    step: ExpectStep,
    snapshot: Snapshot,
    nodeclaims: Sequence[NodeClaimRecord] = (),
    unclaimed_instances: Callable[[], int] = lambda: 0,
) -> list[str]:
    """The failed assertions of ``step`` on ``snapshot`` (empty when all hold), each
    prefixed with the step's location. ``nodeclaims`` are the records so far; the
    ``nodeclaims`` check counts those that exist at the snapshot's time.
    ``unclaimed_instances`` counts the cloud's (asked only when the step checks it)."""
    observed: list[tuple[str, CountCheck, int]] = []
    if step.unclaimed_instances is not None:
        observed.append(("unclaimedInstances", step.unclaimed_instances, unclaimed_instances()))
    if step.pending_pods is not None:
        observed.append(("pendingPods", step.pending_pods, len(snapshot.pending_pods)))
    if step.pods_running is not None:
        observed.append(("podsRunning", step.pods_running, snapshot.pods_running))
    for key, check in step.nodes.items():
        observed.append((f"nodes.{key}", check, _node_count(snapshot.nodes, key)))
    if step.nodeclaims is not None:
        live = sum(1 for c in nodeclaims if c.exists_at(snapshot.time))
        observed.append(("nodeclaims", step.nodeclaims, live))
    for label, groups, key_of in _groups(step):
        for group, check in groups.items():
            count = sum(1 for n in snapshot.nodes if key_of(n) == group)
            observed.append((f"{label}.{group}", check, count))
    failures = [
        f"{step.location}: {what}: expected {check}, got {actual}"
        for what, check, actual in observed
        if not check.holds(actual)
    ]
    limit = step.cost_per_hour_at_most
    if limit is not None and snapshot.cost_per_hour > limit + 1e-9:
        failures.append(
            f"{step.location}: costPerHourAtMost: expected at most {limit}, "
            f"got {snapshot.cost_per_hour:.4f}"
        )
    if step.pending_reason is not None:
        failures.extend(_pending_reason_failures(step, snapshot))
    return failures


def _node_count(nodes: Sequence[NodeView], key: str) -> int:
    predicates: dict[str, Callable[[NodeView], bool]] = {
        "total": lambda n: True,
        "managed": lambda n: n.managed,
        "unmanaged": lambda n: not n.managed,
        "ready": lambda n: n.ready,
    }
    return sum(1 for n in nodes if predicates[key](n))


def _groups(
    step: ExpectStep,
) -> list[tuple[str, Mapping[str, CountCheck], Callable[[NodeView], str | None]]]:
    return [
        ("nodesByPool", step.nodes_by_pool, lambda n: n.nodepool if n.managed else None),
        ("nodesByInstanceType", step.nodes_by_instance_type, lambda n: n.instance_type),
        ("nodesByZone", step.nodes_by_zone, lambda n: n.zone),
        ("nodesByCapacityType", step.nodes_by_capacity_type, lambda n: n.capacity_type),
    ]


def _pending_reason_failures(step: ExpectStep, snapshot: Snapshot) -> list[str]:
    wanted = (step.pending_reason or "").lower()
    if not snapshot.pending_pods:
        return [f"{step.location}: pendingReason: expected pending pods, got none"]
    # One failure per distinct reason: pods of one workload usually share theirs.
    pods_by_reason: dict[str, list[str]] = {}
    for pod in snapshot.pending_pods:
        if wanted not in pod.reason.lower():
            pods_by_reason.setdefault(pod.reason, []).append(pod.name)
    return [
        f"{step.location}: pendingReason: {_pods(names)} pending for {reason!r}, "
        f"which does not mention {step.pending_reason!r}"
        for reason, names in pods_by_reason.items()
    ]


def _pods(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"{names[0]} is"
    return f"{len(names)} pods are ({names[0]}, ...)"


_STEP_PARSERS: dict[str, _StepParser] = {
    "apply": _apply,
    "delete": _delete,
    "scale": _scale,
    "advance": _advance,
    "settle": _settle,
    "interrupt": _interrupt,
    "unhealthy": _unhealthy,
    "capacity": _capacity,
    "restart": _restart,
    "leader": _leader,
    "fault": _fault,
    "expect": _expect,
}


def _time_bound(steps: Sequence[Step]) -> float:
    total = 0.0
    for step in steps:
        if isinstance(step, AdvanceStep):
            total += step.seconds
        elif isinstance(step, SettleStep):
            total += step.max_seconds
    return total


# --- field helpers -----------------------------------------------------------------


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        raise ScenarioError(f"{where}: required")
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a mapping, got {_type(value)}")
    return dict(value)


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        raise ScenarioError(f"{where}: required")
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: expected a list, got {_type(value)}")
    return value


def _keys(entry: Mapping[str, Any], where: str, allowed: Sequence[str]) -> None:
    for key in entry:
        if key not in allowed:
            raise ScenarioError(
                f"{where}: unknown field {key!r} (expected one of {', '.join(allowed)})"
            )


def _string(value: Any, where: str, allow_empty: bool = False) -> str:
    if value is None:
        raise ScenarioError(f"{where}: required")
    if not isinstance(value, str) or (not value and not allow_empty):
        raise ScenarioError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _string_list(value: Any, where: str) -> list[str]:
    items = [_string(v, f"{where}[{i}]") for i, v in enumerate(_list(value, where))]
    _unique(items, where, "entry")
    return items


def _string_map(value: Any, where: str) -> dict[str, str]:
    entries = _mapping(value if value is not None else {}, where)
    for key, item in entries.items():
        _string(item, f"{where}.{key}", allow_empty=True)
    return entries


def _unique(names: Sequence[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ScenarioError(f"{where}: duplicate {what} {name!r}")
        seen.add(name)


def _count(value: Any, where: str, minimum: int = 0, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a non-negative integer" if minimum == 0 else f"an integer >= {minimum}"
        raise ScenarioError(f"{where}: expected {wanted}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ScenarioError(f"{where}: must be at most {maximum}, got {value!r}")
    return value


def _price(value: Any, where: str, maximum: float = math.inf) -> float:
    # The comparisons refuse nan and inf; exact for integers of any size.
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not 0 <= value < math.inf:
        raise ScenarioError(f"{where}: expected a finite number >= 0 (USD per hour), got {value!r}")
    if value > maximum:
        raise ScenarioError(f"{where}: must be at most {maximum:g} (USD per hour), got {value!r}")
    return float(value)


def _quantity(value: Any, where: str) -> str:
    if value is None:
        raise ScenarioError(f"{where}: required")
    try:
        parse_quantity(value)
    except QuantityError as error:
        raise ScenarioError(f"{where}: {error}") from None
    return str(value)


def _amount(value: Any, where: str, maximum: str, positive: bool = False) -> str:
    """A quantity of a catalogue entry, more than 0 (``positive``) or at least 0, and
    at most ``maximum``."""
    text = _quantity(value, where)
    amount = parse_quantity(text)
    if amount < 0 or (positive and amount == 0):
        bound = "more than 0" if positive else "at least 0"
        raise ScenarioError(f"{where}: must be {bound}, got {text!r}")
    if amount > parse_quantity(maximum):
        raise ScenarioError(f"{where}: must be at most {maximum}, got {text!r}")
    return text


def _amounts(value: Any, where: str, capacity: Mapping[str, str] | None = None) -> dict[str, str]:
    """Extended resources, or (with the type's ``capacity``) overhead, which may not
    exceed the capacity of its resource."""
    entries = _mapping(value if value is not None else {}, where)
    maxima = capacity or {}
    return {
        str(k): _amount(v, f"{where}.{k}", maxima.get(str(k), MAX_EXTENDED_RESOURCE))
        for k, v in entries.items()
    }


def _capacity_type(value: Any, where: str) -> str:
    if value not in OFFERING_CAPACITY_TYPES:
        raise ScenarioError(f"{where}: must be one of {', '.join(OFFERING_CAPACITY_TYPES)}")
    return value


def _duration(value: Any, where: str, allow_zero: bool = False) -> float:
    text = str(value) if value is not None else ""
    try:
        seconds = parse_duration(text) if isinstance(value, str) else None
    except DurationError:
        seconds = None
    if seconds is None:
        raise ScenarioError(f"{where}: invalid duration {text!r} (expected e.g. 30s, 5m, 1h)")
    if seconds == 0 and not allow_zero:
        raise ScenarioError(f"{where}: must be longer than 0s")
    return seconds


def _choice(value: Any, where: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ScenarioError(f"{where}: must be one of {', '.join(choices)}, got {value!r}")
    return value


def _text(value: Any) -> Any:
    """A YAML number where a name is expected (``error: 409``) read as its text."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _rate(value: Any, where: str) -> float:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not 0 < value <= 1:
        raise ScenarioError(
            f"{where}: expected a probability, more than 0 and at most 1, got {value!r}"
        )
    return float(value)


def _type(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
