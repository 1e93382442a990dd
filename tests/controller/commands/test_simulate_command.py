"""``joiner simulate``: bad input is one line on standard error and exit 2, in bounded
time and memory; a settle step that does not settle is exit 2 too, and says so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from console_runs import run_joiner
from joiner import testing
from joiner.cli import main
from joiner.testing.hostile import anchor_bomb, nested_lists

BOMB = "BOMB-GOES-HERE"


def scenario(steps: list[dict[str, Any]] | None = None, namespace: str | None = "default") -> str:
    """A small fake-cloud scenario: a Deployment of one pod scaled to ``steps``."""
    app = testing.deployment("app", replicas=1, cpu="500m", memory="512Mi")
    app["spec"]["template"]["metadata"]["annotations"] = {"note": "plain"}
    if namespace is None:
        del app["metadata"]["namespace"]
    document = testing.scenario(
        "cli",
        cluster="demo",
        instance_types=[testing.scenario_instance_type("small", "2", "4Gi", {"zone-a/spot": 0.03})],
        objects=[testing.ec2nodeclass(cluster="demo"), testing.nodepool(), app],
        steps=steps or [{"settle": "5m"}, {"expect": {"pendingPods": 0}}],
    )
    return yaml.safe_dump(document, sort_keys=False)


def scaled(replicas: int, *then: dict[str, Any]) -> list[dict[str, Any]]:
    """Steps: scale the Deployment to ``replicas``, then ``then``."""
    return [{"scale": {"kind": "Deployment", "name": "app", "replicas": replicas}}, *then]


def test_a_scenario_file_runs(tmp_path: Path) -> None:
    """The base of the hostile cases below is itself fine."""
    path = tmp_path / "fine.yaml"
    path.write_text(scenario())
    assert run_joiner("simulate", str(path)).returncode == 0


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "replicas: 1",
            "replicas: " + "1" * 5000,
            "an integer of 5000 digits, more than the 64 allowed (line {line}, column 17)",
        ),
        (
            "note: plain",
            f"note: {nested_lists(5000)}",
            "nested more than 100 levels deep (line {line}, column 111)",
        ),
        (
            # the pod template's hash used to expand it: a hang, then MemoryError
            "note: plain",
            f"note: {anchor_bomb()}",
            "more than 500,000 values, counting each alias as a copy of its anchor "
            "(line {line}, column 320)",
        ),
        (
            "  cloud:\n",
            "  cloud: {provider: aws}\n  cloud:\n",
            "duplicate key 'cloud', first at line {line} (line {next_line}, column 3)",
        ),
    ],
    ids=["long-integer", "deep-nesting", "anchor-bomb", "duplicate-key"],
)
def test_hostile_yaml_is_one_line_naming_where(
    old: str, new: str, message: str, tmp_path: Path
) -> None:
    text = scenario()
    assert text.count(old) == 1
    line = text[: text.index(old)].count("\n") + 1
    path = tmp_path / "hostile.yaml"
    path.write_text(text.replace(old, new))
    result = run_joiner("simulate", str(path))
    where = message.format(line=line, next_line=line + 1)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        f"joiner simulate: {path}: {where}\n",
    )


def test_endless_input_is_refused_at_the_size_cap() -> None:
    result = run_joiner("simulate", "/dev/zero")
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "joiner simulate: /dev/zero: cannot read the scenario: larger than 4 MiB, the limit "
        "on input size\n",
    )


def test_a_kind_that_is_not_a_string_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kind.yaml"
    path.write_text(scenario().replace("kind: Deployment", "kind: 5"))
    assert main(["simulate", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"joiner simulate: {path}: spec.objects[2]: kind: expected a string, got 5\n"
    )


def test_a_deployment_without_namespace_lands_in_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "no-namespace.yaml"
    path.write_text(scenario(steps=scaled(2, {"settle": "5m"}), namespace=None))
    assert main(["simulate", str(path), "--output", "json"]) == 0
    final = json.loads(capsys.readouterr().out)["final"]
    assert sorted(pod.split("-")[0] for node in final["nodes"] for pod in node["pods"]) == [
        "default/app",
        "default/app",
    ]


def test_a_settle_that_reaches_its_bound_fails_and_says_what_was_in_flight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Launching a node takes 40s (launch and ready delays): 10s cannot settle.
    path = tmp_path / "unsettled.yaml"
    path.write_text(
        scenario(steps=scaled(3, {"name": "too short", "settle": "10s"}, {"settle": "5m"}))
    )
    assert main(["simulate", str(path), "--output", "json"]) == 2
    out, err = capsys.readouterr()
    steps = json.loads(out)["steps"]
    assert [step.get("settled") for step in steps] == [None, False, True]
    assert err == (
        f"joiner simulate: {path}: spec.steps[1] (too short): settle: did not settle within "
        "10s: pending pods: 3, NodeClaims not yet initialized: 1\n"
    )

    assert main(["simulate", str(path)]) == 2
    table = capsys.readouterr().out.splitlines()
    assert table[-3:] == [
        "Settle: 1 step did not settle:",
        "  spec.steps[1] (too short): settle: did not settle within 10s: pending pods: 3, "
        "NodeClaims not yet initialized: 1",
        "",
    ]


def _billion_replicas(document: dict[str, Any]) -> None:
    document["spec"]["objects"][2]["spec"]["replicas"] = 1_000_000_000


def _expire_after_a_second(document: dict[str, Any]) -> None:
    document["spec"]["objects"][1]["spec"]["template"]["spec"]["expireAfter"] = "1s"


@pytest.mark.parametrize(
    ("steps", "edit", "message"),
    [
        (
            scaled(1_000_000_000),
            None,
            "spec.steps[0].scale.replicas: must be at most 50,000 (the simulator's limit on "
            "pods), got 1,000,000,000",
        ),
        (
            None,
            _billion_replicas,
            "spec.objects[2] (Deployment/app): spec.replicas: must be at most 50,000 (the "
            "simulator's limit on pods), got 1,000,000,000",
        ),
        (
            None,
            _expire_after_a_second,
            "spec.objects[1] (NodePool/default): spec.template.spec.expireAfter: 1s is not "
            "longer than a node takes to start here (spec.cloud.launchDelay + readyDelay = "
            "40s): every node would expire before it runs a pod, and be replaced for ever",
        ),
    ],
    ids=["scale-step", "deployment", "expire-after"],
)
def test_inputs_that_would_never_end_are_refused_before_running(
    tmp_path: Path,
    steps: list[dict[str, Any]] | None,
    edit: Callable[[dict[str, Any]], None] | None,
    message: str,
) -> None:
    """The issue's adversarial inputs: a billion replicas (memory without bound before)
    and nodes expiring before they start (churn without end before) are one line on
    standard error and exit 2, within the child's memory cap."""
    document = yaml.safe_load(scenario(steps=steps))
    if edit is not None:
        edit(document)
    path = tmp_path / "adversarial.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    done = run_joiner("simulate", str(path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"joiner simulate: {path}: {message}\n"


