"""``joiner explain``: why a pod is pending or placed, why a node is what it is and why it
is or is not being disrupted, where a NodePool stands against its limits and budgets.

One code path (``cluster.Cluster``) over a ``snapshot.Snapshot`` of plain objects, fed by
a simulation (``simulation``) or a live cluster (``live``). The answers come from the
controller's own solver and disruption pass, never from a second copy of their rules.
One module per question: ``pod``, ``node``, ``nodepool``.
"""
