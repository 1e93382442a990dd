"""EC2 capacity reservations for moto, which has none (moto 5.2): an emulation at its edge.

``install()`` teaches moto's EC2 responses, in process and in ``ThreadedMotoServer``
alike, the calls the controller and the tests make, answered as EC2 answers them:

- ``CreateCapacityReservation`` (type ``default``), ``CancelCapacityReservation``;
- ``DescribeCapacityReservations`` by ids (an unknown id is
  ``InvalidCapacityReservationId.NotFound``) or filters (``state``, ``owner-id``,
  ``instance-match-criteria``, ``instance-type``, ``availability-zone``,
  ``reservation-type``, ``tag:<key>``, ``tag-key``; any other filter is refused);
- ``CreateFleet`` whose launch template targets a reservation
  (``CapacityReservationSpecification.CapacityReservationTarget``): an override of
  another type or zone, or one past the reservation's available count, comes back as a
  per-override ``ReservationCapacityExceeded`` error; a launched instance takes a slot
  and carries ``CapacityReservationId``;
- ``TerminateInstances`` gives the slot back.

Reservations live on moto's EC2 backend (a moto reset drops them). ``add_reservation``
seeds one as the cloud's own doing (with a chosen id, or as a Capacity Block, which EC2
sells rather than creates), ``instances_in`` and ``expire`` are EC2's side of a
reservation's end (the simulator plays it on its clock), and ``hold_outside`` fills a
reservation's free slots with instances outside the cluster (another team's launches), as
the simulator's capacity outages do.
"""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models import ec2_backends
from moto.ec2.responses import EC2Response

RESERVATIONS_ATTRIBUTE = "joiner_capacity_reservations"
EXCEEDED = "ReservationCapacityExceeded"
FILTERS = (
    "state",
    "owner-id",
    "instance-match-criteria",
    "instance-type",
    "availability-zone",
    "reservation-type",
)


@dataclass
class CapacityReservation:
    id: str
    instance_type: str
    zone: str
    total: int
    owner_id: str = ""  # set by add_reservation
    region: str = ""
    match_criteria: str = "open"
    reservation_type: str = "default"
    end: datetime | None = None
    state: str = "active"
    tags: dict[str, str] = field(default_factory=dict)
    instances: set[str] = field(default_factory=set)
    created: datetime = field(default_factory=utcnow)
    outside: int = 0  # slots used by instances outside the cluster

    @property
    def available(self) -> int:
        if self.state != "active":
            return 0
        return max(0, self.total - len(self.instances) - self.outside)

    def describe(self) -> dict[str, Any]:
        arn = f"arn:aws:ec2:{self.region}:{self.owner_id}:capacity-reservation/{self.id}"
        described: dict[str, Any] = {
            "CapacityReservationId": self.id,
            "OwnerId": self.owner_id,
            "CapacityReservationArn": arn,
            "InstanceType": self.instance_type,
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": self.zone,
            "Tenancy": "default",
            "TotalInstanceCount": self.total,
            "AvailableInstanceCount": self.available,
            "State": self.state,
            "StartDate": self.created,
            "EndDateType": "limited" if self.end else "unlimited",
            "InstanceMatchCriteria": self.match_criteria,
            "CreateDate": self.created,
            "ReservationType": self.reservation_type,
            "Tags": [{"Key": k, "Value": v} for k, v in self.tags.items()],
        }
        if self.end is not None:
            described["EndDate"] = self.end
        return described

    def matches(self, name: str, values: Iterable[str]) -> bool:
        """Whether the reservation passes one DescribeCapacityReservations filter."""
        if name == "tag-key":
            return any(fnmatch.fnmatchcase(key, v) for key in self.tags for v in values)
        if name.startswith("tag:"):
            value = self.tags.get(name.removeprefix("tag:"))
            return value is not None and any(fnmatch.fnmatchcase(value, v) for v in values)
        attribute = {
            "state": self.state,
            "owner-id": self.owner_id,
            "instance-match-criteria": self.match_criteria,
            "instance-type": self.instance_type,
            "availability-zone": self.zone,
            "reservation-type": self.reservation_type,
        }[name]
        return any(fnmatch.fnmatchcase(attribute, v) for v in values)


def reservations(backend: Any) -> dict[str, CapacityReservation]:
    """The reservations of one moto EC2 backend (account x region), by id."""
    return backend.__dict__.setdefault(RESERVATIONS_ATTRIBUTE, {})


