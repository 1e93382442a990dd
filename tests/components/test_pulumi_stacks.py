"""The stack programs, run to completion under mocks as `pulumi up` would run them."""

import runpy
from pathlib import Path

import pulumi
import pytest
import yaml
from pulumi.runtime.settings import get_root_resource
from pulumi_harness import ACCOUNT, OIDC_ISSUER, OIDC_PROVIDER_ARN, REFERENCED_STACK_OUTPUTS

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
    import json

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


def test_new_cluster_runs_with_only_region_and_name(run):
    program = run(
        stack(NEW_CLUSTER), config={"aws:region": "us-west-2", "joiner:clusterName": "demo"}
    )
    assert program.one("eks:index:Cluster").inputs["name"] == "demo"
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


def test_new_cluster_defaults_the_name_to_the_stack(run):
    program = run(stack(NEW_CLUSTER), config={"aws:region": "us-west-2"}, stack="staging")
    assert program.outputs["clusterName"] == "staging"


def test_new_cluster_with_the_example_stack_config(run):
    program = run(stack(NEW_CLUSTER), config=stack_config(ROOT / "Pulumi.dev.yaml"))
    pools = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in program.of_type("kubernetes:karpenter.sh/v1:NodePool")
    }
    assert sorted(pools) == ["arm", "default"]
    assert pools["default"]["limits"] == {"cpu": "200"}
    assert pools["arm"]["template"]["spec"]["requirements"][0]["values"] == ["arm64"]
    assert program.one("eks:index:Cluster").inputs["name"] == "joiner-dev"


def test_new_cluster_rejects_a_bad_node_pool_override(run):
    config = {
        "aws:region": "us-west-2",
        "joiner:clusterName": "demo",
        "joiner:nodePools": '{"default": {"nodePool": {"weight": 1000}}}',
    }
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


def readme_deployments() -> list[tuple[Path, str, dict[str, str]]]:
    """(program, stack, config) for each shell block of the README's Pulumi section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Deploy with Pulumi", 1)[1].split("\n## ", 1)[0]
    deployments = []
    for block in section.split("```sh\n")[1:]:
        lines = [line.split("#", 1)[0].split() for line in block.split("```", 1)[0].splitlines()]
        program, stack_name, config = NEW_CLUSTER, None, {}
        for words in lines:
            if words[:2] == ["cd", "stacks/existing_cluster"]:
                program = EXISTING_CLUSTER
            elif words[:3] == ["pulumi", "stack", "init"]:
                stack_name = words[3]
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
