"""EC2NodeClass status: subnets, security groups, AMIs and instance profile resolved
against AWS, with one condition per part and Ready over all of them [SPEC 1, 4.1]; and
the capacity reservations the class selects, whose condition does not hold Ready back
(without them, nodes launch on-demand or spot).

``NodeClassResolver.resolve`` never raises for bad input or AWS errors: every problem
becomes a False condition whose message names the field. ``nodeclass_hash`` is the static
drift hash (everything but the selector terms, which drift through their results).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from joiner.api import conditions as cond
from joiner.api import ec2nodeclass as api
from joiner.api.compatibility import readable_kubelet
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.clock import Clock
from joiner.cloudprovider.aws.amis import AMIResolver
from joiner.cloudprovider.aws.capacityreservations import (
    ReservationLedger,
    resolve_capacity_reservations,
)
from joiner.cloudprovider.aws.clients import AWSClients
from joiner.cloudprovider.aws.cluster import ClusterInfo
from joiner.cloudprovider.aws.instanceprofiles import InstanceProfileProvider
from joiner.cloudprovider.aws.instancetypes import validate_kubelet
from joiner.cloudprovider.aws.securitygroups import resolve_security_groups
from joiner.cloudprovider.aws.selectors import ResolutionError
from joiner.cloudprovider.aws.subnets import resolve_subnets
from joiner.cloudprovider.aws.tags import restricted_tag_problems

log = logging.getLogger(__name__)

HASH_VERSION = "v1"
_PARTS = (api.SUBNETS_READY, api.SECURITY_GROUPS_READY, api.AMIS_READY, api.INSTANCE_PROFILE_READY)


def validate_nodeclass(nodeclass: EC2NodeClass) -> list[str]:
    """Spec problems the API server's schema would not catch, each naming its field."""
    problems = []
    if bool(nodeclass.role) == bool(nodeclass.instance_profile):
        problems.append("spec: exactly one of role and instanceProfile must be set")
    if nodeclass.ami_family is not None and nodeclass.ami_family not in api.AMI_FAMILIES:
        problems.append(
            f"spec.amiFamily: unknown family {nodeclass.ami_family!r} "
            f"(want one of {', '.join(api.AMI_FAMILIES)})"
        )
    if nodeclass.resolved_ami_family().startswith("Windows"):
        problems.append("spec.amiFamily: Windows nodes are not supported by joiner")
    if nodeclass.instance_store_policy not in (None, "RAID0"):
        problems.append(
            f"spec.instanceStorePolicy: must be RAID0, got {nodeclass.instance_store_policy!r}"
        )
    problems.extend(restricted_tag_problems(nodeclass.tags))
    problems.extend(validate_kubelet(readable_kubelet(nodeclass.kubelet)))
    return problems


def is_ready(nodeclass: EC2NodeClass) -> bool:
    return cond.is_true(nodeclass.status.get("conditions"), api.READY)


def not_ready_message(nodeclass: EC2NodeClass) -> str:
    ready = cond.get_condition(nodeclass.status.get("conditions"), api.READY)
    if ready is None:
        return f"EC2NodeClass {nodeclass.name!r} has not been resolved yet"
    return f"EC2NodeClass {nodeclass.name!r} is not ready: {ready.get('message', '')}"