def add_reservation(account_id: str, region: str, reservation: CapacityReservation) -> str:
    """Seed a reservation, active now (``owner_id`` and ``region`` are set here)."""
    reservation.owner_id, reservation.region = account_id, region
    reservations(ec2_backends[account_id][region])[reservation.id] = reservation
    return reservation.id


def instances_in(account_id: str, region: str, reservation_id: str) -> list[str]:
    """The instances running in a reservation now, sorted."""
    backend = ec2_backends[account_id][region]
    return sorted(reservations(backend)[reservation_id].instances)


def expire(account_id: str, region: str, reservation_id: str) -> None:
    """The reservation reached its end: ``expired``, no slot left to launch into."""
    reservations(ec2_backends[account_id][region])[reservation_id].state = "expired"


def new_reservation_id() -> str:
    return f"cr-{uuid.uuid4().hex[:17]}"


def hold_outside(
    account_id: str, region: str, instance_type: str, zone: str | None, held: bool
) -> None:
    """Instances outside the cluster take every free slot of the type's reservations (in
    ``zone``, or every zone), or give them all back."""
    for reservation in reservations(ec2_backends[account_id][region]).values():
        if reservation.instance_type == instance_type and zone in (None, reservation.zone):
            in_cluster = len(reservation.instances)
            reservation.outside = max(0, reservation.total - in_cluster) if held else 0


# --- the calls ---------------------------------------------------------------------------


def _create_capacity_reservation(self: EC2Response) -> ActionResult:
    self.error_on_dryrun()
    count = int(self._get_param("InstanceCount"))
    if count < 1:
        raise EC2ClientError("InvalidParameterValue", "InstanceCount must be at least 1")
    tags = {
        tag["Key"]: tag["Value"]
        for spec in self._get_param("TagSpecifications", [])
        for tag in spec.get("Tags", [])
    }
    reservation = CapacityReservation(
        id=new_reservation_id(),
        owner_id=self.current_account,
        region=self.region,
        instance_type=self._get_param("InstanceType"),
        zone=self._get_param("AvailabilityZone"),
        total=count,
        match_criteria=self._get_param("InstanceMatchCriteria") or "open",
        end=self._get_param("EndDate"),
        tags=tags,
    )
    add_reservation(self.current_account, self.region, reservation)
    return ActionResult({"CapacityReservation": reservation.describe()})


def _describe_capacity_reservations(self: EC2Response) -> ActionResult:
    self.error_on_dryrun()
    known = reservations(self.ec2_backend)
    ids = self._get_param("CapacityReservationIds", [])
    missing = [i for i in ids if i not in known]
    if missing:
        raise EC2ClientError(
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{missing[0]}' does not exist",
        )
    filters = {f["Name"]: f.get("Values", []) for f in self._get_param("Filters", [])}
    for name in filters:
        if name not in FILTERS and name != "tag-key" and not name.startswith("tag:"):
            raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")
    chosen = [known[i] for i in ids] if ids else list(known.values())
    found = [r for r in chosen if all(r.matches(n, v) for n, v in filters.items())]
    return ActionResult({"CapacityReservations": [r.describe() for r in found]})


def _cancel_capacity_reservation(self: EC2Response) -> ActionResult:
    self.error_on_dryrun()
    reservation_id = self._get_param("CapacityReservationId")
    reservation = reservations(self.ec2_backend).get(reservation_id)
    if reservation is None:
        raise EC2ClientError(
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{reservation_id}' does not exist",
        )
    reservation.state = "cancelled"
    return ActionResult({"Return": True})


# --- launching into a reservation and leaving it ------------------------------------------


def _target_of(backend: Any, spec: dict[str, Any]) -> str | None:
    """The reservation the fleet config's launch template targets, if any."""
    if "LaunchTemplateId" in spec:
        template = backend.get_launch_template(template_id=spec["LaunchTemplateId"])
    else:
        template = backend.get_launch_template_by_name(name=spec["LaunchTemplateName"])
    version = spec.get("Version", "$Default")
    number = {
        "$Latest": template.latest_version_number,
        "$Default": template.default_version_number,
    }.get(version, version)
    data = template.get_version(number).data
    target = (data.get("CapacityReservationSpecification") or {}).get(
        "CapacityReservationTarget"
    ) or {}
    return target.get("CapacityReservationId")


