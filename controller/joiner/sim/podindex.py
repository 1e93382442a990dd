"""The pods of the simulated cluster as the world's watch last delivered them.

The emulated kube-scheduler and workload controllers run after every pod event; listing
(and so copying) every pod from the API each time made the simulation quadratic in the
number of pods. This index holds the latest object of each pod, fed by the same watch
that wakes them, and answers in the order a list would (namespace, then name).
Readers must not change the objects they get: copy a pod before editing it.
"""

from __future__ import annotations

from typing import Any

Pod = dict[str, Any]
Key = tuple[str, str]  # (namespace, name), the order of a list


class PodIndex:
    def __init__(self) -> None:
        self._pods: dict[Key, Pod] = {}
        self._by_owner: dict[str, set[Key]] = {}  # owner uid -> pods it owns
        self._sorted: list[Pod] | None = None

    def apply(self, event_type: str, pod: Pod) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        previous = self._pods.pop(key, None)
        if previous is not None:
            for uid in _owner_uids(previous):
                self._by_owner.get(uid, set()).discard(key)
        if event_type != "DELETED":
            self._pods[key] = pod
            for uid in _owner_uids(pod):
                self._by_owner.setdefault(uid, set()).add(key)
        self._sorted = None

    def all(self) -> list[Pod]:
        """Every pod, in list order."""
        if self._sorted is None:
            self._sorted = [self._pods[k] for k in sorted(self._pods)]
        return list(self._sorted)

    def owned_by(self, uid: str) -> list[Pod]:
        """The pods with an owner reference to ``uid``, in list order."""
        return [self._pods[k] for k in sorted(self._by_owner.get(uid, ()))]


def _owner_uids(pod: Pod) -> list[str]:
    return [ref["uid"] for ref in pod["metadata"].get("ownerReferences") or () if ref.get("uid")]
