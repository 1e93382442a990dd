"""``joiner top``'s frame from a recorded cluster state, as text (no colour, natural width)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml
from joiner.top.live import READ_ONLY_RULES, WatchTrouble
from joiner.top.prices import embedded_price
from joiner.top.render import frame, to_text
from joiner.top.snapshot import ClusterObjects, node_lines
from rich.console import Console

HERE = Path(__file__).parent
# The frame of recorded_cluster.yaml (wider than a source line, so in a file).
EXPECTED = (HERE / "recorded_frame.txt").read_text(encoding="utf-8")


def recorded() -> ClusterObjects:
    document = yaml.safe_load((HERE / "recorded_cluster.yaml").read_text(encoding="utf-8"))
    return ClusterObjects.from_items(document["items"])


def test_the_recorded_cluster_renders_as_expected() -> None:
    objects = recorded()

    text = to_text(frame(node_lines(objects, embedded_price), objects.pool_names(), "top"))

    assert text == EXPECTED


def test_prices_come_from_the_embedded_list_with_spot_at_the_default_fraction() -> None:
    labels = {
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/region": "eu-west-3",  # no list of its own: us-east-1's
    }
    assert embedded_price({**labels, "karpenter.sh/capacity-type": "on-demand"}) == 0.096
    assert embedded_price({**labels, "karpenter.sh/capacity-type": "spot"}) == 0.0384
    assert embedded_price({**labels, "topology.kubernetes.io/region": "moon"}) == 0.096
    assert embedded_price({"node.kubernetes.io/instance-type": "x9.nothing"}) is None
    assert embedded_price({}) is None


def test_the_documented_cluster_role_is_the_one_the_tests_enforce() -> None:
    operations = (HERE.parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    documents = re.findall(r"```yaml\n(.*?)```", operations, re.DOTALL)
    roles = [d for d in map(yaml.safe_load, documents) if isinstance(d, dict)]
    role = next(d for d in roles if d.get("metadata", {}).get("name") == "joiner-top")
    assert role["rules"] == READ_ONLY_RULES


def on_terminal(width: int, notice: str = "") -> list[str]:
    """The recorded cluster's frame as a terminal ``width`` columns wide shows it."""
    objects = recorded()
    view = frame(node_lines(objects, embedded_price), objects.pool_names(), "top", notice, width)
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=False).print(view)
    return [line.rstrip() for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("width", "header", "first_row"),
    [
        (125, "NAME POOL TYPE ZONE CAPACITY PRICE STATUS PODS CPU MEMORY",
         "ip-10-0-1-1 default c5.xlarge us-east-1b spot $0.0680/h Ready 2 "
         "█████░ 3.50/3.92 ███░░░ 3.00/7.00Gi"),
        (113, "NAME POOL TYPE CAPACITY PRICE STATUS PODS CPU MEMORY",
         "ip-10-0-1-1 default c5.xlarge spot $0.0680/h Ready 2 "
         "█████░ 3.50/3.92 ███░░░ 3.00/7.00Gi"),
        (102, "NAME POOL TYPE PRICE STATUS PODS CPU MEMORY",
         "ip-10-0-1-1 default c5.xlarge $0.0680/h Ready 2 █████░ 3.50/3.92 ███░░░ 3.00/7.00Gi"),
        (91, "NAME POOL PRICE STATUS PODS CPU MEMORY",
         "ip-10-0-1-1 default $0.0680/h Ready 2 █████░ 3.50/3.92 ███░░░ 3.00/7.00Gi"),
        (77, "NAME POOL PRICE STATUS PODS CPU MEMORY",
         "ip-10-0-1-1 default $0.0680/h Ready 2 3.50/3.92 3.00/7.00Gi"),
    ],
)  # fmt: skip
def test_a_narrower_terminal_loses_zone_capacity_type_then_bars_never_the_names(
    width: int, header: str, first_row: str
) -> None:
    shown = on_terminal(width)
    narrower = on_terminal(width - 1)  # the next column goes, or (77) the names shrink

    assert (" ".join(shown[1].split()), " ".join(shown[2].split())) == (header, first_row)
    assert max(map(len, shown)) <= width
    assert narrower[1:3] != shown[1:3]
    for name in ("ip-10-0-1-1", "ip-10-0-2-7", "system-1", "default-x7k2p"):
        assert any(line.startswith(name + " ") for line in shown)


def test_on_a_very_narrow_terminal_names_are_cut_to_ten_characters_not_dropped() -> None:
    shown = on_terminal(60)

    assert [line.split()[0] for line in shown[2:6]] == [
        "ip-10-0-1…", "ip-10-0-2…", "system-1", "default-x…"
    ]  # fmt: skip


def test_a_notice_comes_after_the_summary() -> None:
    notice = "watches failing, retrying; the cluster as last seen:\n  Pod: refused"

    assert on_terminal(125, notice)[:4] == [
        "top: 3 nodes, 1 launching, 1 deleting; 4 pods; $0.3900/h",
        "watches failing, retrying; the cluster as last seen:",
        "  Pod: refused",
        "NAME           POOL      TYPE       ZONE        CAPACITY   PRICE      STATUS     PODS  CPU"
        "               MEMORY",
    ]


def test_a_watch_listed_again_is_no_longer_named() -> None:
    trouble = WatchTrouble()
    trouble.failed("watch-Pod", ConnectionError("refused"))
    trouble.failed("watch-Node", TimeoutError())
    failing = trouble.notice()
    trouble.recovered("Pod")
    trouble.recovered("NodeClaim")  # was not failing: nothing changes

    assert failing == (
        "watches failing, retrying; the cluster as last seen:\n  Node: TimeoutError\n  Pod: refused"
    )
    assert (trouble.notice(), trouble.version) == (
        "watches failing, retrying; the cluster as last seen:\n  Node: TimeoutError",
        3,
    )
