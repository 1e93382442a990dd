"""``joiner validate``: output lines and exit codes, through main() and the console script."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from console_runs import console_script, run_joiner
from joiner.cli import main
from joiner.testing.hostile import anchor_bomb, nested_lists

MANIFESTS = Path(__file__).parents[1] / "api" / "manifests"
GOOD = MANIFESTS / "nodepool-default.yaml"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
"""
BAD_NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: broken}
spec:
  weight: 0
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/nodepool, operator: In, values: [x]}
"""


# Accepted by the API server (with upstream's CRDs too); Joiner warns twice.
WARNED_NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: warned}
spec:
  limits: {cpu: "-4"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      expireAfter: 99999999999999999h
"""
WARNINGS = [
    "NodePool/warned: warning: spec.limits: negative limit cpu=-4; Joiner treats it as 0 "
    "(the pool launches nothing more of it) [negative-limit]",
    "NodePool/warned: warning: spec.template.spec.expireAfter: '99999999999999999h': longer "
    "than Kubernetes can represent (about 292 years); treated as Never [duration-range]",
]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(argv)
    return code, capsys.readouterr().out.splitlines()


def test_valid_files_print_ok_per_object_and_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in MANIFESTS.glob("*.yaml"))
    code, lines = _run(["validate", *files], capsys)
    assert code == 0
    assert lines == [
        f"{MANIFESTS}/ec2nodeclass-custom.yaml: EC2NodeClass/gpu: OK",
        f"{MANIFESTS}/ec2nodeclass-default.yaml: EC2NodeClass/default: OK",
        f"{MANIFESTS}/nodeclaim.yaml: NodeClaim/default-x7k2p: OK",
        f"{MANIFESTS}/nodepool-default.yaml: NodePool/default: OK",
        f"{MANIFESTS}/nodepool-gpu.yaml: NodePool/gpu: OK",
    ]


def test_errors_name_file_object_and_field_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(DEPLOYMENT + "---\n" + BAD_NODEPOOL)
    code, lines = _run(["validate", str(path)], capsys)
    assert code == 2
    assert lines == [
        f"{path}: Deployment/web: skipped (not a Joiner kind)",
        f"{path}: NodePool/broken: spec.weight: must be >= 1, got 0",
        f"{path}: NodePool/broken: spec.template.spec.requirements[0].key: "
        'label "karpenter.sh/nodepool" is restricted',
    ]


REBALANCED_NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: rebalanced
  annotations:
    joiner.sh/rebalance: "true"
    joiner.sh/rebalance-pods-per-move: "0"
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""


def test_bad_rebalance_annotations_are_errors_naming_the_annotation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text(REBALANCED_NODEPOOL)
    code, lines = _run(["validate", str(path)], capsys)
    assert code == 2
    assert lines == [
        f"{path}: NodePool/rebalanced: metadata.annotations[joiner.sh/rebalance-pods-per-move]: "
        "must be a whole number of at least 1, got '0'"
    ]
    path.write_text(REBALANCED_NODEPOOL.replace('"0"', '"20"'))
    assert _run(["validate", str(path)], capsys) == (0, [f"{path}: NodePool/rebalanced: OK"])


BUFFERS = """\
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: spare, namespace: apps}
spec:
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  percentage: 20
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: broken, namespace: apps}
spec:
  podTemplateRef: {name: chunk}
  limits: {cpu: lots}
  replicas: -1
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: both, namespace: apps}
spec:
  podTemplateRef: {name: chunk}
  scalableRef: {kind: Deployment, name: web}
  replicas: 1
"""


def _refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> tuple[Path, list[str]]:
    """``joiner validate`` of a file with ``text``: exit status 2, and its lines."""
    path = tmp_path / "manifests.yaml"
    path.write_text(text)
    code, lines = _run(["validate", str(path)], capsys)
    assert code == 2
    return path, lines


def test_capacity_buffers_are_checked_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, lines = _refused(tmp_path, capsys, BUFFERS)
    assert lines == [
        f"{path}: CapacityBuffer/spare: OK",
        f"{path}: CapacityBuffer/broken: spec.limits.cpu: invalid value 'lots': "
        "expected a quantity like 500m, 2, 4Gi or 100G",
        f"{path}: CapacityBuffer/broken: spec.replicas: must be >= 0, got -1",
        f"{path}: CapacityBuffer/both: spec: You must define either PodTemplateRef or "
        "ScalableRef, but not both",
    ]


WINDOWED_BUFFERS = """\
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: business-hours
  annotations:
    joiner.sh/capacity-windows: |
      - {schedule: "0 8 * * 1-5", timeZone: Europe/Paris, duration: 10h, percentage: 20}
spec:
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  replicas: 0
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: bad-windows
  annotations:
    joiner.sh/capacity-windows: |
      - {schedule: "0 8 * *", timeZone: Europe/Pariss, duration: 10 hours, replicas: -2}
spec:
  podTemplateRef: {name: chunk}
  replicas: 1
"""


