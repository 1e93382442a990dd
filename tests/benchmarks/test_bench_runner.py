"""The benchmark runner: discovery, selection, quick mode, headers, summary, exit code."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.delenv("JOINER_BENCH_QUICK", raising=False)
    import benchmarks.__main__ as runner_module

    return runner_module


def run_cli(
    *args: str, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "JOINER_BENCH_QUICK"}
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**environment, **(env or {})},
    )


def test_quick_run_of_bench_requirements() -> None:
    done = run_cli("bench_requirements", "--quick")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "=== bench_requirements ==="
    assert lines[1].startswith("requirements algebra: pool of 7 keys, pods of 4 keys, 640 ")
    assert lines[1].endswith("(quick mode)")
    figures = [re.fullmatch(r"  (\w+) +([\d,]+) (.+)", line) for line in lines[2:7]]
    assert [m.group(1) for m in figures if m] == [
        "compatible",
        "intersection",
        "for_pod",
        "filter",
        "filter_why",
    ]
    assert all(int(m.group(2).replace(",", "")) > 0 for m in figures if m)
    assert lines[7] == "=== summary ==="
    assert re.fullmatch(r"bench_requirements +\d+\.\d s  ok", lines[8])
    assert lines[9:] == ["1 passed, 0 failed"]


def test_quick_run_of_bench_realplane(control_plane_assets: Path) -> None:
    """The controller on a real control plane, small: the envtest tier's binaries (so it
    is skipped, or fails where the tier is required, as the other envtest tests)."""
    done = run_cli(
        "realplane", "--quick", env={"KUBEBUILDER_ASSETS": str(control_plane_assets)}, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "=== bench_realplane ==="
    assert lines[1] == "burst of 100 pods (types <= 4 vCPU), 1 run(s):"
    assert re.fullmatch(r"  NodeClaims created: \d+", lines[2])
    assert re.fullmatch(r"  last pod marked -> last NodeClaim created: \d+\.\d\d s", lines[4])
    held = lines.index("held: 500 pods on 50 nodes, 1 run(s):")
    assert re.fullmatch(r"  controller RSS \d+ MB \(target < 250 MB\)", lines[held + 3])
    assert "  500 pods relabelled:" in lines and "  500 pods deleted:" in lines
    assert not [line for line in lines if line.startswith("FAIL")]
    assert re.fullmatch(r"bench_realplane +\d+\.\d s  ok", lines[-2])


def test_short_names_and_the_environment_select_quick_mode() -> None:
    done = run_cli("requirements", env={"JOINER_BENCH_QUICK": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(quick mode)" in done.stdout
    assert done.stdout.splitlines()[0] == "=== bench_requirements ==="


def test_unknown_benchmark_is_a_usage_error() -> None:
    done = run_cli("no_such_thing")
    assert done.returncode == 2
    assert "unknown benchmark(s) bench_no_such_thing; available: " in done.stderr
    assert "bench_requirements" in done.stderr


def test_list(runner, capsys: pytest.CaptureFixture[str]) -> None:
    assert runner.main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert "bench_requirements" in listed
    assert listed == sorted(listed)


def write_package(root: Path, name: str, modules: dict[str, str]) -> Path:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, body in modules.items():
        (package / f"{module}.py").write_text(textwrap.dedent(body))
    (package / "helper.py").write_text("raise AssertionError('not a benchmark')\n")
    return package


def test_failures_are_reported_and_the_others_still_run(
    runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    package = write_package(
        tmp_path,
        "fakebenches",
        {
            "bench_b_fails": "def main():\n    print('b ran')\n    return 3\n",
            "bench_a_passes": "def main():\n    print('a ran')\n    return 0\n",
            "bench_c_crashes": "def main():\n    raise RuntimeError('boom')\n",
            "bench_d_no_main": "VALUE = 1\n",
            "bench_e_not_int": "def main():\n    return 'fine'\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    names = runner.discover(package)
    assert names == [
        "bench_a_passes",
        "bench_b_fails",
        "bench_c_crashes",
        "bench_d_no_main",
        "bench_e_not_int",
    ]
    assert runner.run("fakebenches", names) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:7] == [
        "=== bench_a_passes ===",
        "a ran",
        "=== bench_b_fails ===",
        "b ran",
        "=== bench_c_crashes ===",
        "error: RuntimeError: boom",
        "=== bench_d_no_main ===",
    ]
    summary = out[out.index("=== summary ===") + 1 :]
    outcomes = [re.sub(r" +\d+\.\d s  ", " | ", line) for line in summary]
    assert outcomes == [
        "bench_a_passes | ok",
        "bench_b_fails | FAILED (exit 3)",
        "bench_c_crashes | error: RuntimeError: boom",
        "bench_d_no_main | error: module has no main()",
        "bench_e_not_int | error: main() returned 'fine', not an int",
        "1 passed, 4 failed",
    ]


def test_all_passing_exits_zero(
    runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_package(tmp_path, "goodbenches", {"bench_one": "def main():\n    return 0\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert runner.run("goodbenches", ["bench_one"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"


def test_select(runner) -> None:
    available = ["bench_a", "bench_b"]
    assert runner.select(available, []) == available
    assert runner.select(available, ["b", "bench_a"]) == ["bench_b", "bench_a"]
    with pytest.raises(ValueError, match="unknown benchmark\\(s\\) bench_c; available: bench_a"):
        runner.select(available, ["c"])


def test_quick_mode_flag(runner, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import quick_mode

    assert quick_mode() is False
    monkeypatch.setenv("JOINER_BENCH_QUICK", "0")
    assert quick_mode() is False
    monkeypatch.setenv("JOINER_BENCH_QUICK", "1")
    assert quick_mode() is True
