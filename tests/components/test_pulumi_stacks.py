"""The stack programs, run to completion under mocks as `pulumi up` would run them."""

import json
import re
import runpy
import shlex
from pathlib import Path

import pulumi
import pytest
import yaml
from pulumi.runtime.settings import get_root_resource
from pulumi_harness import (
    ACCOUNT,
    OIDC_ISSUER,
    OIDC_PROVIDER_ARN,
    REFERENCED_STACK_OUTPUTS,
    REGION,
)

ROOT = Path(__file__).resolve().parents[2]
NEW_CLUSTER = ROOT / "stacks" / "new_cluster" / "__main__.py"
EXISTING_CLUSTER = ROOT / "stacks" / "existing_cluster" / "__main__.py"


def stack(path: Path):
    def program():
        runpy.run_path(str(path), run_name="__main__")
        return dict(get_root_resource().outputs)

    return program


def stack_config(path: Path) -> dict[str, str]:
    """A Pulumi.<stack>.yaml as the engine passes it: objects as JSON strings."""
    config = yaml.safe_load(path.read_text())["config"]
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def test_project_files_point_at_the_programs():
    root = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert (root["name"], root["main"], root["runtime"]["name"]) == (
        "joiner",
        "stacks/new_cluster",
        "python",
    )
    existing = yaml.safe_load((ROOT / "stacks" / "existing_cluster" / "Pulumi.yaml").read_text())
    assert existing["runtime"]["options"]["virtualenv"] == "../../.venv"
    plugin = yaml.safe_load((ROOT / "PulumiPlugin.yaml").read_text())
    assert plugin["runtime"]["name"] == "python"


MY_ADDRESS = "203.0.113.7"  # what `curl -s https://checkip.amazonaws.com` answers here
NEW = {
    "aws:region": "us-west-2",
    "joiner:clusterName": "demo",
    "joiner:publicAccessCidrs": f'["{MY_ADDRESS}/32"]',
}


def test_new_cluster_runs_with_region_name_and_ranges(run):
    program = run(stack(NEW_CLUSTER), config=NEW)
    eks = program.one("eks:index:Cluster")
    assert eks.inputs["name"] == "demo"
    assert (
        eks.inputs["endpointPublicAccess"],
        eks.inputs["endpointPrivateAccess"],
        eks.inputs["publicAccessCidrs"],
    ) == (True, True, [f"{MY_ADDRESS}/32"])
    # Secrets are encrypted with a key created for the cluster.
    key = program.one("aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True
    key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/joiner-secrets-id"
    assert eks.inputs["encryptionConfigKeyArn"] == key_arn
    assert program.outputs["secretsEncryptionKeyArn"] == key_arn
    assert program.one("joiner:index:Cluster")
    assert program.outputs["clusterName"] == "demo"
    assert program.outputs["oidcProviderArn"] == OIDC_PROVIDER_ARN
    assert program.outputs["oidcProviderUrl"] == f"https://{OIDC_ISSUER}"
    assert program.outputs["interruptionQueue"] == "demo"
    assert program.outputs["controllerRoleArn"].startswith(f"arn:aws:iam::{ACCOUNT}:role/")
    assert "clusters" in program.outputs["kubeconfig"]
    # No image configured: the controller image is built and pushed.
    assert program.one("docker-build:index:Image")
    assert [
        r.inputs["metadata"]["name"] for r in program.of_type("kubernetes:karpenter.sh/v1:NodePool")
    ] == ["default"]


def test_new_cluster_with_a_given_secrets_key(run):
    key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    program = run(stack(NEW_CLUSTER), config={**NEW, "joiner:secretsEncryptionKeyArn": key_arn})
    assert not program.of_type("aws:kms/key:Key")
    assert program.one("eks:index:Cluster").inputs["encryptionConfigKeyArn"] == key_arn
    assert program.outputs["secretsEncryptionKeyArn"] == key_arn


def test_new_cluster_defaults_the_name_to_the_stack(run):
    config = {k: v for k, v in NEW.items() if k != "joiner:clusterName"}
    program = run(stack(NEW_CLUSTER), config=config, stack="staging")
    assert program.outputs["clusterName"] == "staging"


def test_new_cluster_without_ranges_stops_with_the_command_that_sets_them(run):
    config = {"aws:region": "us-west-2", "joiner:clusterName": "demo"}
    expected = re.escape(
        "Missing required configuration 'joiner:publicAccessCidrs': the IPv4 ranges allowed"
        " to reach the cluster's public API endpoint (Pulumi and kubectl use it), e.g. this"
        " machine's address: pulumi config set --path 'joiner:publicAccessCidrs[0]'"
        ' "$(curl -s https://checkip.amazonaws.com)/32"'
    )
    with pytest.raises(pulumi.RunError, match=f"^{expected}$"):
        run(stack(NEW_CLUSTER), config=config, preview=True)
    # The example configuration deliberately leaves the ranges to the user.
    with pytest.raises(pulumi.RunError, match=f"^{expected}$"):
        run(stack(NEW_CLUSTER), config=stack_config(ROOT / "Pulumi.dev.yaml"), preview=True)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            f"{MY_ADDRESS}/32",
            "config 'joiner:publicAccessCidrs' must be a list of strings, got '203.0.113.7/32':"
            " set it with pulumi config set --path 'joiner:publicAccessCidrs[0]' 203.0.113.7/32",
        ),
        (
            '["0.0.0.0/33"]',
            "Cluster 'joiner': argument 'public_access_cidrs': '0.0.0.0/33' is not a CIDR block",
        ),
    ],
)
def test_new_cluster_rejects_bad_ranges(run, value, message):
    config = {**NEW, "joiner:publicAccessCidrs": value}
    with pytest.raises(pulumi.RunError, match=re.escape(message)):
        run(stack(NEW_CLUSTER), config=config, preview=True)


