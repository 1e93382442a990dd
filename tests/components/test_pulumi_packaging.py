"""What other Pulumi languages and the image build see: the component provider's schema
(inferred from the annotations and docstrings) and the controller Dockerfile."""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pulumi.provider.experimental.analyzer import Analyzer, PropertyDefinition, camel_case
from pulumi_joiner import COMPONENTS
from pulumi_joiner.autoscaler import CONTROLLER_PASSTHROUGH
from pulumi_joiner.cluster import AUTOSCALER_PASSTHROUGH

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def schema():
    return Analyzer("joiner").analyze(COMPONENTS)


def test_every_component_is_served_with_documented_inputs_and_outputs(schema):
    definitions = schema["component_definitions"]
    assert sorted(definitions) == sorted(c.__name__ for c in COMPONENTS)
    for name, definition in definitions.items():
        assert definition.description, name
        for kind, properties in (("input", definition.inputs), ("output", definition.outputs)):
            assert properties, (name, kind)
            undocumented = [p for p, d in properties.items() if not d.description]
            assert not undocumented, (name, kind, undocumented)


def test_required_inputs(schema):
    definitions = schema["component_definitions"]
    required = {
        name: sorted(p for p, d in c.inputs.items() if not d.optional)
        for name, c in definitions.items()
    }
    assert required == {
        "Cluster": ["clusterName"],
        "Autoscaler": ["clusterName"],
        "ControllerRole": ["clusterName", "nodeRoleArn"],
        "NodeRole": ["clusterName"],
        "InterruptionQueue": ["clusterName"],
        "Controller": ["clusterName"],
        "NodePool": ["clusterName", "nodeRoleName"],
    }


def test_forwarded_arguments_are_declared_as_the_receiving_component_declares_them(schema):
    # The analyzer reads each argument's description from the docstring in its own
    # TypedDict (an inherited field would lose it), so forwarded arguments are declared
    # again in every component that forwards them; this keeps the copies identical.
    inputs = {name: c.inputs for name, c in schema["component_definitions"].items()}
    for argument in CONTROLLER_PASSTHROUGH:
        key = camel_case(argument)
        assert inputs["Autoscaler"][key] == inputs["Controller"][key], argument
        assert inputs["Cluster"][key] == inputs["Controller"][key], argument
    for argument in set(AUTOSCALER_PASSTHROUGH) - set(CONTROLLER_PASSTHROUGH):
        key = camel_case(argument)
        assert _undescribed(inputs["Cluster"][key]) == _undescribed(inputs["Autoscaler"][key])


def _undescribed(prop: PropertyDefinition | None) -> PropertyDefinition | None:
    """``prop`` without its descriptions, nested ones included."""
    if prop is None:
        return None
    return replace(
        prop,
        description=None,
        items=_undescribed(prop.items),
        additional_properties=_undescribed(prop.additional_properties),
    )


def test_provider_entry_point_serves_the_components():
    main = (ROOT / "__main__.py").read_text()
    assert 'component_provider_host(components=COMPONENTS, name="joiner"' in main


def dockerfile_stages() -> list[list[str]]:
    lines = [line.strip() for line in (ROOT / "controller" / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    stages: list[list[str]] = []
    for instruction in instructions:
        if instruction.startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def test_dockerfile_is_multi_stage_non_root_and_shell_free():
    build, runtime = dockerfile_stages()
    assert runtime[0] == "FROM ${RUNTIME_IMAGE}"
    text = (ROOT / "controller" / "Dockerfile").read_text()
    assert "ARG RUNTIME_IMAGE=gcr.io/distroless/python3-debian12:nonroot" in text
    # Nothing runs in the final stage, so it needs no shell; it runs as uid 65532.
    assert not [i for i in runtime if i.startswith("RUN ")]
    assert "USER 65532:65532" in runtime
    assert runtime[-1] == 'ENTRYPOINT ["/usr/bin/python3", "-m", "joiner.cli", "controller"]'
    # Only the controller package and its runtime dependencies: no components, no extras.
    copies = [i for i in build if i.startswith("COPY ")]
    assert copies == [
        "COPY pyproject.toml README.md ./",
        "COPY controller/joiner ./controller/joiner",
    ]
    assert any(i.startswith("RUN pip install --target /app/site-packages .") for i in build)


def test_the_distribution_carries_the_price_tables(tmp_path):
    """What ``pip install .`` (and so the image's build stage) puts in site-packages: the
    AWS provider's built-in price tables are package data, not just files in the tree."""
    subprocess.run(
        [
            *(sys.executable, "-c", "import setuptools; setuptools.setup()", "-q"),
            *("egg_info", "--egg-base", str(tmp_path), "build_py", "--build-lib", str(tmp_path)),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    shipped = ROOT / "controller" / "joiner" / "cloudprovider" / "aws" / "prices"
    built = tmp_path / "joiner" / "cloudprovider" / "aws" / "prices"
    tables = sorted(p.name for p in shipped.glob("*.json"))
    assert tables and sorted(p.name for p in built.glob("*.json")) == tables


def test_docs_document_every_argument_and_output(schema):
    docs = (ROOT / "docs" / "pulumi.md").read_text()
    sections = {section.split("\n", 1)[0].strip(): section for section in docs.split("\n### ")[1:]}
    for name, definition in schema["component_definitions"].items():
        section = sections[name]
        for schema_name, python_name in definition.inputs_mapping.items():
            assert f"| `{python_name}` (`{schema_name}`) |" in section, (name, python_name)
        for schema_name, python_name in definition.outputs_mapping.items():
            assert f"| `{python_name}` (`{schema_name}`) |" in section, (name, python_name)
