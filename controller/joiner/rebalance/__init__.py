"""The rebalancer's planner (issue 23): from the cluster as it is to a cheaper set of
nodes, and the ordered moves (launch some nodes, then drain some) that get there.

Pure, as the scheduler is: no I/O and no clock. ``plan(cluster)`` takes the current
nodes with their pods, the pending pods, the NodePools and their offerings
(``model.Cluster``) and returns a ``model.RebalancePlan``. A packing MILP
(``packing``) proposes the target; the real scheduler (``joiner.scheduling.solve``)
judges it; the greedy repack is the fallback (``planner``). Not wired into the
controller yet.
"""

from joiner.rebalance.model import Cluster, Move, RebalancePlan
from joiner.rebalance.planner import plan

__all__ = ["Cluster", "Move", "RebalancePlan", "plan"]
