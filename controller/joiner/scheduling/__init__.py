"""Pure provisioning simulation: pending pods + pools + cluster snapshot -> plan [SPEC 3]."""
