"""Instance profiles: created and owned by the controller for a class's ``role``, or the
class's own ``instanceProfile`` checked for existence [SPEC 4.1, 9].

An owned profile is named ``<cluster>_<hash of region and class name>`` and tagged with
the cluster, ``eks:eks-cluster-name``, the region and the class, which is what the
controller's IAM policy requires to create, change and delete it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from botocore.exceptions import ClientError

from joiner.api import labels as wk
from joiner.api.ec2nodeclass import EC2NodeClass
from joiner.cloudprovider.aws.selectors import ResolutionError
from joiner.cloudprovider.aws.tags import EKS_CLUSTER_NAME_TAG, cluster_tag


def _not_found(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "NoSuchEntity"


class InstanceProfileProvider:
    def __init__(self, iam: Any, cluster_name: str, region: str) -> None:
        self._iam = iam
        self._cluster = cluster_name
        self._region = region

    def profile_name(self, nodeclass: EC2NodeClass) -> str:
        digest = hashlib.sha256(f"{self._region}/{nodeclass.name}".encode()).hexdigest()[:16]
        return f"{self._cluster}_{digest}"[:128]

    def tags(self, nodeclass: EC2NodeClass) -> dict[str, str]:
        return {
            cluster_tag(self._cluster): "owned",
            EKS_CLUSTER_NAME_TAG: self._cluster,
            wk.REGION: self._region,
            wk.EC2NODECLASS: nodeclass.name,
        }

    def ensure(self, nodeclass: EC2NodeClass) -> str:
        """The profile the class's nodes launch with; raises ResolutionError when the
        role or profile named by the class does not exist."""
        if nodeclass.instance_profile:
            return self._existing(nodeclass.instance_profile)
        role = (nodeclass.role or "").rsplit("/", 1)[-1]  # a role ARN works too
        self._check_role(role)
        name = self.profile_name(nodeclass)
        profile = self._get(name)
        if profile is None:
            self._iam.create_instance_profile(
                InstanceProfileName=name,
                Tags=[{"Key": k, "Value": v} for k, v in self.tags(nodeclass).items()],
            )
            roles: list[str] = []
        else:
            roles = [r["RoleName"] for r in profile.get("Roles", [])]
        if roles != [role]:
            for old in roles:
                self._iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=old)
            self._iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
        return name

    def delete(self, nodeclass: EC2NodeClass) -> None:
        """Remove the owned profile of a deleted class (nothing when the class named its
        own profile, or when it is already gone)."""
        if nodeclass.instance_profile:
            return
        name = self.profile_name(nodeclass)
        profile = self._get(name)
        if profile is None:
            return
        for role in profile.get("Roles", []):
            self._iam.remove_role_from_instance_profile(
                InstanceProfileName=name, RoleName=role["RoleName"]
            )
        self._iam.delete_instance_profile(InstanceProfileName=name)

    def _existing(self, name: str) -> str:
        if self._get(name) is None:
            raise ResolutionError(f"spec.instanceProfile: instance profile {name!r} not found")
        return name

    def _check_role(self, role: str) -> None:
        if not role:
            raise ResolutionError("spec.role or spec.instanceProfile is required")
        try:
            self._iam.get_role(RoleName=role)
        except ClientError as error:
            if _not_found(error):
                raise ResolutionError(f"spec.role: IAM role {role!r} not found") from error
            raise

    def _get(self, name: str) -> dict[str, Any] | None:
        try:
            return self._iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        except ClientError as error:
            if _not_found(error):
                return None
            raise