def test_a_buffers_time_windows_are_checked_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API server takes any annotation; Joiner's own are errors here all the same."""
    path, lines = _refused(tmp_path, capsys, WINDOWED_BUFFERS)
    where = (
        f"{path}: CapacityBuffer/bad-windows: metadata.annotations[joiner.sh/capacity-windows][0]"
    )
    assert lines == [
        f"{path}: CapacityBuffer/business-hours: OK",
        f"{where}.schedule: '0 8 * *' is not a cron schedule (5 fields like '0 8 * * 1-5', or "
        "a macro like @daily)",
        f"{where}.timeZone: unknown time zone 'Europe/Pariss' (an IANA name like Europe/Paris, "
        "or UTC)",
        f"{where}.duration: '10 hours' is not a duration in hours and minutes above zero like "
        "10h or 1h30m",
        f"{where}.replicas: expected a whole number >= 0, got -2",
    ]


SPARE_POOLS = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: spare
  annotations: {joiner.sh/spare-capacity: '{cpu: "4", memory: 16Gi}'}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: bad-spare
  annotations: {joiner.sh/spare-capacity: '{cpu: lots, memory: "0", gpu: 1}'}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""


def test_a_pools_spare_capacity_is_checked_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, lines = _refused(tmp_path, capsys, SPARE_POOLS)
    where = f"{path}: NodePool/bad-spare: metadata.annotations[joiner.sh/spare-capacity]"
    assert lines == [
        f"{path}: NodePool/spare: OK",
        f"{where}.cpu: invalid value 'lots': expected a quantity like 500m, 2, 4Gi or 100G",
        f"{where}.memory: must be more than 0",
        f"{where}.gpu: only cpu and memory (for another resource, a CapacityBuffer)",
    ]


def test_warnings_name_field_and_reason_and_keep_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text(WARNED_NODEPOOL)
    code, lines = _run(["validate", str(path)], capsys)
    assert (code, lines) == (0, [f"{path}: {line}" for line in WARNINGS])


def test_strict_counts_warnings_as_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warned, good = tmp_path / "warned.yaml", tmp_path / "good.yaml"
    warned.write_text(WARNED_NODEPOOL)
    good.write_text(GOOD.read_text())
    assert _run(["validate", "--strict", str(good)], capsys) == (
        0,
        [f"{good}: NodePool/default: OK"],
    )
    code, lines = _run(["validate", "--strict", str(good), str(warned)], capsys)
    assert code == 2
    assert lines == [f"{good}: NodePool/default: OK"] + [f"{warned}: {w}" for w in WARNINGS]


def test_errors_and_warnings_of_one_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a field with an error gets no warning; the others still do
    path = tmp_path / "pool.yaml"
    path.write_text(WARNED_NODEPOOL.replace("spec:\n  limits", "spec:\n  weight: 0\n  limits"))
    code, lines = _run(["validate", str(path)], capsys)
    assert code == 2
    assert lines == [f"{path}: NodePool/warned: spec.weight: must be >= 1, got 0"] + [
        f"{path}: {line}" for line in WARNINGS
    ]


def test_other_kinds_alone_are_skipped_and_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(DEPLOYMENT)
    assert _run(["validate", str(path)], capsys) == (
        0,
        [f"{path}: Deployment/web: skipped (not a Joiner kind)"],
    )


