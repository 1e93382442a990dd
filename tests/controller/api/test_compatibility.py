"""The Python API for Joiner's warnings (``joiner.api.compatibility``): warnings apart from
errors, and the kubelet settings the AWS provider reads."""

from __future__ import annotations

from typing import Any

import pytest
from api_samples import EC2, NP, changed, load
from joiner.api.compatibility import FieldWarning, readable_kubelet, validation_warnings
from joiner.api.validation import validate_object


def test_warnings_come_apart_from_errors() -> None:
    pool = changed(load(NP), {"spec.limits.cpu": "-1", "spec.weight": 0})
    assert [str(e) for e in validate_object(pool)] == ["spec.weight: must be >= 1, got 0"]
    assert validation_warnings(pool) == [
        FieldWarning(
            "spec.limits",
            "negative limit cpu=-1; Joiner treats it as 0 (the pool launches nothing more of it)",
            "negative-limit",
        )
    ]


@pytest.mark.parametrize(
    "obj", [None, [], "x", {}, {"apiVersion": "apps/v1", "kind": "Deployment"}]
)
def test_no_warnings_about_what_is_not_a_joiner_object(obj: Any) -> None:
    assert validation_warnings(obj) == []


def test_unsupported_fields_warn_once_whatever_they_hold() -> None:
    nodeclass = changed(
        load(EC2),
        {"spec.networkInterfaces": [{"deviceIndex": 0, "networkCardIndex": 0,
                                     "interfaceType": "interface"}]},
    )  # fmt: skip
    assert [(w.path, w.message, w.code) for w in validation_warnings(nodeclass)] == [
        ("spec.networkInterfaces", "not supported by Joiner; ignored", "not-supported")
    ]


def test_readable_kubelet_keeps_what_joiner_can_use() -> None:
    raw = {
        "maxPods": 110,
        "podsPerCore": "10",
        "kubeReserved": {"cpu": "100m"},
        "systemReserved": {"gpu": "1"},
        "evictionSoft": {"memory.available": "1Gi"},
        "evictionSoftGracePeriod": {"memory.available": "1m"},
        "imageGCHighThresholdPercent": 50,
        "imageGCLowThresholdPercent": 80,
        "containerLogMaxSize": "10Mi",
    }
    assert readable_kubelet(raw) == {
        "maxPods": 110,
        "kubeReserved": {"cpu": "100m"},
        "evictionSoft": {"memory.available": "1Gi"},
        "evictionSoftGracePeriod": {"memory.available": "1m"},
        "imageGCLowThresholdPercent": 80,
    }
    assert readable_kubelet({"evictionSoft": {"memory.available": "1Gi"}}) == {}
    assert readable_kubelet(["maxPods"]) == {} and readable_kubelet(None) == {}
