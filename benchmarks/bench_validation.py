"""Speed of ``validate_object`` [SPEC 1]: the in-memory API server may validate every
write, so a NodeClaim status update must stay cheap. Measures validations per second
of a NodePool (5 requirements, 2 budgets), an EC2NodeClass (kubelet and volumes) and a
NodeClaim with status, after checking that each is valid and that a broken copy is not.
"""

from __future__ import annotations

import copy
import sys
import time
from typing import Any

from joiner.api.validation import validate_object

from benchmarks import quick_mode

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}


def _requirement(key: str, *values: str, operator: str = "In") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "platform"}},
            "spec": {
                "nodeClassRef": REF,
                "requirements": [
                    _requirement("kubernetes.io/arch", "amd64", "arm64"),
                    _requirement("kubernetes.io/os", "linux"),
                    _requirement("karpenter.sh/capacity-type", "spot", "on-demand"),
                    _requirement("karpenter.k8s.aws/instance-category", "c", "m", "r"),
                    _requirement("karpenter.k8s.aws/instance-generation", "2", operator="Gt"),
                ],
            },
        },
        "limits": {"cpu": "1000", "memory": "1000Gi"},
        "disruption": {
            "consolidateAfter": "0s",
            "budgets": [
                {"nodes": "10%"},
                {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
            ],
        },
    },
}
EC2NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": "KarpenterNodeRole",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
        "kubelet": {
            "maxPods": 110,
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        "blockDeviceMappings": [
            {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}
        ],
    },
}
NODECLAIM: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "default-x7k2p", "labels": {"karpenter.sh/nodepool": "default"}},
    "spec": {
        "nodeClassRef": REF,
        "requirements": [
            _requirement("karpenter.sh/nodepool", "default"),
            _requirement("node.kubernetes.io/instance-type", *(f"m{g}.large" for g in range(5, 8))),
        ],
        "resources": {"requests": {"cpu": "2500m", "memory": "2560Mi", "pods": "5"}},
    },
    "status": {
        "nodeName": "ip-10-0-1-23.ec2.internal",
        "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
        "capacity": {"cpu": "2", "memory": "7934Mi", "pods": "29"},
        "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
        "conditions": [
            {"type": t, "status": "True", "reason": t, "lastTransitionTime": "2026-11-22T01:00:00Z"}
            for t in ("Launched", "Registered", "Initialized", "Ready")
        ],
    },
}
# Validations per second on the 2-core reference machine, about a third of what it
# measures, so a busy machine still passes.
TARGETS = {"NodePool": 800.0, "EC2NodeClass": 1300.0, "NodeClaim": 1500.0}


def correct() -> bool:
    ok = True
    for obj in (NODEPOOL, EC2NODECLASS, NODECLAIM):
        broken = copy.deepcopy(obj)
        broken["spec"]["unknownField"] = 1
        if validate_object(obj) or not validate_object(broken):
            print(f"FAIL {obj['kind']}: valid object rejected or broken one accepted")
            ok = False
    return ok


def rate(obj: dict[str, Any], seconds: float) -> float:
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            validate_object(obj)
        count += 50
    return count / elapsed


def main() -> int:
    if not correct():
        return 1
    quick = quick_mode()
    failed = False
    for obj in (NODEPOOL, EC2NODECLASS, NODECLAIM):
        per_second = rate(obj, 0.05 if quick else 1.0)
        target = TARGETS[obj["kind"]]
        verdict = "" if quick else ("ok" if per_second >= target else "BELOW TARGET")
        print(
            f"validate {obj['kind']:<13} {per_second:>9,.0f}/s  (target {target:,.0f}/s) {verdict}"
        )
        failed |= not quick and per_second < target
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
