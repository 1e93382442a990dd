"""``joiner top``'s frame from a recorded cluster state, as text (no colour, natural width)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from joiner.top.live import READ_ONLY_RULES
from joiner.top.prices import embedded_price
from joiner.top.render import frame, to_text
from joiner.top.snapshot import ClusterObjects, node_lines

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
