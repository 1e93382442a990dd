"""Values the API server accepts (with upstream Karpenter's CRDs and Joiner's) that Joiner
cannot honour as written: the operator does what docs/compatibility.md says, and goes on
working [issue #18]."""

from __future__ import annotations

from ctl_harness import Harness, pending_pod
from joiner import testing
from joiner.api.validation import validate_object
from joiner.controllers.runtime import DONE


def _limit_gauge(h: Harness, resource: str) -> float | None:
    return h.operator.metrics.registry.get_sample_value(
        "karpenter_nodepools_limit", {"nodepool": "default", "resource_type": resource}
    )


def _install(h: Harness, **pool: object) -> None:
    nodepool = testing.nodepool(**pool)  # type: ignore[arg-type]
    assert validate_object(nodepool) == []  # the API server takes it
    h.install(testing.ec2nodeclass(), nodepool)


def test_a_negative_limit_is_zero_capacity() -> None:
    h = Harness()
    _install(h, limits={"cpu": "-1", "memory": "100Gi"})
    h.create_unschedulable(pending_pod("p0", "500m"))
    h.advance(30)
    assert h.nodeclaims() == []
    assert (_limit_gauge(h, "cpu"), _limit_gauge(h, "memory")) == (0.0, 100 * 2**30)


def test_a_limit_joiner_cannot_read_is_ignored() -> None:
    h = Harness()
    _install(h, limits={"cpu": "1e1001", "memory": "100Gi"})
    h.create_unschedulable(pending_pod("p0", "500m"))
    h.advance(2)
    [claim] = h.nodeclaims()
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    assert (_limit_gauge(h, "cpu"), _limit_gauge(h, "memory")) == (None, 100 * 2**30)


def test_an_expire_after_beyond_292_years_is_never() -> None:
    h = Harness()
    _install(h, expire_after="99999999999999999h", disruption={"consolidateAfter": "Never"})
    claim_name, _ = h.initialized_node()
    # as for Never: nothing to wait for (a number would have the claim looked at in 1e13 years)
    assert h.operator.expiration.reconcile(claim_name) == DONE
    h.advance(3600)
    assert [c["metadata"]["name"] for c in h.nodeclaims()] == [claim_name]
    assert h.events("DisruptionTerminating") == []