def test_new_cluster_with_the_example_stack_config(run):
    config = {
        **stack_config(ROOT / "Pulumi.dev.yaml"),
        "joiner:publicAccessCidrs": '["10.1.0.0/16"]',
    }
    program = run(stack(NEW_CLUSTER), config=config)
    pools = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in program.of_type("kubernetes:karpenter.sh/v1:NodePool")
    }
    assert sorted(pools) == ["arm", "default"]
    assert pools["default"]["limits"] == {"cpu": "200"}
    assert pools["arm"]["template"]["spec"]["requirements"][0]["values"] == ["arm64"]
    eks = program.one("eks:index:Cluster")
    assert (eks.inputs["name"], eks.inputs["publicAccessCidrs"]) == ("joiner-dev", ["10.1.0.0/16"])


def test_new_cluster_rejects_a_bad_node_pool_override(run):
    config = {**NEW, "joiner:nodePools": '{"default": {"nodePool": {"weight": 1000}}}'}
    with pytest.raises(
        pulumi.RunError, match=r"argument 'node_pool' is invalid: spec\.weight: must be <= 100"
    ):
        run(stack(NEW_CLUSTER), config=config, preview=True)
    config["joiner:nodePools"] = '{"default": {"limits": {}}}'
    with pytest.raises(
        pulumi.RunError, match=r"config 'joiner:nodePools.default' has unknown keys \['limits'\]"
    ):
        run(stack(NEW_CLUSTER), config=config, preview=True)


EXISTING = {
    "aws:region": "us-west-2",
    "joiner:clusterName": "prod",
    "joiner:oidcProviderArn": OIDC_PROVIDER_ARN,
    "joiner:oidcProviderUrl": f"https://{OIDC_ISSUER}",
    "joiner:subnetIds": '["subnet-1"]',
    "joiner:image": "registry.example/joiner:1",
}


def test_existing_cluster_from_config(run):
    program = run(stack(EXISTING_CLUSTER), config=EXISTING)
    assert not program.of_type("eks:index:Cluster")
    assert program.one("joiner:index:Autoscaler")
    assert program.outputs["interruptionQueue"] == "prod"
    assert program.outputs["namespace"] == "karpenter"
    assert [t.inputs["resourceId"] for t in program.of_type("aws:ec2/tag:Tag")] == ["subnet-1"]
    trust = program.one("aws:iam/role:Role", "controller").inputs["assumeRolePolicy"]
    assert OIDC_PROVIDER_ARN in trust