def targeted_reservation(account_id: str, region: str, template_name: str) -> str | None:
    """The reservation a launch template (by name) targets, if any."""
    backend = ec2_backends[account_id][region]
    try:
        return _target_of(backend, {"LaunchTemplateName": template_name, "Version": "$Latest"})
    except (KeyError, EC2ClientError):
        return None


def _exceeded(config: dict[str, Any], override: dict[str, Any], reservation_id: str) -> dict:
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": config["LaunchTemplateSpecification"],
            "Overrides": override,
        },
        "Lifecycle": "on-demand",
        "ErrorCode": EXCEEDED,
        "ErrorMessage": f"Insufficient capacity in capacity reservation {reservation_id}.",
    }


def _fits(backend: Any, reservation: CapacityReservation, override: dict[str, Any]) -> bool:
    zone = backend.get_subnet(override["SubnetId"]).availability_zone
    return (
        override.get("InstanceType") == reservation.instance_type
        and zone == reservation.zone
        and reservation.available > 0
    )


def _wrap_create_fleet(original: Callable[[EC2Response], Any]) -> Callable[..., Any]:
    def create_fleet(self: EC2Response) -> Any:
        configs = self._get_param("LaunchTemplateConfigs", [])
        targeted = {
            i: reservations(self.ec2_backend).get(target)
            for i, config in enumerate(configs)
            if (target := _target_of(self.ec2_backend, config["LaunchTemplateSpecification"]))
        }
        if not targeted:
            return original(self)
        errors, kept = [], []
        for i, config in enumerate(configs):
            reservation = targeted.get(i)
            overrides = config.get("Overrides") or [{}]
            fitting = [
                o for o in overrides if reservation and _fits(self.ec2_backend, reservation, o)
            ]
            target = reservation.id if reservation else "(unknown)"
            errors += [_exceeded(config, o, target) for o in overrides if o not in fitting]
            if fitting:
                kept.append({**config, "Overrides": fitting})
        if not kept:
            return ActionResult(
                {"FleetId": f"fleet-{uuid.uuid4()}", "Instances": [], "Errors": errors}
            )
        self.params["LaunchTemplateConfigs"] = kept  # what moto's CreateFleet reads
        result = original(self)
        _take_slots(self.ec2_backend, result, targeted)
        if errors:
            result.result.setdefault("Errors", []).extend(errors)  # type: ignore[union-attr]
        return result

    return create_fleet


def _take_slots(backend: Any, result: Any, targeted: dict[int, Any]) -> None:
    by_template = {}
    for reservation in targeted.values():
        if reservation is not None:
            by_template[reservation.id] = reservation
    for item in result.result.get("Instances") or []:
        spec = (item.get("LaunchTemplateAndOverrides") or {}).get("LaunchTemplateSpecification")
        reservation = by_template.get(_target_of(backend, spec) or "") if spec else None
        if reservation is None:
            continue
        for instance_id in item["InstanceIds"]:
            reservation.instances.add(instance_id)
            backend.get_instance(instance_id).capacity_reservation_id = reservation.id


def _wrap_terminate(original: Callable[[EC2Response], Any]) -> Callable[..., Any]:
    def terminate_instances(self: EC2Response) -> Any:
        ids = set(self._get_param("InstanceIds", []))
        result = original(self)
        for reservation in reservations(self.ec2_backend).values():
            reservation.instances -= ids
        return result

    return terminate_instances


def install() -> None:
    """Teach moto's EC2 responses the calls above (once per process)."""
    if getattr(EC2Response, "_joiner_reservations", False):
        return
    EC2Response.create_capacity_reservation = _create_capacity_reservation  # type: ignore[attr-defined]
    EC2Response.describe_capacity_reservations = _describe_capacity_reservations  # type: ignore[attr-defined]
    EC2Response.cancel_capacity_reservation = _cancel_capacity_reservation  # type: ignore[attr-defined]
    EC2Response.create_fleet = _wrap_create_fleet(EC2Response.create_fleet)  # type: ignore[method-assign]
    EC2Response.terminate_instances = _wrap_terminate(EC2Response.terminate_instances)  # type: ignore[method-assign]
    EC2Response._joiner_reservations = True  # type: ignore[attr-defined]