class NodeClassResolver:
    def __init__(
        self,
        clients: AWSClients,
        clock: Clock,
        cluster: ClusterInfo,
        region: str,
        ledger: ReservationLedger | None = None,
    ) -> None:
        self._clients = clients
        self._clock = clock
        self.ledger = ledger or ReservationLedger()
        self._amis = AMIResolver(clients.ec2, clients.ssm, cluster.kubernetes_version)
        self.instance_profiles = InstanceProfileProvider(clients.iam, cluster.name, region)

    def resolve(self, nodeclass: EC2NodeClass) -> dict[str, Any]:
        """The class's new status (the input is not modified)."""
        status = copy.deepcopy(nodeclass.status)
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        ec2 = self._clients.ec2
        parts: list[tuple[str, str, Callable[[], Any]]] = [
            (
                api.SUBNETS_READY,
                "subnets",
                lambda: resolve_subnets(ec2, nodeclass.subnet_selector_terms),
            ),
            (
                api.SECURITY_GROUPS_READY,
                "securityGroups",
                lambda: resolve_security_groups(ec2, nodeclass.security_group_selector_terms),
            ),
            (api.AMIS_READY, "amis", lambda: self._amis.resolve(nodeclass.ami_selector_terms)),
            (
                api.INSTANCE_PROFILE_READY,
                "instanceProfile",
                lambda: self.instance_profiles.ensure(nodeclass),
            ),
        ]
        for condition, key, resolve in parts:
            self._resolve_part(status, conditions, condition, key, resolve)
        self._resolve_reservations(nodeclass, status, conditions)
        problems = validate_nodeclass(nodeclass)
        self._set(conditions, api.VALIDATION_SUCCEEDED, "; ".join(problems), "ValidationFailed")
        self._set_ready(conditions)
        return status

    def _resolve_part(
        self,
        status: dict[str, Any],
        conditions: list[dict[str, Any]],
        condition: str,
        key: str,
        resolve: Callable[[], Any],
    ) -> None:
        try:
            status[key] = resolve()
        except ResolutionError as error:
            status.pop(key, None)
            self._set(conditions, condition, str(error), "NotFound")
            return
        except (BotoCoreError, ClientError) as error:
            log.warning("resolving %s failed: %s", key, error)
            self._set(
                conditions, condition, f"AWS error while resolving {key}: {error}", "AWSError"
            )
            return
        self._set(conditions, condition, "", "")

    def _resolve_reservations(
        self, nodeclass: EC2NodeClass, status: dict[str, Any], conditions: list[dict[str, Any]]
    ) -> None:
        """``status.capacityReservations`` and the ledger's counts; a term that matches
        nothing makes the condition False (NotFound), naming the term."""
        terms = nodeclass.capacity_reservation_selector_terms
        token = self.ledger.token()
        try:
            resolved = resolve_capacity_reservations(self._clients.ec2, terms, self._clock.now())
        except ResolutionError as error:
            status.pop("capacityReservations", None)
            self._set(conditions, api.CAPACITY_RESERVATIONS_READY, str(error), "NotFound")
            return
        except (BotoCoreError, ClientError) as error:  # keep what was found before
            log.warning("resolving capacity reservations failed: %s", error)
            problem = f"AWS error while resolving capacityReservations: {error}"
            self._set(conditions, api.CAPACITY_RESERVATIONS_READY, problem, "AWSError")
            return
        self.ledger.sync(resolved.available, token)
        if resolved.reservations:
            status["capacityReservations"] = resolved.reservations
        else:
            status.pop("capacityReservations", None)
        problem = "".join(
            f"no active capacity reservation matches {where}; " for where in resolved.unmatched
        ).removesuffix("; ")
        reason = "NotFound" if problem else ""
        self._set(conditions, api.CAPACITY_RESERVATIONS_READY, problem, reason)

    def _set(self, conditions: list[dict[str, Any]], type_: str, problem: str, reason: str) -> None:
        status = cond.FALSE if problem else cond.TRUE
        cond.set_condition(conditions, type_, status, self._clock.now(), reason or type_, problem)

    def _set_ready(self, conditions: list[dict[str, Any]]) -> None:
        failing = [
            f"{c['type']}: {c.get('message', '')}"
            for t in (*_PARTS, api.VALIDATION_SUCCEEDED)
            if (c := cond.get_condition(conditions, t)) is not None and c["status"] != cond.TRUE
        ]
        self._set(conditions, api.READY, "; ".join(failing), "NotReady")
