"""Faults where the world can fail (the scenario's ``fault`` step), seeded.

The controller reaches the world through two ports, and in a simulation it holds
wrappers of both that fail the calls a fault step chose: ``FaultyKube`` in front of
the API server (errors, and watches that drop or expire) and ``FaultyCloud`` in front
of the cloud provider. The emulated kubelet plays the instances that never register
and the nodes that never become Ready; the cloud, the offerings without capacity.

A fault counts the controller's matching calls from its step on: ``after`` of them go
through, the next ``times`` fail. With ``rate`` each matching call fails with that
probability, drawn from a generator seeded with the run's seed, so a run replays.

What the controller sees is what reaches it on a cluster once its client gave up: the
HTTP adapter's own retries (429 with Retry-After, 5xx on reads) are tested against a
misbehaving server (tests/controller/kube/test_kube_faults.py). A ``timeout`` of a
write is the hardest case: the server applied it, the answer was lost.

With the AWS provider (``provider: aws``), cloud faults act one layer further out, on
the EC2 API calls themselves (``Ec2Faults``): the AWS provider's own handling of EC2's
errors is what is tested, not a wrapper's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from joiner.cloudprovider.types import CloudProvider, CloudProviderError
from joiner.kube.api import (
    ApiError,
    Conflict,
    Gone,
    InternalError,
    Timeout,
    TooManyRequests,
    WatchEvent,
)
from joiner.kube.memory import MemoryKube
from joiner.sim.cloud import SimCloud
from joiner.sim.kubelet import Kubelet
from joiner.sim.scenario import CallFault, FaultStep
from joiner.state.feed import object_key, relist_changes

KUBE_ERRORS: dict[str, type[ApiError]] = {
    "409": Conflict,
    "429": TooManyRequests,
    "500": InternalError,
    "timeout": Timeout,
}
CLOUD_MESSAGES = {
    "throttled": "RequestLimitExceeded: Request limit exceeded (injected fault)",
    "failed": "InternalError: An internal error has occurred (injected fault)",
}
READS = ("get", "list")
# EC2's answer to a call a cloud fault fails: HTTP status, error code, message.
EC2_ERRORS = {
    "throttled": (503, "RequestLimitExceeded", "Request limit exceeded."),
    "failed": (500, "InternalError", "An internal error has occurred."),
}
# The EC2 operation behind each call of the provider port a fault can name.
EC2_OPERATIONS = {
    "create": "CreateFleet",
    "delete": "TerminateInstances",
    "get": "DescribeInstances",
    "list": "DescribeInstances",
}


class Faults:
    """The controller's faulty ports, and the fault steps of a run."""

    def __init__(self, kube: MemoryKube, cloud: SimCloud, seed: int) -> None:
        rng = random.Random(seed)
        self.kube = FaultyKube(kube, rng)
        self.cloud = FaultyCloud(lambda: cloud.provider, rng)
        ec2 = cloud.controller_ec2
        self.ec2 = Ec2Faults(ec2, rng) if ec2 is not None else None
        self._sim_cloud = cloud

    @contextlib.contextmanager
    def controller_running(self) -> Iterator[None]:
        """What runs inside is the controller's work (its EC2 calls may fail)."""
        if self.ec2 is None:
            yield
            return
        self.ec2.controller_running = True
        try:
            yield
        finally:
            self.ec2.controller_running = False

    def inject(self, step: FaultStep, kubelet: Kubelet) -> None:
        if step.kube is not None:
            self.kube.faults.arm(step.kube)
        elif step.cloud is not None and self.ec2 is not None:
            self.ec2.arm(step.cloud)
        elif step.cloud is not None:
            self.cloud.faults.arm(step.cloud)
        elif step.watch is not None:
            self.kube.break_watches(*step.watch)
        elif step.insufficient_capacity:
            self._sim_cloud.fail_launches(step.insufficient_capacity)
        else:
            kubelet.never_register += step.never_register
            kubelet.never_ready += step.never_ready


@dataclass
class _Armed:
    fault: CallFault
    skip: int  # matching calls still to let through
    left: int  # failures still to give