def test_a_run_that_reaches_a_bound_is_exit_3_naming_the_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = yaml.safe_load(scenario(steps=scaled(3, {"name": "wait", "settle": "5m"})))
    document["spec"]["limits"] = {"steps": 40}
    path = tmp_path / "bounded.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["simulate", str(path), "--output", "json"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"joiner simulate: {path}: spec.steps[1] (wait): did not converge: the step budget "
        "(spec.limits.steps: 40) ran out at t=20s of virtual time, after 41 steps and "
    )  # then the wall time it took
    assert err.endswith("s (pending pods: 3, NodeClaims not yet initialized: 1)\n")


def test_help_states_the_exit_codes_and_the_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "exit status: 0 done, every expect held and every settle settled; 1 an expect "
        "failed; 2 invalid scenario (the message names the field) or a settle that did not "
        "settle; 3 the run reached a bound and did not converge (spec.limits.wallTime, "
        "default 10m; spec.limits.steps, default 10,000,000; 10,000 NodeClaims at once; an "
        "instant that never ends). Workloads may ask for at most 50,000 pods."
    ) in text


def test_the_table_without_rich_says_which_extra_to_install_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from joiner.commands import simulate

    monkeypatch.setattr(simulate, "rich_installed", lambda: False)
    path = tmp_path / "fine.yaml"
    path.write_text(scenario())

    assert main(["simulate", str(path)]) == 2
    assert capsys.readouterr() == (
        "",
        "joiner simulate: --output table needs rich: pip install 'joiner[sim]' "
        "(or use --output json)\n",
    )
    assert main(["simulate", str(path), "--output", "json"]) == 0  # JSON needs no rich
