"""Issue #18 end to end: extreme quantities in pods and NodePool limits, and instance
types as large as the simulator accepts, never crash a provisioning or disruption pass
of the real controllers (in the simulator), and never keep an ordinary pod from running."""

from __future__ import annotations

from disruption_world import deployment, instance_type, od, simulate
from hypothesis import given, settings
from hypothesis import strategies as st
from joiner import testing
from joiner.api import resources as res
from joiner.controllers.disruption import methods
from joiner.sim.scenario import MAX_INSTANCE_CPU, MAX_INSTANCE_MEMORY

EXTREMES = ("10Pi", "8Ei", "1e30", "9223372036854775807", "1e18")
QUANTITIES = st.sampled_from((*EXTREMES, "100m", "2", "1Gi"))
# the simulator refuses instance types larger than these (a field error)
GIANT_CPUS = st.sampled_from(("100m", "2", MAX_INSTANCE_CPU))
GIANT_MEMORIES = st.sampled_from(("1Gi", MAX_INSTANCE_MEMORY))


@settings(max_examples=12, deadline=None)
@given(
    huge_cpu=QUANTITIES,
    huge_memory=st.sampled_from(EXTREMES),
    limit=st.sampled_from((None, *EXTREMES, "10000000Gi")),
    giant_cpu=GIANT_CPUS,
    giant_memory=GIANT_MEMORIES,
)
def test_extreme_quantities_never_crash_provisioning_or_disruption(
    huge_cpu: str, huge_memory: str, limit: str | None, giant_cpu: str, giant_memory: str
) -> None:
    pool = testing.nodepool(
        "default",
        requirements=[testing.capacity_types("on-demand")],
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"},
        limits={"cpu": limit, "memory": limit} if limit else None,
    )
    result = simulate(
        [
            instance_type("small", "2", "4Gi", od(0.05)),
            # a type as large as the simulator allows: huge pods within it run there, and
            # a node holding them is a consolidation candidate
            instance_type("giant", giant_cpu, giant_memory, od(50.0)),
        ],
        [
            pool,
            deployment("steady", 2, "500m"),
            deployment("huge", 1, huge_cpu, huge_memory),
        ],
        [{"settle": "3m"}, {"scale": _scale("steady", 1)}, {"advance": "10m"}],
    )
    assert result.failures == []
    steady = [p for n in result.final.nodes for p in n.pods if p.startswith("default/steady")]
    assert len(steady) == 1
    for pending in result.final.pending_pods:
        assert pending.name.startswith("default/huge")
        assert pending.reason


def _scale(name: str, replicas: int) -> dict[str, object]:
    return {"kind": "Deployment", "name": name, "namespace": "default", "replicas": replicas}


def test_the_load_a_replacement_must_hold_is_exact_past_int64():
    huge = res.milli("10Pi")
    rooms = [{"memory": res.milli("1Ti"), "cpu": 4000}, {"memory": res.milli("8Ei"), "cpu": 4000}]
    requests = [{"memory": huge, "cpu": 100}, {"memory": huge, "cpu": 100}, {"memory": 5, "cpu": 1}]
    # the huge pods fit only the 8Ei room, all three fit there together: nothing beyond it
    pods = methods.PodShapes.of(requests)
    both = methods.Rooms.of({"small": rooms[0], "vast": rooms[1]})
    assert methods.least_replacement_load(pods, both) == {}
    assert methods.least_replacement_load(pods, both, "vast") == {"memory": 2 * huge, "cpu": 200}