@pytest.mark.parametrize(
    "text, line",
    [
        (
            "kind: [NodePool\n",
            "document 1: not valid YAML: expected ',' or ']', but got '<stream end>'"
            " (line 2, column 1)",
        ),
        ("- a\n- b\n", "document 1: expected an object (a mapping), got list"),
        ("just text\n", "document 1: expected an object (a mapping), got string"),
        ("kind: NodePool\nmetadata: {name: a}\n", "NodePool/a: apiVersion: is required"),
        ("apiVersion: karpenter.sh/v1\nmetadata: {name: a}\n", "document 1: kind: is required"),
        (
            "apiVersion: karpenter.sh/v1\nkind: 5\nmetadata: {name: a}\n",
            "document 1: kind: must be a string, got integer 5",
        ),
        (
            "apiVersion: {group: karpenter.sh}\nkind: NodePool\nmetadata: {name: a}\n",
            "NodePool/a: apiVersion: must be a string, got object",
        ),
        (
            "apiVersion: karpenter.sh/v1beta2\nkind: NodePool\nmetadata: {name: a}\n",
            "NodePool/a: apiVersion: NodePool is served as karpenter.sh/v1, "
            "got 'karpenter.sh/v1beta2'",
        ),
        (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Machine\nmetadata: {name: a}\n",
            "Machine/a: kind: unknown kind 'Machine'; expected one of NodePool "
            "(karpenter.sh/v1), NodeClaim (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1), "
            "NodeOverlay (karpenter.sh/v1alpha1), CapacityBuffer (autoscaling.x-k8s.io/v1beta1)",
        ),
        # the old kinds are converted (joiner convert); what cannot be is one line
        (
            "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: a}\n",
            "NodePool/a: spec.template.spec.nodeClassRef.name: required",
        ),
        (
            "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\n"
            "spec: {weight: many}\n",
            "Provisioner/a: converted to NodePool/a, which v1 refuses: spec.weight: must be "
            "an integer, got string 'many'",
        ),
    ],
)  # fmt: skip
def test_garbage_gets_one_line_not_a_traceback(
    text: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    assert _run(["validate", str(path)], capsys) == (2, [f"{path}: {line}"])


def test_later_documents_are_checked_before_a_yaml_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(GOOD.read_text() + "---\nfoo: [\n")
    code, lines = _run(["validate", str(path)], capsys)
    assert code == 2
    assert lines[0] == f"{path}: NodePool/default: OK"
    assert lines[1].startswith(f"{path}: document 2: not valid YAML: ")


def test_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    missing = tmp_path / "missing.yaml"
    code, lines = _run(["validate", str(missing), str(tmp_path), str(binary)], capsys)
    assert code == 2
    assert lines == [
        f"{missing}: cannot read: No such file or directory",
        f"{tmp_path}: cannot read: Is a directory",
        f"{binary}: cannot read: not UTF-8 text",
    ]


def test_stdin_and_list_documents(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `kubectl get nodepools -o yaml` prints a List
    items = [yaml.safe_load(GOOD.read_text()), yaml.safe_load(BAD_NODEPOOL)]
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(listing.encode())))
    code, lines = _run(["validate", "-"], capsys)
    assert code == 2
    assert lines[:2] == [
        "<stdin>: NodePool/default: OK",
        "<stdin>: NodePool/broken: spec.weight: must be >= 1, got 0",
    ]


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n---\n")
    assert _run(["validate", str(path)], capsys) == (0, [f"{path}: no objects"])


def test_console_script_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_NODEPOOL)
    warned = tmp_path / "warned.yaml"
    warned.write_text(WARNED_NODEPOOL)
    for strict, code in ((False, 0), (True, 2)):
        argv = [console_script(), "validate", *(["--strict"] if strict else []), str(warned)]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert (run.returncode, run.stderr) == (code, "")
        assert run.stdout.splitlines() == [f"{warned}: {line}" for line in WARNINGS]
    ok = subprocess.run(
        [console_script(), "validate", str(GOOD)], capture_output=True, text=True, timeout=60
    )
    assert (ok.returncode, ok.stdout, ok.stderr) == (
        0,
        f"{GOOD}: NodePool/default: OK\n",
        "",
    )
    failed = subprocess.run(
        [console_script(), "validate", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert failed.returncode == 2
    assert failed.stderr == ""
    assert (
        failed.stdout.splitlines()[0] == f"{bad}: NodePool/broken: spec.weight: must be >= 1, got 0"
    )


# --- hostile input: one line, exit 2, bounded memory and time (see console_runs) ----------

HOSTILE_HEAD = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: hostile}\nspec:\n"


@pytest.mark.parametrize(
    ("body", "line"),
    [
        (
            "  weight: " + "9" * 5000 + "\n",
            "an integer of 5000 digits, more than the 64 allowed (line 5, column 11)",
        ),
        (
            f"  template: {nested_lists(5000)}\n",
            "nested more than 100 levels deep (line 5, column 111)",
        ),
        (
            f"  template:\n    metadata:\n      annotations: {{bomb: {anchor_bomb()}}}\n",
            "more than 500,000 values, counting each alias as a copy of its anchor "
            "(line 7, column 328)",
        ),
        (
            "  weight: 5\n  limits: {cpu: 10}\n  weight: 0\n",
            "duplicate key 'weight', first at line 5 (line 7, column 3)",
        ),
    ],
    ids=["long-integer", "deep-nesting", "anchor-bomb", "duplicate-key"],
)
def test_hostile_yaml_gets_one_line_naming_where(body: str, line: str, tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE_HEAD + body)
    result = run_joiner("validate", str(path))
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        f"{path}: document 1: {line}\n",
        "",
    )


@pytest.mark.parametrize(
    ("args", "stdin", "label"),
    [(("/dev/zero",), None, "/dev/zero"), (("-",), Path("/dev/zero"), "<stdin>")],
    ids=["file", "stdin"],
)
def test_endless_input_is_refused_at_the_size_cap(
    args: tuple[str, ...], stdin: Path | None, label: str
) -> None:
    result = run_joiner("validate", *args, stdin=stdin)
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        f"{label}: cannot read: larger than 4 MiB, the limit on input size\n",
        "",
    )