class CallFaults:
    """The armed faults of one port."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._armed: list[_Armed] = []

    def arm(self, fault: CallFault) -> None:
        self._armed.append(_Armed(fault, fault.after, fault.times))

    def take(self, call: str, kind: str | None = None) -> str | None:
        """The error this call fails with, or None. Each fault counts the calls it
        matches on its own; the first that fires gives the error."""
        if not self._armed:
            return None
        fired = [armed for armed in list(self._armed) if self._fires(armed, call, kind)]
        return fired[0].fault.error if fired else None

    def _fires(self, armed: _Armed, call: str, kind: str | None) -> bool:
        fault = armed.fault
        if (fault.calls and call not in fault.calls) or (fault.kinds and kind not in fault.kinds):
            return False
        if fault.rate is not None:
            return self._rng.random() < fault.rate
        if armed.skip:
            armed.skip -= 1
            return False
        armed.left -= 1
        if not armed.left:
            self._armed.remove(armed)
        return True


class FaultyKube:
    """The controller's API server: the memory store, but for the calls faults fail.
    Counts the controller's calls (``calls``), for the bound on a hot loop."""

    def __init__(self, kube: MemoryKube, rng: random.Random) -> None:
        self._kube = kube
        self.faults = CallFaults(rng)
        self.calls = 0
        self.counts: Counter[tuple[str, str]] = Counter()  # by (verb, kind)
        self._watches: dict[str, list[FaultyWatch]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)

    def _call(self, verb: str, kind: str, do: Callable[[], Any]) -> Any:
        self.calls += 1
        self.counts[(verb, kind)] += 1
        error = self.faults.take(verb, kind)
        if error is None:
            return do()
        if error == "timeout" and verb not in READS:
            do()  # the server applied it; the answer did not come back in time
        raise KUBE_ERRORS[error](f"{verb} {kind}: injected fault {error}")

    def get(self, kind: str, name: str, namespace: str | None = None, **kw: Any) -> Any:
        return self._call("get", kind, lambda: self._kube.get(kind, name, namespace, **kw))

    def list(self, kind: str, namespace: str | None = None, **kw: Any) -> Any:
        return self._call("list", kind, lambda: self._kube.list(kind, namespace, **kw))

    def create(self, obj: dict[str, Any], **kw: Any) -> Any:
        return self._call("create", obj.get("kind", ""), lambda: self._kube.create(obj, **kw))

    def update(self, obj: dict[str, Any], **kw: Any) -> Any:
        return self._call("update", obj.get("kind", ""), lambda: self._kube.update(obj, **kw))

    def update_status(self, obj: dict[str, Any], **kw: Any) -> Any:
        kind = obj.get("kind", "")
        return self._call("updateStatus", kind, lambda: self._kube.update_status(obj, **kw))

    def patch(self, kind: str, name: str, patch: Any, namespace: str | None = None, **kw: Any):
        return self._call(
            "patch", kind, lambda: self._kube.patch(kind, name, patch, namespace, **kw)
        )

    def delete(self, kind: str, name: str, namespace: str | None = None, **kw: Any) -> Any:
        return self._call("delete", kind, lambda: self._kube.delete(kind, name, namespace, **kw))

    def evict(self, pod_name: str, namespace: str) -> None:
        self._call("evict", "Pod", lambda: self._kube.evict(pod_name, namespace))

    def watch(self, kind: str, **kw: Any) -> FaultyWatch:
        watch = FaultyWatch(self._kube, kind)
        self._watches.setdefault(kind, []).append(watch)
        return watch

    def break_watches(self, kind: str, error: str) -> None:
        """End the controller's open watches of ``kind`` with ``error`` (drop, 410)."""
        watches = [w for w in self._watches.get(kind, []) if not w.stopped]
        self._watches[kind] = watches
        for watch in watches:
            watch.broken = error


