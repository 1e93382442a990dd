"""Run Pulumi programs under mocks and record what they register.

``run_program(build)`` calls ``build()`` inside a mocked Pulumi runtime, waits for every
registration, and returns a ``Program`` with each resource's type, name, inputs, parent and
dependencies, plus the resolved values of the Outputs ``build`` returned. The mocks stand
in for the cloud APIs (there is no Pulumi engine here): they echo inputs and add the few
computed outputs the components read (ARNs, URLs, the EKS cluster's kubeconfig and OIDC
provider).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.config import set_all_config
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await
from pulumi_joiner._common import declared_outputs

ACCOUNT = "123456789012"
REGION = "us-west-2"
OIDC_ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
OIDC_PROVIDER_ARN = f"arn:aws:iam::{ACCOUNT}:oidc-provider/{OIDC_ISSUER}"
CLUSTER_ENDPOINT = "https://EXAMPLE.gr7.us-west-2.eks.amazonaws.com"
CLUSTER_SECURITY_GROUP = "sg-0cluster"


@dataclass
class Registered:
    type: str
    name: str
    inputs: dict[str, Any]
    urn: str
    parent: str
    dependencies: list[str]
    custom: bool
    provider: str  # "<provider urn>::<provider id>" for custom resources, else ""


@dataclass
class Program:
    resources: list[Registered] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_type(self, type_token: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str, name_contains: str = "") -> Registered:
        matches = [r for r in self.of_type(type_token) if name_contains in r.name]
        assert len(matches) == 1, f"{type_token} {name_contains!r}: {[m.name for m in matches]}"
        return matches[0]

    def by_urn(self, urn: str) -> Registered:
        return next(r for r in self.resources if r.urn == urn)

    def kubernetes(self, kind: str) -> list[Registered]:
        return [
            r
            for r in self.resources
            if r.type.startswith("kubernetes:") and r.inputs.get("kind") == kind
        ]

    def ancestors(self, resource: Registered) -> list[str]:
        chain, parent = [], resource.parent
        while parent:
            owner = self.by_urn(parent) if any(r.urn == parent for r in self.resources) else None
            if owner is None:
                break
            chain.append(owner.type)
            parent = owner.parent
        return chain

    def depends_on(self, resource: Registered, other: Registered) -> bool:
        """True when ``resource`` directly depends on ``other``."""
        return other.urn in resource.dependencies


class RecordingMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        outputs = dict(args.inputs)
        name = outputs.get("name") or args.name
        computed = _computed_outputs(args.typ, name, outputs)
        return f"{args.name}-id", {"name": name, **outputs, **computed}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return INVOKES.get(args.token, {})


INVOKES: dict[str, dict[str, Any]] = {
    "aws:index/getRegion:getRegion": {"region": REGION, "name": REGION, "id": REGION},
    "aws:index/getCallerIdentity:getCallerIdentity": {
        "accountId": ACCOUNT,
        "arn": f"arn:aws:iam::{ACCOUNT}:user/test",
        "userId": "AIDTEST",
        "id": ACCOUNT,
    },
    "aws:index/getPartition:getPartition": {
        "partition": "aws",
        "dnsSuffix": "amazonaws.com",
        "reverseDnsPrefix": "com.amazonaws",
        "id": "aws",
    },
    "aws:index/getAvailabilityZones:getAvailabilityZones": {
        "names": [f"{REGION}a", f"{REGION}b", f"{REGION}c"],
        "zoneIds": ["usw2-az1", "usw2-az2", "usw2-az3"],
        "id": REGION,
    },
    "aws:ecr/getAuthorizationToken:getAuthorizationToken": {
        "userName": "AWS",
        "password": "token",
        "authorizationToken": "QVdTOnRva2Vu",
        "proxyEndpoint": f"https://{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com",
        "expiresAt": "2030-01-01T00:00:00Z",
        "id": ACCOUNT,
    },
}


# What a referenced cluster stack (stacks/new_cluster) exports, for StackReference mocks.
REFERENCED_STACK_OUTPUTS = {
    "clusterName": "referenced",
    "clusterEndpoint": CLUSTER_ENDPOINT,
    "oidcProviderArn": OIDC_PROVIDER_ARN,
    "oidcProviderUrl": f"https://{OIDC_ISSUER}",
    "kubeconfig": json.dumps({"clusters": [{"cluster": {"server": CLUSTER_ENDPOINT}}]}),
}


def _computed_outputs(type_token: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    if type_token == "pulumi:pulumi:StackReference":
        return {"outputs": REFERENCED_STACK_OUTPUTS, "secretOutputNames": []}
    if type_token == "eks:index:Cluster":
        return {
            "kubeconfigJson": json.dumps(
                {"clusters": [{"cluster": {"server": CLUSTER_ENDPOINT}, "name": name}]}
            ),
            "oidcProviderArn": OIDC_PROVIDER_ARN,
            "oidcProviderUrl": f"https://{OIDC_ISSUER}",
            "oidcIssuer": OIDC_ISSUER,
            "clusterSecurityGroupId": CLUSTER_SECURITY_GROUP,
        }
    if type_token == "aws:iam/role:Role":
        return {"arn": f"arn:aws:iam::{ACCOUNT}:role/{name}"}
    if type_token == "aws:iam/policy:Policy":
        return {"arn": f"arn:aws:iam::{ACCOUNT}:policy/{name}"}
    if type_token == "aws:kms/key:Key":
        return {"arn": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{name}-id", "keyId": f"{name}-id"}
    if type_token == "aws:sqs/queue:Queue":
        return {
            "arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}",
            "url": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}",
        }
    if type_token == "aws:ecr/repository:Repository":
        return {
            "registryId": ACCOUNT,
            "repositoryUrl": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{name}",
        }
    if type_token == "docker-build:index:Image":
        return {"ref": f"{inputs['tags'][0]}@sha256:{'0' * 64}"}
    return {"arn": f"arn:aws:mock:{REGION}:{ACCOUNT}:{type_token}/{name}"}


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks, program: Program) -> None:
        super().__init__(mocks)
        self.program = program

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self._record(request, request.object, response.urn, request.custom)
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self._record(request, request.properties, response.urn, custom=True)
        return response

    def _record(self, request: Any, properties: Any, urn: str, custom: bool) -> None:
        self.program.resources.append(
            Registered(
                type=request.type,
                name=request.name,
                inputs=rpc.deserialize_properties(properties),
                urn=urn,
                parent=request.parent,
                dependencies=list(request.dependencies),
                custom=custom,
                provider=request.provider,
            )
        )


def run_program(
    build: Callable[[], dict[str, Any] | None],
    config: dict[str, str] | None = None,
    project: str = "joiner",
    stack: str = "dev",
    preview: bool = False,
) -> Program:
    """Run ``build`` under mocks; return what it registered and its outputs, resolved."""
    program = Program()
    mocks = RecordingMocks()
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    set_all_config(dict(config or {}))
    pulumi.runtime.set_mocks(
        mocks,
        project=project,
        stack=stack,
        preview=preview,
        monitor=RecordingMonitor(mocks, program),
    )

    async def main() -> None:
        exported = build() or {}
        for key, value in exported.items():
            program.outputs[key] = await pulumi.Output.from_input(value).future()

    _sync_await(run_pulumi_func(main))
    return program


def component_outputs(
    build: Callable[[], pulumi.ComponentResource],
) -> Callable[[], dict[str, Any]]:
    """A program for ``run_program`` that builds one component and returns every output the
    component declares, by its attribute name."""
    return lambda: declared_outputs(build())


def as_json(value: Any) -> Any:
    """A recorded input as the Kubernetes provider sends it: the engine carries every
    number as a double (recorded as 32768.0), and the provider, in Go, writes a whole
    double without a fraction (32768), which an integer field takes."""
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
