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
        self._by_node: dict[str, set[Key]] = {}  # node name -> bound pods still running
        self._on_node: dict[str, list[Pod]] = {}  # on_node's answers until the node's pods change
        self._owned: dict[str, list[Pod]] = {}  # owned_by's answers until the owner's pods change
        self._pending: set[Key] = set()

    def apply(self, event_type: str, pod: Pod) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        previous = self._pods.pop(key, None)
        if previous is not None:
            for uid in _owner_uids(previous):
                self._by_owner.get(uid, set()).discard(key)
                self._owned.pop(uid, None)
            node = _occupied_node(previous)
            if node:
                self._by_node.get(node, set()).discard(key)
                self._on_node.pop(node, None)
        self._pending.discard(key)
        if event_type != "DELETED":
            self._pods[key] = pod
            for uid in _owner_uids(pod):
                self._by_owner.setdefault(uid, set()).add(key)
                self._owned.pop(uid, None)
            node = _occupied_node(pod)
            if node:
                self._by_node.setdefault(node, set()).add(key)
                self._on_node.pop(node, None)
            if is_pending(pod):
                self._pending.add(key)

    def owned_by(self, uid: str) -> list[Pod]:
        """The pods with an owner reference to ``uid``, in list order. The same list until
        they change: do not change it either."""
        return self._listed(self._owned, self._by_owner, uid)

    def pending(self) -> list[Pod]:
        """The pods ``is_pending`` holds for, in list order."""
        return [self._pods[k] for k in sorted(self._pending)]

    def pending_count(self) -> int:
        return len(self._pending)

    def count(self) -> int:
        """Every pod known, whatever its phase."""
        return len(self._pods)

    def nodes_with_pods(self) -> set[str]:
        """The names of the nodes some unfinished pod is bound to."""
        return {node for node, keys in self._by_node.items() if keys}

    def on_node(self, node_name: str) -> list[Pod]:
        """The pods bound to the node and not finished (Succeeded or Failed), in list order.
        The same list until they change: do not change it either."""
        return self._listed(self._on_node, self._by_node, node_name)

    def _listed(
        self, answers: dict[str, list[Pod]], index: dict[str, set[Key]], name: str
    ) -> list[Pod]:
        """The pods ``index`` files under ``name``, in list order, kept in ``answers``
        until apply() drops them."""
        pods = answers.get(name)
        if pods is None:
            pods = answers[name] = [self._pods[k] for k in sorted(index.get(name, ()))]
        return pods


def is_pending(pod: Pod) -> bool:
    """Not bound, not being deleted, and in phase Pending: what kube-scheduler would try."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return (
        not spec.get("nodeName")
        and not meta.get("deletionTimestamp")
        and status.get("phase", "Pending") == "Pending"
    )


def _occupied_node(pod: Pod) -> str | None:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return None
    return (pod.get("spec") or {}).get("nodeName")


def _owner_uids(pod: Pod) -> list[str]:
    return [ref["uid"] for ref in pod["metadata"].get("ownerReferences") or () if ref.get("uid")]
