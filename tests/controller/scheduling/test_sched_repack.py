"""Cost repacking of NodeClaims that hold only unconstrained pods."""

from __future__ import annotations

import numpy as np
import pytest
from joiner.api import labels as wk
from joiner.cloudprovider.fake import new_instance_type
from joiner.cloudprovider.types import Offering
from joiner.scheduling.repack import fractional_cover
from sched_builders import layout, nodepool, pod, run


def _types():
    def typed(name: str, cpu: str, memory: str, price: float):
        return new_instance_type(
            name, cpu=cpu, memory=memory, pods=10, offerings=[Offering("z1", "on-demand", price)]
        )

    return [
        typed("cpu-box", "4", "4Gi", 0.2),
        typed("mem-box", "2", "16Gi", 0.2),
        typed("big", "8", "32Gi", 0.8),
    ]


def _pods(**spec):
    return [
        pod("c1", cpu="2", memory="1Gi", **spec),
        pod("c2", cpu="2", memory="1Gi", **spec),
        pod("m1", cpu="500m", memory="4Gi"),
        pod("m2", cpu="500m", memory="4Gi"),
    ]


def test_fractional_cover_mixes_two_types_when_cheaper():
    price = np.array([0.2, 0.2, 0.8])
    cpu = np.array([4.0, 2.0, 8.0])
    memory = np.array([4.0, 16.0, 32.0])
    cost, mix = fractional_cover(price, cpu, memory, 5.0, 10.0)
    assert cost == pytest.approx(0.2 * (15 / 14) + 0.2 * (5 / 14))
    assert mix == pytest.approx({0: 15 / 14, 1: 5 / 14})
    cost, mix = fractional_cover(price, cpu, memory, 4.0, 1.0)
    assert (cost, mix) == (pytest.approx(0.2), {0: pytest.approx(1.0)})


def test_cpu_ordered_packing_is_replaced_by_a_cheaper_balanced_one():
    plan = run(_pods(), types=_types())
    assert layout(plan) == [("cpu-box", ["c1", "c2"]), ("mem-box", ["m1", "m2"])]
    assert plan.price == pytest.approx(0.4)
    assert [nc.hostname for nc in plan.nodeclaims] == ["default-nodeclaim-2", "default-nodeclaim-3"]


def test_constrained_pods_keep_the_karpenter_packing():
    plan = run(_pods(nodeSelector={wk.ZONE: "z1"}), types=_types())
    assert layout(plan) == [("big", ["c1", "c2", "m1", "m2"])]
    assert plan.price == pytest.approx(0.8)


def test_pools_with_limits_are_not_repacked():
    plan = run(_pods(), pools=[nodepool(limits={"cpu": "100"})], types=_types())
    assert layout(plan) == [("big", ["c1", "c2", "m1", "m2"])]
