"""Everything worth a question at one instant of a simulation (``joiner simulate FILE
--explain-at STEP``): the answer for each pod the controller would provision for, then
for each NodePool; each is what ``joiner explain`` answers for that object alone."""

from __future__ import annotations

from dataclasses import dataclass, field

from joiner.explain.cluster import Cluster
from joiner.explain.nodepool import NodePoolAnswer, explain_nodepool
from joiner.explain.pod import PodAnswer, explain_pod


@dataclass
class Overview:
    pods: list[PodAnswer] = field(default_factory=list)
    nodepools: list[NodePoolAnswer] = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.pods:
            out = ["no pod is waiting for capacity", ""]
        else:
            out = [line for answer in self.pods for line in [*answer.lines(), ""]]
        return out + [line for answer in self.nodepools for line in [*answer.lines(), ""]][:-1]


def explain_all(cluster: Cluster) -> Overview:
    """The pods the controller's state counts as provisionable (its own rule), by
    namespace and name, then every NodePool by name."""
    pending = sorted(
        f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
        for pod in cluster.state.provisionable_pods()
    )
    return Overview(
        pods=[explain_pod(cluster, key) for key in pending],
        nodepools=[explain_nodepool(cluster, name) for name in sorted(cluster.state.nodepools)],
    )