def test_existing_cluster_from_a_stack_reference(run):
    config = {
        "aws:region": "us-west-2",
        "joiner:clusterStack": "org/joiner/dev",
        "joiner:image": "registry.example/joiner:1",
    }
    program = run(stack(EXISTING_CLUSTER), config=config)
    reference = program.one("pulumi:pulumi:StackReference")
    assert reference.inputs["name"] == "org/joiner/dev"
    env = {
        item["name"]: item["value"]
        for item in program.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"][
            "containers"
        ][0]["env"]
    }
    assert (env["CLUSTER_NAME"], env["CLUSTER_ENDPOINT"]) == (
        "referenced",
        REFERENCED_STACK_OUTPUTS["clusterEndpoint"],
    )
    provider = program.one("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == REFERENCED_STACK_OUTPUTS["kubeconfig"]
    trust = program.one("aws:iam/role:Role", "controller").inputs["assumeRolePolicy"]
    assert OIDC_PROVIDER_ARN in trust


def test_existing_cluster_without_a_cluster_is_a_clear_error(run):
    with pytest.raises(
        pulumi.RunError, match="Missing required configuration 'joiner:clusterName'"
    ):
        run(stack(EXISTING_CLUSTER), config={"aws:region": "us-west-2"}, preview=True)


# The shell's command substitutions in the README, and what they print here.
SUBSTITUTIONS = {"$(curl -s https://checkip.amazonaws.com)": MY_ADDRESS}
PROJECT_DIRECTORIES = {NEW_CLUSTER: ROOT, EXISTING_CLUSTER: EXISTING_CLUSTER.parent}


def substituted(word: str) -> str:
    for command, output in SUBSTITUTIONS.items():
        word = word.replace(command, output)
    assert "$(" not in word, f"unknown command substitution in the README: {word}"
    return word


def set_path(config: dict[str, str], path: str, value: str) -> None:
    """`pulumi config set --path 'key[i]' value` for list paths: element i of the list."""
    key, index = re.fullmatch(r"([^\[]+)\[(\d+)\]", path).groups()
    values = json.loads(config.get(key, "[]"))
    assert int(index) <= len(values), f"{path}: the README skips an index"
    values[int(index) : int(index) + 1] = [value]
    config[key] = json.dumps(values)


def readme_deployments() -> list[tuple[Path, str, dict[str, str]]]:
    """(program, stack, config) for each shell block of the README's Pulumi section; the
    config starts from the project's Pulumi.<stack>.yaml, as `pulumi stack init` finds it."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Deploy with Pulumi", 1)[1].split("\n## ", 1)[0]
    deployments = []
    for block in section.split("```sh\n")[1:]:
        lines = [
            [substituted(word) for word in shlex.split(line, comments=True)]
            for line in block.split("```", 1)[0].splitlines()
        ]
        program, stack_name, config = NEW_CLUSTER, None, {}
        for words in lines:
            if words[:2] == ["cd", "stacks/existing_cluster"]:
                program = EXISTING_CLUSTER
            elif words[:3] == ["pulumi", "stack", "init"]:
                stack_name = words[3]
                example = PROJECT_DIRECTORIES[program] / f"Pulumi.{stack_name}.yaml"
                config = stack_config(example) if example.exists() else {}
            elif words[:4] == ["pulumi", "config", "set", "--path"]:
                set_path(config, words[4], words[5])
            elif words[:3] == ["pulumi", "config", "set"]:
                config[words[3]] = words[4]
        assert any(words == ["pulumi", "up"] for words in lines)
        deployments.append((program, stack_name, config))
    return deployments


def test_readme_instructions_run_as_written(run):
    deployments = readme_deployments()
    assert [program for program, _, _ in deployments] == [NEW_CLUSTER, EXISTING_CLUSTER]
    for program_path, stack_name, config in deployments:
        program = run(stack(program_path), config=config, stack=stack_name)
        autoscaler = program.one("joiner:index:Autoscaler")
        assert program.ancestors(autoscaler) in ([], ["joiner:index:Cluster"])
        assert program.outputs["interruptionQueue"] == config.get("joiner:clusterName", stack_name)


def test_readme_new_cluster_admits_only_this_machine_and_encrypts_secrets(run):
    (program_path, stack_name, config), _ = readme_deployments()
    assert json.loads(config["joiner:publicAccessCidrs"]) == [f"{MY_ADDRESS}/32"]
    program = run(stack(program_path), config=config, stack=stack_name)
    eks = program.one("eks:index:Cluster")
    assert (eks.inputs["name"], eks.inputs["publicAccessCidrs"]) == (
        "joiner-dev",
        [f"{MY_ADDRESS}/32"],
    )
    assert program.one("aws:kms/key:Key").inputs["enableKeyRotation"] is True
    key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/joiner-secrets-id"
    assert eks.inputs["encryptionConfigKeyArn"] == key_arn
