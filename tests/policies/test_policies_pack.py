"""The pack as the engine loads it: metadata, the analyzer service, the documentation."""

import json
import re
import runpy
from pathlib import Path

import pulumi_policy
import pytest
import yaml
from google.protobuf import json_format, struct_pb2
from joiner.infra.iam import interruption_queue_policy
from joiner_policies import ALL_POLICIES, POLICIES_BY_NAME
from pulumi.runtime.proto import analyzer_pb2 as proto
from pulumi_policy import EnforcementLevel, StackValidationPolicy
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "policies"
DOCS = ROOT / "docs" / "policies.md"


def test_policies_have_unique_names_levels_and_descriptions():
    names = [policy.name for policy in ALL_POLICIES]
    assert len(names) == len(set(names)) == 18
    for policy in ALL_POLICIES:
        assert policy.enforcement_level in (EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY)
        assert policy.description.endswith(".")


def test_main_only_builds_the_pack_from_all_policies(monkeypatch):
    built = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: built.append(kwargs))
    runpy.run_path(str(PACK / "__main__.py"), run_name="__main__")
    assert len(built) == 1
    assert built[0]["name"] == "joiner"
    assert built[0]["policies"] is ALL_POLICIES


def test_the_pack_runs_in_the_repository_virtualenv():
    metadata = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert metadata["runtime"]["name"] == "python"
    assert (PACK / metadata["runtime"]["options"]["virtualenv"]).resolve() == ROOT / ".venv"
    assert re.fullmatch(r"\d+\.\d+\.\d+", metadata["version"])


def servicer() -> _PolicyAnalyzerServicer:
    return _PolicyAnalyzerServicer("joiner", "0.1.0", ALL_POLICIES, EnforcementLevel.MANDATORY)


def test_the_analyzer_describes_every_policy_and_its_config():
    info = servicer().GetAnalyzerInfo(None, None)
    described = {policy.name: policy for policy in info.policies}
    assert list(described) == [policy.name for policy in ALL_POLICIES]
    assert described["eks-secrets-encryption"].enforcementLevel == proto.ADVISORY
    assert described["nodepool-limits"].enforcementLevel == proto.MANDATORY
    schema = json_format.MessageToDict(described["autoscaler-controller-hardened"].configSchema)
    assert schema["properties"]["controllerNames"]["default"] == ["karpenter", "joiner"]


def struct(value: dict) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(value)
    return message


WILDCARD = '{"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'


def test_resources_go_through_the_analyzer_as_through_the_engine():
    request = proto.AnalyzeRequest(
        type="aws:iam/policy:Policy",
        properties=struct({"policy": WILDCARD, "name": "admin"}),
        urn="urn:pulumi:dev::demo::aws:iam/policy:Policy::admin",
        name="admin",
    )
    response = servicer().Analyze(request, None)
    reported = {(d.policyName, d.enforcementLevel) for d in response.diagnostics}
    assert reported == {
        ("iam-no-wildcard-actions", proto.MANDATORY),
        ("iam-ec2-tag-conditions", proto.MANDATORY),
        ("iam-passrole-scoped", proto.MANDATORY),
    }


def test_values_unknown_during_preview_defer_the_policy():
    request = proto.AnalyzeRequest(
        type="aws:iam/policy:Policy",
        properties=struct({"policy": UNKNOWN_STRING_VALUE}),
        urn="urn:pulumi:dev::demo::aws:iam/policy:Policy::later",
        name="later",
    )
    response = servicer().Analyze(request, None)
    assert {d.policyName for d in response.diagnostics} == {
        "iam-no-wildcard-actions",
        "iam-ec2-tag-conditions",
        "iam-passrole-scoped",
    }
    for diagnostic in response.diagnostics:
        assert diagnostic.enforcementLevel == proto.ADVISORY
        assert "during preview: string value at .policy can't be known" in diagnostic.message


def queue(name: str) -> proto.AnalyzerResource:
    return proto.AnalyzerResource(
        type="aws:sqs/queue:Queue",
        properties=struct({"sqsManagedSseEnabled": True}),
        urn=f"urn:pulumi:dev::demo::aws:sqs/queue:Queue::{name}",
        name=name,
    )


def test_stack_policies_receive_property_dependencies():
    # The queue policy is tied to its queue only through propertyDependencies (its URL and
    # the queue's name are unrelated): the engine's way, the one that works in previews.
    covered, bare = queue("covered"), queue("bare")
    document = json.dumps(interruption_queue_policy("arn:aws:sqs:us-west-2:123456789012:x"))
    queue_policy = proto.AnalyzerResource(
        type="aws:sqs/queuePolicy:QueuePolicy",
        properties=struct({"policy": document, "queueUrl": "https://sqs/unrelated-name"}),
        urn="urn:pulumi:dev::demo::aws:sqs/queuePolicy:QueuePolicy::p",
        name="p",
        dependencies=[covered.urn],
        propertyDependencies={"queueUrl": proto.AnalyzerPropertyDependencies(urns=[covered.urn])},
    )
    request = proto.AnalyzeStackRequest(resources=[covered, bare, queue_policy])
    response = servicer().AnalyzeStack(request, None)
    assert [(d.policyName, d.urn) for d in response.diagnostics] == [
        ("sqs-queue-denies-insecure-transport", bare.urn)
    ]


@pytest.mark.parametrize("name", list(POLICIES_BY_NAME))
def test_every_policy_is_documented_with_its_level_and_config(name):
    docs = DOCS.read_text()
    policy = POLICIES_BY_NAME[name]
    level = policy.enforcement_level.value
    kind = ", stack" if isinstance(policy, StackValidationPolicy) else ""
    assert f"\n### {name} ({level}{kind})\n" in docs
    assert re.search(rf"^\| `{name}` \| {level} \|", docs, re.MULTILINE)
    section = docs.split(f"### {name} ")[1].split("\n### ")[0]
    for key in policy.config_schema.properties if policy.config_schema else []:
        assert f"`{key}`" in section
    assert "pulumi preview --policy-pack policies" in docs