class FaultyWatch:
    """A watch the controller drains, which a fault can end as a reflector sees it end:
    ``drop`` (the connection closed: it watches again from the last resourceVersion it
    saw, and if the server no longer has that far back, lists again) or ``410`` (Gone:
    it lists again). After a list, what changed since the last event it delivered
    arrives as the listing's differences; the events in between are lost."""

    def __init__(self, kube: MemoryKube, kind: str) -> None:
        self._kube, self.kind = kube, kind
        self._watch = kube.watch(kind)
        self._known: dict[str, dict[str, Any]] = {}
        self._last_rv = "0"
        self.broken: str | None = None
        self.stopped = False

    def drain(self) -> list[WatchEvent]:
        events = self._resume() if self.broken else self._watch.drain()
        for event in events:
            self._delivered(event)
        return events

    def stop(self) -> None:
        self.stopped = True
        self._watch.stop()

    def _delivered(self, event: WatchEvent) -> None:
        key = object_key(event.object)
        if event.type == "DELETED":
            self._known.pop(key, None)
        else:
            self._known[key] = event.object
        self._seen(event.object["metadata"].get("resourceVersion") or "0")

    def _seen(self, resource_version: str) -> None:
        if int(resource_version) > int(self._last_rv):
            self._last_rv = resource_version

    def _resume(self) -> list[WatchEvent]:
        error, self.broken = self.broken, None
        self._watch.stop()  # what it still held is lost with the connection
        if error == "drop":
            try:
                self._watch = self._kube.watch(self.kind, resource_version=self._last_rv)
                return self._watch.drain()
            except Gone:
                pass  # too far back: list again
        listing = self._kube.list(self.kind)
        self._watch = self._kube.watch(self.kind, resource_version=listing.resource_version)
        self._seen(listing.resource_version)
        known = dict(self._known)  # drain() updates the real one as it delivers
        return [WatchEvent(t, o) for t, o in relist_changes(known, list(listing.items))]


class FaultyCloud:
    """The controller's cloud provider (whichever the running one is), but for the
    calls faults fail: launch (CreateFleet), terminate (TerminateInstances) and the
    describes behind get and list."""

    def __init__(self, provider: Callable[[], CloudProvider], rng: random.Random) -> None:
        self._provider = provider
        self.faults = CallFaults(rng)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider(), name)

    def _call(self, call: str, do: Callable[[CloudProvider], Any]) -> Any:
        error = self.faults.take(call)
        if error is not None:
            raise CloudProviderError(f"{call}: {CLOUD_MESSAGES[error]}")
        return do(self._provider())

    def create(self, nodeclaim: Any, prices: Any = None) -> Any:
        return self._call("create", lambda p: p.create(nodeclaim, prices))

    def delete(self, nodeclaim: Any) -> None:
        self._call("delete", lambda p: p.delete(nodeclaim))

    def get(self, provider_id: str) -> Any:
        return self._call("get", lambda p: p.get(provider_id))

    def list(self) -> Any:
        return self._call("list", lambda p: p.list())


class Ec2Faults:
    """Cloud faults of the AWS provider, on its EC2 API calls: a botocore ``before-call``
    hook on the controller's EC2 client answers a call a fault fails with EC2's error
    (``EC2_ERRORS``) instead of sending it, so EC2 (moto) never applies it and botocore
    raises the ClientError AWS's answer would give. Only the controller's calls count
    and fail (``controller_running``, set by the engine while it reconciles): the
    emulated world reads EC2 through the same client. A fault with no ``calls`` fails
    any EC2 operation of the controller (CreateLaunchTemplate, DescribeSubnets, ...)."""

    def __init__(self, ec2: Any, rng: random.Random) -> None:
        self.faults = CallFaults(rng)
        self.controller_running = False
        self.calls = 0  # the controller's EC2 calls so far
        ec2.meta.events.register_first("before-call.ec2", self._answer)

    def arm(self, fault: CallFault) -> None:
        operations = frozenset(EC2_OPERATIONS[call] for call in fault.calls)
        self.faults.arm(dataclasses.replace(fault, calls=operations))

    def _answer(self, model: Any, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        if not self.controller_running:
            return None
        self.calls += 1
        error = self.faults.take(model.name)
        if error is None:
            return None
        status, code, message = EC2_ERRORS[error]
        return _HttpError(status), {
            "Error": {"Code": code, "Message": f"{message} (injected fault)"},
            "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
        }


@dataclass(frozen=True)
class _HttpError:
    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
