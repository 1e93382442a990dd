"""Pure provisioning simulation: pending pods + pools + cluster snapshot -> plan [SPEC 3].

Entry point: ``solver.solve(pods, nodepools, instance_types, snapshot) -> Plan``.

- ``pods``: Kubernetes pod dicts to place (SCHED-1 filtering is the state layer's
  ``joiner.state.cluster.is_provisionable``).
- ``nodepools``: ``joiner.api.nodepool.NodePool`` (Ready ones); weight orders them.
- ``instance_types``: pool name -> ``InstanceType`` list from the cloud provider,
  already filtered for availability; pools without an entry launch nothing.
- ``snapshot``: ``model.ClusterSnapshot`` of existing and in-flight nodes
  (``ExistingNode``: labels, allocatable, taints, bound pods, initialized,
  marked_for_deletion, startup_taints, capacity, CSI volume limits), daemonsets (pod
  templates), PVC/PV/StorageClass dicts and RuntimeClass overheads.

The ``model.Plan`` holds ``existing`` (pod key -> node name), ``nodeclaims``
(``NodeClaimPlan``: pool, requirements in k8s form with the instance types cheapest
first, requests incl. daemonset overhead, taints, startup taints, labels, pods,
price) and ``unplaceable`` (pod key -> ``Unplaceable(constraint, message)``).
Pod keys are ``namespace/name``. With no pools the same call answers "which ready
node takes this pod" with every predicate (resources, taints, affinity, topology,
host ports, volumes), which is what an emulated kube-scheduler needs.
"""
